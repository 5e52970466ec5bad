"""``clean-restart``: after a graceful shutdown every index file is trimmed and sane, and the open
that follows recovers nothing, (impl) reads no log bytes beyond the active segments' tails, and
(impl and Kafka) opens no index of an inactive segment (KAFKA-7283, spec §6.3, §7.3)."""

from __future__ import annotations

from conformance import kafkas_own
from conformance.index_files import INDEX_SUFFIXES
from conformance.properties import CLEAN_RESTART, Observation, tainted
from model.indexes import file_entries


# a log queued for deletion or set aside as a stray is held, not closed, by a shutdown (§2.3)
NOT_CLOSED = ("-delete", "-stray")


def judge(obs: Observation):
    if obs.step.shuts_down:
        for t in obs.targets:
            if "error" not in obs.results[t.name]:  # a refused shutdown (not running) trimmed nothing
                yield CLEAN_RESTART, _untrimmed(t, obs)
    if obs.step.loads and obs.shutdown_at is not None:
        for t in obs.targets:
            yield CLEAN_RESTART, _recovered(t, obs)


def _untrimmed(target, obs: Observation) -> str | None:
    zero_slots = not (obs.faulted and kafkas_own.applies("unsynced-roll-entry"))
    for path, data in sorted(target.files().items()):
        directory = path.rsplit("/", 1)[0]
        if directory.endswith(NOT_CLOSED):  # LogManager.shutdown closes only the logs it serves (§6.3)
            continue
        if path.endswith(INDEX_SUFFIXES) and not tainted(directory, obs.corrupted):
            problem = trimmed_index_problem(path, data, zero_slots)
            if problem:
                return f"{target.name} after shutdown: {problem}"
    return None


def _recovered(target, obs: Observation) -> str | None:
    """What the open after a graceful shutdown did that it should not have."""
    unclean = set()
    if kafkas_own.applies("unclean-dir-recovers"):
        unclean = {d for d, clean in (obs.shutdown_dirs or {}).items() if not clean}
    recovered = [
        (load["partition"], load["recovered"])
        for load in target.last_load
        if load["recovered"]
        and load.get("dir") not in unclean
        # a log queued for deletion is not closed by a shutdown, and its deletion may have removed
        # some of its files (an index a failed deletion took): its load owes the shutdown nothing
        and not load["partition"].endswith(NOT_CLOSED)
        # a file a corrupt step damaged since the shutdown may need recovery (a txn index Kafka's
        # sanity check refuses: corpora/crash/transaction-index-rebuilt-by-recovery.json)
        and not tainted(f"{load.get('dir')}/{load['partition']}", obs.corrupted)
    ]
    if recovered:
        return f"{target.name} recovered {recovered} after a graceful shutdown"
    stats = getattr(target, "load_stats", None)
    if stats is None or unclean or (obs.corrupted and kafkas_own.applies("corrupted-index-costs-reads")):
        return None
    obs.load_stats.append(stats)
    if stats.get("log_bytes_read", 0) > stats.get("tail_bytes", 0):  # a Kafka target counts no bytes
        return (
            f"{target.name} read {stats['log_bytes_read']} log bytes while loading after a graceful shutdown; "
            f"only the {stats['tail_bytes']} bytes after the active segments' last index entries are needed"
        )
    opened = [p for p in stats["inactive_indexes_opened"] if p not in _first_unstable_segments(obs)]
    if opened:
        return (
            f"{target.name} opened {', '.join(opened)} while loading after a "
            "graceful shutdown; an inactive segment's index waits for first use (KAFKA-7283)"
        )
    return None


def _first_unstable_segments(obs: Observation) -> set[str]:
    """The offset-index files of the segments holding an open transaction's first offset, by the
    model's state (Kafka's own ``first-unstable-offset-placed-at-load``); none without the model.
    A first offset below the log start is placed at the log start (maybeIncrementFirstUnstableOffset
    takes the larger of the two), so the segment read is the log start's."""
    model = next((t for t in obs.targets if t.name == "model"), None)
    if model is None or not model.running or not kafkas_own.applies("first-unstable-offset-placed-at-load"):
        return set()
    out = set()
    for key, p in model.state()["partitions"].items():
        bases = [s[0] for s in p["segments"]]
        for first in (max(e[7], p["log_start_offset"]) for e in p.get("producers", ()) if e[7] >= 0):
            holding = max((b for b in bases if b <= first), default=None)
            if holding is not None:
                out.add(f"{key}/{holding:020d}.index")
    return out


def trimmed_index_problem(path: str, data: bytes, zero_slots: bool = True) -> str | None:
    """An index file after a graceful shutdown holds only its entries, in order (§3.4 step 5).
    ``zero_slots=False`` lets an all-zero slot stand (Kafka's own ``unsynced-roll-entry``)."""
    if path.endswith(".txnindex"):
        return None
    size = 8 if path.endswith(".index") else 12
    if len(data) % size:
        return f"{path}: length {len(data)} is not a multiple of {size}"
    entries = file_entries(path, data)
    for i, e in enumerate(entries):
        if e == (0, 0) and zero_slots:
            return f"{path}: slot {i} is zero (not trimmed to its entries)"
        if e == (0, 0) and not zero_slots:
            continue
        if i and (e[0] <= entries[i - 1][0] if size == 8 else e[0] < entries[i - 1][0]):
            return f"{path}: entry {i} {e} does not increase on entry {i - 1} {entries[i - 1]}"
    return None
