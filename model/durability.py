"""Kafka's durability protocol as the model states it: what a power loss can no longer take once a
step has completed.

Kafka keeps no write-ahead log of its own: a record is durable when the ``.log`` bytes holding it
were fsynced *and* every directory entry on the path to that file was fsynced after the file was
created or renamed into place.  Which operation does what (spec §4.10, §6.3, §6.5):

* **flush** (``UnifiedLog.flush``, and the flushes a roll schedules, a shutdown runs, and
  ``flush.messages`` forces): every segment below the new recovery point is fsynced, and so is
  the partition directory when a segment created since its last directory fsync is among them —
  the new segment's *entry* is durable only from then on (KAFKA-3968; before 3.0 Kafka never
  fsynced it, so a power loss could take a flushed segment file with its data).
* **checkpoint, shutdown, open** fsync each data directory (the recovery-point and log-start
  checkpoints are replaced by temp file, fsync, rename, directory fsync), which makes each
  partition directory's own entry durable: before that, a partition created since the last one
  can vanish whole, and nothing below its recovery point is promised.
* **truncate** removes: a cut file's tail and a ``.deleted`` rename need not be durable (a power
  loss may bring the bytes back; recovery and the next load remove them again).

So the promise of a step that moved a log's recovery point up, from R to R' (a flush, a roll's
flush of the segments it left, a shutdown's flush to the log end), in a partition whose directory
entry is anchored: every segment holding a batch in [R, R') is in the partition directory under its
name, and its bytes up to the end of the last batch below R' are durable.  (Segments below R were
promised by the step that covered them; a later rename — a load completing a swap — may make their
entries pending again, which a power loss undoes and the next load redoes, so they are not held to
their names here.)  This is the statement the ``durable`` crash property enumerates crash images to
falsify; :func:`promised` gives it per step, so a target's journal can be held to it directly.
"""

from __future__ import annotations

import attrs

from model.segment import prefix


@attrs.frozen
class Promise:
    """The first ``length`` bytes of ``path`` (relative to the data root, e.g.
    ``d0/t-0/00000000000000000000.log``) must survive a power loss now: the file reachable through
    durable directory entries, those bytes durable.  ``below`` is the recovery point it follows from."""

    path: str
    length: int
    below: int
    start: int = 0  # the recovery point the step began from


def recovery_points(manager) -> dict[str, int]:
    """Each served log's recovery point, by partition directory (``d0/t-0``)."""
    return {pf.path: pf.log.recovery_point for pf in manager.partitions.values()}


def promised(manager, anchored: set[str], before: dict[str, int], shut_down: bool = False) -> list[Promise]:
    """What a step made durable: ``manager`` (a :class:`model.log_manager.LogManager`) after it,
    ``before`` the recovery points as it began (:func:`recovery_points`); only partitions whose
    directories are in ``anchored``.  ``shut_down``: a graceful shutdown flushed every log to its end."""
    out = []
    for pf in manager.partitions.values():
        log = pf.log
        bound = log.log_end_offset if shut_down else log.recovery_point
        start = before.get(pf.path)
        if pf.path not in anchored or start is None or bound <= start:
            continue
        for segment in log.segments:
            end = _covered_end(segment, log.log_start_offset, start, bound)
            if end:
                out.append(Promise(f"{pf.path}/{prefix(segment.base_offset)}.log", end, bound, start))
    return out


def _covered_end(segment, log_start: int, start: int, bound: int) -> int:
    """Where the last batch of ``segment`` wholly below ``bound`` ends, if the segment holds one
    that starts at or above the log start and reaches ``start`` (0: none)."""
    end, covers = 0, False
    for batch in segment.batches():
        header = batch.header()
        if header.last_offset >= bound:
            break
        if header.offset >= log_start:
            end = header.position + header.size
            covers = covers or header.last_offset >= start
    return end if covers else 0
