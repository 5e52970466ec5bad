"""Which of a recovered segment's producer batches the producer state must read (spec §4.6, §5.3).

Kafka's ``LogSegment.recover`` updates the producer state with every v2 batch carrying a producer
id.  Read back from the log (origin REPLICATION) a batch that is neither transactional nor a control
batch is never refused for its epoch or sequence, opens no transaction and completes none: it only
sets its producer's entry (epoch, last sequence, last offset, timestamp: all the batch's own) and
pushes itself onto the producer's last ``KEPT_BATCHES`` batches (``ProducerStateEntry``'s
``NUM_BATCHES_TO_RETAIN``), a list that a new producer epoch empties first.  The one check such a
batch meets — a producer inside a transaction may not write outside it (InvalidTxnStateException)
— depends on the state before it, and only a transactional or control batch of the same producer
changes that.

What such a batch sets is set again by what follows: the producer's entry by its next data batch
(transactional or not), and its place among the last ``KEPT_BATCHES`` once that many more data
batches of the producer follow (a control batch pushes none; an epoch change empties the list,
and after ``KEPT_BATCHES`` pushes the list is those batches' whatever it held before).  The check
it meets is met first by the first batch of its *run* (the producer's batches between two of its
transactional or control batches), at its own offset, and it passes or fails alike for the rest.
Reading stops at a refused batch, and only the first batch of a run can be refused: the batches
that set something again must come before the next such batch, of any producer.  So the producer
state must read every transactional and control batch, the first batch of every run, and any
batch with fewer than ``KEPT_BATCHES`` data batches of its producer between it and the next first
batch of a run (or the end); the state after reading only those, in log order, is the state after
reading all (the same error, if any, and the producers in the same order of first appearance).  An idempotent producer's segment
then costs the producer state a handful of reads instead of one per batch.

``impl._batch_walk.collapse`` is the same rule, compiled; this one is its fallback and oracle.
"""

from __future__ import annotations

import struct

KEPT_BATCHES = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN, as impl.producer_state keeps (more is never wrong)
_TXN_OR_CONTROL, _CONTROL = 0x30, 0x20  # v2 attribute bits 4 (transactional) and 5 (control)
_attributes_at = struct.Struct(">h").unpack_from
_pid_at = struct.Struct(">q").unpack_from


def collapse(buf, positions, keep: int = KEPT_BATCHES) -> list[int]:
    """The positions of ``positions`` (v2 batches with a producer id in ``buf``, in log order) the
    producer state must read (module docstring)."""
    fields = [(_pid_at(buf, p + 43)[0], _attributes_at(buf, p + 21)[0] & _TXN_OR_CONTROL) for p in positions]
    kept = [bool(kind) for _, kind in fields]
    first = [False] * len(fields)
    in_run: set[int] = set()
    for i, (pid, kind) in enumerate(fields):  # the first batch of every run: the ones a check may refuse
        if kind:
            in_run.discard(pid)
        elif pid not in in_run:
            kept[i] = first[i] = True
            in_run.add(pid)
    pushes: dict[int, int] = {}  # per producer, its data batches from here to the next first batch of a run
    for i in range(len(fields) - 1, -1, -1):
        pid, kind = fields[i]
        if first[i]:
            pushes = {}  # reading may stop there: what follows sets nothing for sure
        elif not kind & _CONTROL:
            kept[i] = kept[i] or pushes.get(pid, 0) < keep
            pushes[pid] = pushes.get(pid, 0) + 1
    return [p for p, k in zip(positions, kept, strict=True) if k]
