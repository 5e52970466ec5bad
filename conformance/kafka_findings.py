"""Kafka bugs the suite found and pinned, each a folder ``corpora/kafka-findings/<name>/`` with a
README (the rule it breaks, the release, the steps) and a scenario.

The model follows current Kafka, so where Kafka breaks a property the model breaks it alike, and
every target agrees.  Where the model departs from Kafka on purpose (lookups answered by the
content, DESIGN.md "The model"), the model target predicts Kafka's answer, and the finding matches
only when every Kafka target gives exactly that.  A scenario that reaches a known finding is reported as that finding and not
judged further (:attr:`conformance.runner.Verdict.known`): one pinned case shows the bug, and the
state machines and campaigns go on searching for what is not known yet.  A finding matches only
the exact shape of its violation, so anything else a scenario does stays judged.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from conformance import scenario as sc
from conformance.properties import CONFORMS, DURABLE, INDEX_AGREES, ISOLATED, PREFIX, READ_COMMITTED
from conformance.properties.storage_protocol import BROKEN_PROMISE
from model.indexes import ABORTED_TXN_SIZE, TimeIndex
from model.producer_state import REBUILDING

FOLDER = "kafka-findings"


@attrs.frozen
class Finding:
    name: str  # its folder under corpora/kafka-findings/
    release: str  # the Kafka release it was shown on
    prop: str  # the property it breaks: the first violation it shows
    summary: str
    # the step, every target's result and the model target (None without one) that reach it
    step_shape: Callable[[sc.Step, dict, object], bool]
    # shown only on an image cut from Kafka's own journal (Kafka's write order, which impl's and a
    # mutant's differ from): on any other image the same shape is a violation
    on_kafkas_image_only: bool = False
    # the shape of the violation itself, where the step and results cannot tell it (None: any)
    violation_shape: Callable[[object], bool] | None = None


def _append_refused_by_every_target(step: sc.Step, results: dict, kind: str) -> bool:
    """Every target refused ``step`` — an append, or a race holding one — with ``kind``."""

    def refused(s: sc.Step, r: dict) -> bool:
        if isinstance(s, sc.Race):
            return any(refused(t, x) for t, x in zip(s.steps, r.get("race", ()), strict=False))
        return isinstance(s, sc.Append) and r.get("error") == kind

    return bool(results) and all(refused(step, r) for r in results.values())


FULL_INDEX_MID_APPEND = Finding(
    name="full-index-mid-append",
    release="4.4.0",
    prop=INDEX_AGREES,
    summary="an append of several batches runs out of index slots after writing its bytes: refused, "
    "its batches stay in the .log past the log end offset and its index entries name them",
    step_shape=lambda step, results, model: _append_refused_by_every_target(step, results, "IllegalArgumentException"),
)


def _as_predicted(results: dict, model, kafkas: dict | None) -> bool:
    """Every Kafka target answered ``kafkas``, the model's prediction of Kafka's answer where the
    model departs from it on purpose, and every other target answered as the model did."""
    if kafkas is None:
        return False
    answers = [r for name, r in results.items() if name.startswith("kafka")]
    ours = [r for name, r in results.items() if not name.startswith("kafka")]
    return bool(answers) and all(r == kafkas for r in answers) and all(r == results[model.name] for r in ours)


def _kafka_answered_by_a_lost_max(step: sc.Step, results: dict, model) -> bool:
    """Every Kafka target answered the lookup ``step`` as the model predicts Kafka does when a
    segment's max timestamp is lost; the model itself answers by the content (DESIGN.md)."""
    return model is not None and _as_predicted(results, model, model.kafkas_lookup_by_a_lost_max(step))


LOOKUP_BY_A_LOST_MAX = Finding(
    name="lookup-by-a-lost-max-timestamp",
    release="4.4.0",
    prop=CONFORMS,
    summary="a truncation after a restart empties a segment's time index before its max timestamp was "
    "loaded; the segment keeps −1 as its max though it holds timestamped records, and a lookup by "
    "timestamp stops at it (its mtime stands in) and answers nothing",
    step_shape=_kafka_answered_by_a_lost_max,
)


def _kafka_answered_by_a_kept_max(step: sc.Step, results: dict, model) -> bool:
    """Every Kafka target answered the lookup ``step`` as the model predicts Kafka does when a
    truncation kept a segment's max timestamp from an entry past the cut."""
    return model is not None and _as_predicted(results, model, model.kafkas_lookup_by_a_kept_max(step))


LOOKUP_BY_A_KEPT_MAX = Finding(
    name="lookup-by-a-max-timestamp-a-truncation-kept",
    release="4.4.0",
    prop=CONFORMS,
    summary="a legacy time-index entry whose relative offset overflowed reads back below the segment's base, so "
    "a truncation keeps it and recomputes the segment's max timestamp from it; the max names records the "
    "truncation removed, and a lookup of the newest timestamp (-3) finds nothing",
    step_shape=_kafka_answered_by_a_kept_max,
)


def _load_failed_rebuilding_producer_state(step: sc.Step, results: dict, model) -> bool:
    """An open where every target's load of a partition failed, and the model's failed in the
    producer-state rebuild a segment's recovery runs first."""
    if not isinstance(step, sc.Open) or model is None:
        return False
    rebuilding = {
        x["partition"] for x in results.get(model.name, {}).get("loaded", ()) if REBUILDING in (x["error"] or "")
    }
    return bool(rebuilding) and all(
        rebuilding <= {x["partition"] for x in r.get("loaded", ()) if x["error"]} for r in results.values()
    )


REBUILD_READS_A_TORN_SEGMENT = Finding(
    name="rebuild-reads-a-torn-segment",
    release="4.4.0",
    prop=DURABLE,
    summary="after a power loss, a segment recovered at load (its index missing) first has the producer state "
    "rebuilt from the unflushed segments below it, before their recovery cuts a torn tail: the rebuild's read "
    "throws CorruptRecordException and the broker does not start",
    step_shape=_load_failed_rebuilding_producer_state,
)


def _create_refused_for_a_time_index_below_one_entry(step: sc.Step, results: dict, model) -> bool:
    """A create every target refused with IllegalArgumentException under a ``segment.index.bytes``
    below one time-index entry (12 bytes), which LogConfig accepts (at least 4).  The model refuses
    the create and leaves nothing; Kafka leaves the partition half made."""
    return (
        isinstance(step, sc.Create)
        and model is not None
        and model.config.segment_index_bytes < TimeIndex.ENTRY_SIZE
        and bool(results)
        and all(r.get("error") == "IllegalArgumentException" for r in results.values())
    )


SEGMENT_INDEX_BYTES_BELOW_A_TIME_ENTRY = Finding(
    name="segment-index-bytes-below-a-time-index-entry",
    release="4.4.0",
    prop=CONFORMS,
    summary="segment.index.bytes 4-11 passes LogConfig's check, but no time index fits: creating a partition "
    "fails after its directory and segment files are made; a retried create or the next start loads them, "
    "and every append then writes its batch before failing on the time index, the batch read back after a restart",
    step_shape=_create_refused_for_a_time_index_below_one_entry,
)


def _kafka_retained_by_a_damaged_entry(step: sc.Step, results: dict, model) -> bool:
    """Every Kafka target's retention deleted as many segments as the model predicts Kafka does
    when it trusts a damaged final time-index entry; the model goes by the content (DESIGN.md)."""
    return model is not None and _as_predicted(results, model, model.kafkas_retention_by_a_damaged_entry(step))


RETENTION_BY_A_DAMAGED_ENTRY = Finding(
    name="retention-by-a-damaged-final-time-entry",
    release="4.4.0",
    prop=CONFORMS,
    summary="KAFKA-10207 / KAFKA-19200, still in 4.4.0: a final time-index entry that escaped recovery "
    "zeroed or padded is trusted as the segment's max timestamp, and time retention deletes the segment "
    "early (or keeps it late)",
    step_shape=_kafka_retained_by_a_damaged_entry,
)


def _loaded_neighbours(step: sc.Step, model, pair) -> bool:
    """An open after which a partition of the model's holds neighbouring segments ``a``, ``b`` for
    which ``pair(a, b)`` holds (every target loaded the same log: ``conforms`` was judged first)."""
    return isinstance(step, sc.Open) and _neighbours(model, pair)


def _neighbours(model, pair) -> bool:
    """Whether a partition of the running model holds neighbouring segments ``a``, ``b`` for which
    ``pair(a, b)`` holds."""
    if model is None or not model.running:
        return False
    return any(
        pair(a, b)
        for p in model.manager.partitions.values()
        for a, b in zip(p.log.segments, p.log.segments[1:], strict=False)
    )


def _overlapping_segments_loaded(step: sc.Step, results: dict, model) -> bool:
    """A non-empty segment whose offsets all lie within the segment before it: the copy a swap
    made of them kept it (the loader trusts the directory listing, §5.3)."""
    return _loaded_neighbours(step, model, lambda a, b: b.size and b.next_offset() <= a.next_offset())


SWAP_COMPLETED_OVER_A_LOST_DELETION = Finding(
    name="swap-completed-over-a-deletion-a-crash-lost",
    release="4.4.0",
    prop=PREFIX,
    summary="a start that completes an interrupted cleaning swap deletes the segments in the swap range and renames "
    "the .swap with no directory fsync: a power loss keeping the rename and losing a deletion leaves two segments "
    "over the same offsets, and the log's offsets go back at the next start",
    step_shape=_overlapping_segments_loaded,
)


def _segment_past_the_next_held(step: sc.Step, results: dict, model) -> bool:
    """A segment whose last batch reaches the next segment's base offset, at the load or at any
    step after it: a lazily opened index shows its entries past the end only at its first use."""
    return _neighbours(model, lambda a, b: a.next_offset() > b.base_offset)


TRUNCATE_FULLY_INTERRUPTED = Finding(
    name="truncate-fully-interrupted-keeps-the-old-active-segment",
    release="4.4.0",
    prop=INDEX_AGREES,
    summary="a process crash inside truncateFullyAndStartAt, after the new segment was opened and before the old "
    "active one was renamed .deleted, leaves both: the next start loads the old segment's offsets past the new "
    "base, under a log end that hides them, with index entries past the log end; appends then reuse those offsets",
    step_shape=_segment_past_the_next_held,
)


def _read_committed_over_a_torn_txn_index(step: sc.Step, results: dict, model) -> bool:
    """A read at read_committed of a partition one of whose ``.txnindex`` files ends in a partial
    record (its length no multiple of 34, §3.7)."""
    if not (isinstance(step, sc.Read) and step.isolation == "read_committed") or model is None or not model.running:
        return False
    p = model.manager.partitions.get((step.topic, step.partition))
    return p is not None and any(
        s.txn_index is not None and len(s.txn_index.data) % ABORTED_TXN_SIZE for s in p.log.segments
    )


TORN_TXN_INDEX = Finding(
    name="torn-transaction-index-hides-an-aborted-transaction",
    release="4.4.0",
    prop=READ_COMMITTED,
    summary="a .txnindex whose last record was cut short while the broker was down passes a clean load's sanity "
    "check, which reads whole records only: that record's aborted transaction is left out of read_committed "
    "fetches, and the consumer receives its data; records appended after the partial one are misaligned",
    step_shape=_read_committed_over_a_torn_txn_index,
)


def _hole_between_loaded_segments(step: sc.Step, results: dict, model) -> bool:
    """After a load, neighbouring segments with offsets missing between them while the later one
    is not empty: a truncation's higher segment back over a lower one it had removed."""
    return _loaded_neighbours(step, model, lambda a, b: b.size and a.next_offset() < b.base_offset)


TRUNCATE_REMOVES_THE_LOWEST_FIRST = Finding(
    name="truncate-interrupted-leaves-a-hole",
    release="4.4.0",
    prop=PREFIX,
    summary="truncateTo renames the segments above its target to .deleted lowest first, with the cut last; a "
    "process crash between two renames leaves the higher segments: the next start loads a log with a hole "
    "(the renamed segment's offsets missing) under records the truncation had removed",
    step_shape=_hole_between_loaded_segments,
    on_kafkas_image_only=True,
)


def _promise_broken_below_the_start(violation) -> bool:
    """A durability promise (model.durability) broken for a segment whose base lies below the
    recovery point the flush began from: LocalLog.flush fsyncs the directory only when a flushed
    segment's base is at or above that point."""
    found = BROKEN_PROMISE.search(violation.witness)
    return (
        violation.frames == ("model.durability.promised",)
        and found is not None
        and int(found["base"]) < int(found["start"])
    )


FLUSH_BELOW_THE_RECOVERY_POINT = Finding(
    name="flush-below-the-recovery-point-skips-the-directory",
    release="4.4.0",
    prop=DURABLE,
    summary="LocalLog.flush fsyncs the partition directory only if a flushed segment's base is at or above "
    "the recovery point it starts from; a segment file created since the last directory fsync whose base "
    "lies below it (the recovery point raised by a log start increment) is flushed with its directory "
    "entry pending: a power loss takes the file, or brings back the one it replaced, with flushed records",
    step_shape=lambda step, results, model: True,
    violation_shape=_promise_broken_below_the_start,
)


def _msync_error_escaped(step: sc.Step, results: dict, model) -> bool:
    """An I/O error failed a Kafka target's own ``msync`` of an index inside ``step``, and the step
    raised the JDK's UncheckedIOException or, where the msync ran in a flush whose exception the
    step does not see (a roll's scheduled flush, a shutdown's), completed (the ``isolated``
    witness then says the dir stayed online)."""
    return step.op == "fail_io" and any(
        name.startswith("kafka") and r.get("failed", "").startswith("msync ") and r.get("error") in (None, "UncheckedIOException")
        for name, r in results.items()
    )


MSYNC_ERROR_ESCAPES = Finding(
    name="msync-error-escapes-as-an-unchecked-exception",
    release="4.4.0",
    prop=ISOLATED,
    summary="an I/O error on an index's msync (MappedByteBuffer.force) reaches Kafka as the JDK's "
    "UncheckedIOException, which the log's I/O error handling (IOException only) lets through: the "
    "flush fails, but the log dir is not taken offline and the broker goes on writing to the disk",
    step_shape=_msync_error_escaped,
    on_kafkas_image_only=True,
)


FINDINGS = (
    MSYNC_ERROR_ESCAPES,
    FLUSH_BELOW_THE_RECOVERY_POINT,
    FULL_INDEX_MID_APPEND,
    LOOKUP_BY_A_LOST_MAX,
    LOOKUP_BY_A_KEPT_MAX,
    RETENTION_BY_A_DAMAGED_ENTRY,
    REBUILD_READS_A_TORN_SEGMENT,
    SEGMENT_INDEX_BYTES_BELOW_A_TIME_ENTRY,
    SWAP_COMPLETED_OVER_A_LOST_DELETION,
    TRUNCATE_FULLY_INTERRUPTED,
    TRUNCATE_REMOVES_THE_LOWEST_FIRST,
    TORN_TXN_INDEX,
)


def known(step: sc.Step, results: dict, violation, model=None, kafkas_image: bool = False) -> Finding | None:
    """The known finding ``violation`` (the first of ``step``) is, if any; ``model`` is the model
    target, which predicts what Kafka answers where the model departs from it on purpose;
    ``kafkas_image``: the last crash image was cut from Kafka's own journal."""
    return next(
        (
            f
            for f in FINDINGS
            if violation.prop == f.prop
            and (kafkas_image or not f.on_kafkas_image_only)
            and (f.violation_shape is None or f.violation_shape(violation))
            and f.step_shape(step, results, model)
        ),
        None,
    )
