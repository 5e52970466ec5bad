"""Kafka's own: where Kafka's behaviour relaxes a property, one row each.

A property states what a correct log layer guarantees; Kafka itself does not always give it, and the
suite judges Kafka's behaviour as the reference.  Each row names the condition (often a loader
branch of :mod:`model.log_manager`) under which Kafka does something else, the property it relaxes,
the spec section or JIRA key that says why, and the corpus case that fails without the row
(``tests/test_kafkas_own.py`` switches each row off and checks that case fails with that property).

The properties read the table through :func:`applies`; :func:`switched_off` disables rows, which is
how the table's tests prove every row is needed.
"""

from __future__ import annotations

import contextlib

import attrs

from conformance.properties import CLEAN_RESTART, CONFORMS, DURABLE, IDEMPOTENT_RECOVERY, INDEX_AGREES, PREFIX


@attrs.frozen
class Allowance:
    name: str
    relaxes: str  # the property
    trigger: str  # when Kafka does otherwise: a condition or a loader branch
    spec: str  # kafka-log-spec.md section, JIRA key or KIP that says why
    # the corpus case that fails without this row alone; None where no case does (corpora/README.md,
    # "Kafka's own": the case that first needed it, and what covers it now)
    pinned_by: str | None
    # what Kafka 4.4.0 does on the pinned case with the row off: SHOWN (the property fails on the
    # kafka target itself, tests/test_kafkas_own.py), else why it is not shown there
    on_kafka: str = "no pinned case"
    shown_with: tuple[str, ...] = ()  # rows also switched off to show it (they exempt Kafka too)
    # the model and impl never do otherwise: the row is needed on the kafka target alone, where
    # tests/test_kafkas_own.py shows it (on_kafka SHOWN)
    kafka_only: bool = False


SHOWN = "shown"
# on_kafka of a row only a case under the isolate failure policy (impl's departure) needs
ISOLATE_ONLY = (
    "not applicable: the isolate failure policy only; under Kafka's the startup fails, and the "
    "case's kafka-policy original passes on Kafka with this row off"
)

TABLE = (
    Allowance(
        "epochs-ahead-of-log-start", IDEMPOTENT_RECOVERY,
        "the leader-epoch checkpoint begins above the checkpointed log start offset: delete_records and "
        "retention write the epoch cache's truncateFromStart at once, the log start offset only at the next "
        "checkpoint, so after a crash in between two loads rebuild different caches (epochs not compared)",
        "§5.7; LogLoader: the earliest leader epoch may not be flushed during a hard failure",
        None,
    ),
    Allowance(
        "epochs-past-end-removed", IDEMPOTENT_RECOVERY,
        "the load took model.log_manager.EPOCHS_PAST_END: truncateFromEnd removed entries a recovery had not "
        "assigned, and the next recovery assigns them from the batches (epochs not compared)",
        "§5.7",
        "corpora/found/idempotent-recovery-0607043e93",
        SHOWN,
    ),
    Allowance(
        "epoch-moved-to-the-log-end", IDEMPOTENT_RECOVERY,
        "the uninterrupted load left an epoch entry starting at the log end: truncateFromEnd (entries at or "
        "past the log end) runs before truncateFromStart, which moves the entry below the checkpointed log "
        "start offset up to it; a load the crash interrupted wrote that entry to the checkpoint, and the next "
        "load's truncateFromEnd removes it (epochs not compared)",
        "§5.7; LogLoader.load: truncateFromEndAsyncFlush, then truncateFromStartAsyncFlush",
        "corpora/crash/epoch-moved-to-the-log-end-by-an-interrupted-load.json",
        SHOWN,
    ),
    Allowance(
        "all-deleted-clears-epochs", IDEMPOTENT_RECOVERY,
        "the load took model.log_manager.ALL_DELETED: it removes every segment, then clears the epoch cache, "
        "then creates a segment at the log start; a crash between the first two leaves the checkpoint, which "
        "the next load truncates from the start (epochs not compared)",
        "§5.6 step 2; UnifiedLog.recoverLog's clearAndFlush",
        None,
    ),
    Allowance(
        "clean-load-keeps-epochs", IDEMPOTENT_RECOVERY,
        "the uninterrupted load was clean (model.log_manager.CLEAN_LOAD); the crash, after the marker was "
        "deleted, turns the next load into a recovery, which assigns epochs from the recovered batches where "
        "the clean load took the checkpoint as it was (epochs not compared)",
        "§6.2; KAFKA-10471",
        "corpora/crash/clean-load-crashed-recovery-rebuilds-the-epoch-cache.json",
        SHOWN,
    ),
    Allowance(
        "legacy-append-cleared-epochs", IDEMPOTENT_RECOVERY,
        "the log holds a legacy (magic 0/1) batch: its append cleared the epoch cache, and a recovery assigns an "
        "epoch only above the cache's latest, so a crash after a load recovered and checkpointed a later "
        "segment's epochs leaves the earlier segments' out of the next load's cache (epochs not compared)",
        "UnifiedLog.append's clearAndFlush; LogSegment.recover's epoch assignment (§4.6)",
        "corpora/crash/epochs-of-a-legacy-append-rebuilt-forward-only.json",
        SHOWN,
    ),
    Allowance(
        "producer-below-the-log-start-forgotten", IDEMPOTENT_RECOVERY,
        "a producer whose last batch lies below the log start offset lives in snapshots only: the load's "
        "rebuild deletes every snapshot at or below the log start and keeps it in the one at the log end, "
        "which the next load, still before a log-start checkpoint, deletes (recoverSegment's rebuild up to the "
        "unflushed segment's base removes every snapshot above it) and finds nothing older to read it from "
        "(those producers not compared; the rest of the producer state is)",
        "§5.3 recoverSegment, §5.8 step 3b; KIP-360 (producers kept past retention)",
        "corpora/crash/producer-below-the-log-start-forgotten-by-the-next-load.json",
        SHOWN,
    ),
    Allowance(
        "recovery-cut-deletes-later-segments", IDEMPOTENT_RECOVERY,
        "the load took model.log_manager.LATER_DELETED: a recovery that cuts a segment short deletes the later "
        "unflushed segments, and neither is made durable; a crash that keeps the cut and loses the renames "
        "leaves segments the next load keeps (the partition not compared; durable and prefix still apply)",
        "§5.6 step 1b",
        None,
    ),
    Allowance(
        "split-beside-its-original", IDEMPOTENT_RECOVERY,
        "the load took model.log_manager.SPLIT_BELOW_BASE: the original's rename to .deleted is not durable "
        "before the new segments' renames, and a crash that loses only it leaves the original beside them "
        "(the partition not compared)",
        "§5.9 steps 3–5; KAFKA-6264",
        "corpora/found/idempotent-recovery-6b9fcf50d5",
        "unsupported: the case sets segment.jitter.ms",
    ),
    Allowance(
        "abandoned-cleaning-completed-after-a-crash", IDEMPOTENT_RECOVERY,
        "the load took model.log_manager.INVALID_SWAP_REMOVED: it abandons a cleaning round whose .cleaned "
        "files remain by deleting its .swap files, then the .cleaned ones, with no directory fsync between; "
        "a crash that keeps a .cleaned deletion and loses a .swap's leaves a swap the next load completes — "
        "the round's cleaned segment, whole, in place of the original (the partition not compared; durable "
        "and prefix still apply)",
        "§5.2 steps 1–4; LogLoader.removeTempFilesAndCollectSwapFiles",
        "corpora/crash/abandoned-cleaning-completed-after-a-crash.json",
        SHOWN,
    ),
    Allowance(
        "recovery-truncates-what-a-clean-load-trusts", IDEMPOTENT_RECOVERY,
        "the uninterrupted load was clean and a corrupt step damaged the partition: the recovery the crash "
        "turns the next load into truncates corruption a clean load never reads (the partition not compared)",
        "§6.2; KIP-263",
        "corpora/crash/idempotent-recovery-after-a-corrupt-checkpoint.json",
        SHOWN,
    ),
    Allowance(
        "recovery-splits-what-a-clean-load-keeps", IDEMPOTENT_RECOVERY,
        "the uninterrupted load was clean on a legacy partition: overflow is found only in recovered "
        "segments, so the recovery the crash turns the next load into may split what a clean load keeps "
        "(the partition not compared)",
        "§7.9; KAFKA-6264",
        "corpora/crash/clean-load-crashed-recovery-rebuilds-the-epoch-cache.json",
        SHOWN,
    ),
    Allowance(
        "unreadable-checkpoint-is-empty", IDEMPOTENT_RECOVERY,
        "an I/O error the load got past (a checkpoint it could not read is an empty map, so every segment is "
        "recovered from 0): that load is another load, not a partial one to compare with the uninterrupted load",
        "§6.2 steps 3–4",
        None,
    ),
    Allowance(
        "deletion-after-a-recovery-cut-interrupted", PREFIX,
        "a fault inside a load whose recovery cut a segment (model.log_manager.LATER_DELETED) stops the "
        "deletion of the later segments, which goes lowest first and is neither atomic nor redone: the next "
        "load finds nothing left to cut and keeps the later segments not yet deleted, after a hole",
        "§5.6 step 1b; LogLoader.recoverLog's removeAndDeleteSegments",
        "corpora/found/prefix-cff9be2e4a",
        SHOWN,
    ),
    Allowance(
        "log-end-below-log-start", DURABLE,
        "the load took model.log_manager.ALL_DELETED: truncateFullyAndStartAt writes the recovery-point "
        "checkpoint but not the log-start one, so batches flushed after it, below the old log start, are "
        "deleted by the load after a crash (the partition's batches not required)",
        "§5.6 step 2",
        None,
    ),
    Allowance(
        "cleaned-entry-below-kept-offset", INDEX_AGREES,
        "an index entry names an offset below its batch's last offset (a cleaned segment's, the largest offset "
        "its cleaner kept, FilterResult.maxOffset; a legacy wrapper's in a split segment, its first offset); a "
        "truncation into that batch keeps the entry, which then names an offset the log no longer holds, at a "
        "batch start below the cut or at the cut (the log end, the whole log when the batch was the first)",
        "§4.7; §5.5; §5.9",
        # crash/truncation-inside-a-split-legacy-wrapper-keeps-its-entry.json first needed it; impl's entries
        # there are now judged as its proof on first use will give them (the index is unused), so the
        # finding case below, whose lookup uses the kept entry, is what shows the row is needed
        "corpora/kafka-findings/lookup-by-a-max-timestamp-a-truncation-kept",
        "not shown first: the case is reported as its finding on Kafka 4.4.0 (a -3 lookup that answers "
        "nothing), which the kept entry is the cause of",
    ),
    Allowance(
        "truncation-forgets-max-timestamp", INDEX_AGREES,
        "when a truncation empties the time index before the max timestamp was loaded, the batches left below "
        "the cut are forgotten, so the first time entry may lie below one of them",
        "§4.7 steps 2 and 7",
        None,
    ),
    Allowance(
        "overflowed-legacy-entry", INDEX_AGREES,
        "an index entry whose relative offset a legacy broker wrote past 2^31 reads back negative, below the "
        "segment's base; Kafka keeps it for good, also through a truncation (entries below the base ignored)",
        "§3.1; KAFKA-5413",
        "corpora/crash/overflowed-legacy-time-entry-survives-a-truncation.json",
        SHOWN,
    ),
    Allowance(
        "index-trusted-after-a-fault", INDEX_AGREES,
        "after a fault the model's and Kafka's index files are Kafka's, which may hold padding or junk Kafka "
        "trusts (not judged on the model and Kafka targets; impl's lookups still are)",
        "KIP-263",
        "corpora/crash/time-entry-past-a-log-a-crash-emptied.json",
        "not shown: the kafka target lists only materialised lazy indexes, and Kafka had not opened this one",
    ),
    Allowance(
        "corrupted-index-kept", INDEX_AGREES,
        "a partition a corrupt step damaged: Kafka keeps an unrecovered index as found, stale slots included "
        "(its entries not judged, its index files not compared; the answers through it are)",
        "KIP-263",
        "corpora/crash/clean-load-counts-a-batch-whose-crc-fails.json",
        SHOWN,
        ("index-trusted-after-a-fault",),
    ),
    Allowance(
        "unsynced-roll-entry", CLEAN_RESTART,
        "after a fault an inactive segment's last time entry, written at the roll and never msynced (the "
        "post-roll flush starts at the recovery point), may be an all-zero slot Kafka's sanity check accepts",
        "§3.2; §4.3",
        "corpora/crash/isolated-failed-load-keeps-its-split.json",
        ISOLATE_ONLY,
    ),
    Allowance(
        "zero-filled-index", CONFORMS,
        "after a fault an index file of two or more all-zero slots is padding (the zero-filled .index of a "
        "crashed swap), which Kafka keeps as full: compared as empty",
        "§5.9 caveat 3",
        None,
    ),
    Allowance(
        "failed-partition-half-recovered", CONFORMS,
        "a partition that failed to load under the isolate failure policy: its files are half-recovered (the "
        "loader writes as it goes) and stay so while the broker runs without it (its files not compared); under "
        "Kafka's policy the startup fails and they are compared",
        "§6.6",
        "corpora/crash/isolated-failed-load-keeps-its-split.json",
        ISOLATE_ONLY,
    ),
    Allowance(
        "unclean-dir-recovers", CLEAN_RESTART,
        "a data dir whose last shutdown wrote no clean-shutdown marker (e.g. one with an unloadable "
        "partition) is recovered at the next open like after a crash",
        "§6.3",
        "corpora/crash/isolated-failed-load-keeps-its-split.json",
        ISOLATE_ONLY,
    ),
    Allowance(
        "corrupted-index-costs-reads", CLEAN_RESTART,
        "a corrupted index's last entry points anywhere: the load's bytes read after a graceful shutdown are "
        "not judged once a corrupt step damaged the disk",
        "§7.3; KAFKA-7283",
        "corpora/crash/clean-load-reads-more-behind-a-corrupted-index.json",
        "not applicable: the load's byte counts are impl's",
    ),
    Allowance(
        "first-unstable-offset-placed-at-load", CLEAN_RESTART,
        "a log with an open transaction: the load places its first unstable offset by reading the segment "
        "that holds it (UnifiedLog.maybeIncrementFirstUnstableOffset, convertToOffsetMetadataOrThrow), which "
        "builds that segment's offset index even when it is inactive and the shutdown was clean; a first offset "
        "below the log start is placed at the log start, in the log start's segment",
        "§7.3; KAFKA-7283 (what waits for first use), KIP-98 (the first unstable offset)",
        "corpora/log/open-transaction-in-an-inactive-segment-at-a-clean-restart.json",
        SHOWN,
        kafka_only=True,
    ),
)  # fmt: skip

ALLOWANCES = {a.name: a for a in TABLE}
_OFF: set[str] = set()


def applies(name: str) -> bool:
    """Whether the row ``name`` is in force (all are, except inside :func:`switched_off`)."""
    if name not in ALLOWANCES:
        raise KeyError(f"no Kafka's-own row {name!r}")
    return name not in _OFF


def exempt(name: str, partitions) -> set[str]:
    """``partitions`` if the row ``name`` is in force, else none."""
    return set(partitions) if applies(name) else set()


@contextlib.contextmanager
def switched_off(*names: str):
    """Judge as if Kafka gave the properties these rows relax (a row's test: its case then fails)."""
    for name in names:
        applies(name)
    added = set(names) - _OFF
    _OFF.update(added)
    try:
        yield
    finally:
        _OFF.difference_update(added)
