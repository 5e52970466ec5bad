"""``read-committed``: a consumer reading at read_committed is never handed data of an aborted or
an open transaction (docs/producer-state.md rules 58 and 60).

Judged on each target's own answer against its own log, not against the model: the batches of a
``read`` at ``read_committed`` are filtered as Kafka's consumer filters them with the answer's
aborted transactions (``CompletedFetch``: a transaction joins the aborted set once a batch reaches
its first offset, and leaves it at its producer's ABORT marker), and no batch that survives may
belong to a transaction that the target's log ends with an ABORT marker or with no marker yet.  A
target and the model wrong the same way (a missing index entry, a last stable offset past an open
transaction) still fail here.
"""

from __future__ import annotations

from conformance import scenario as sc
from conformance.properties import READ_COMMITTED, Observation
from model.errors import RecordFormatError
from model.file_records import iterate_file


def judge(obs: Observation):
    step = obs.step
    if not (isinstance(step, sc.Read) and step.isolation == "read_committed"):
        return
    for t in obs.targets:
        result = obs.results.get(t.name, {})
        if "bytes" in result:
            yield READ_COMMITTED, exposed(t, step, result)


def exposed(target, step: sc.Read, result: dict) -> str | None:
    """The first batch a read_committed consumer would be handed that belongs to an aborted or an
    open transaction of ``target``'s log, as a witness; None if there is none."""
    name = f"/{step.topic}-{step.partition}"
    log = [
        b
        for key, datas in target._segment_bytes().items()
        if key.endswith(name)
        for d in datas
        for b in iterate_file(d).batches
    ]
    outcome = transaction_outcomes(log)
    fetched = iterate_file(bytes.fromhex(result["bytes"])).batches
    for batch in delivered(fetched, result.get("aborted") or []):
        h = batch.header()
        fate = outcome.get(h.offset)
        if fate is not None:
            return (
                f"{target.name}: a read_committed fetch at {step.offset} hands the consumer the batch at offset "
                f"{h.offset} of producer {h.producer_id}'s {fate} transaction (aborted transactions answered: "
                f"{result.get('aborted')})"
            )
    return None


def transaction_outcomes(batches) -> dict[int, str]:
    """The base offset of every transactional data batch whose transaction ``batches`` (a log, in
    order) ends with an ABORT marker ("aborted") or does not end ("open")."""
    current: dict[int, list[int]] = {}  # producer id → its open transaction's batches
    out = {}
    for batch in batches:
        if not (batch.is_v2 and batch.is_transactional):
            continue
        h = batch.header()
        if batch.is_control:
            records = _records(batch)
            kind = records[0].control_type if records else None
            for offset in current.pop(h.producer_id, []):
                if kind == "ABORT":
                    out[offset] = "aborted"
        else:
            current.setdefault(h.producer_id, []).append(h.offset)
    for offsets in current.values():
        out.update(dict.fromkeys(offsets, "open"))
    return out


def delivered(batches, aborted) -> list:
    """The data batches Kafka's consumer keeps at read_committed: each aborted transaction (producer
    id, first offset) becomes active once a batch's last offset reaches its first offset; a
    transactional batch of an active producer is dropped; the producer's ABORT marker ends it."""
    pending = sorted((first, pid) for pid, first in aborted)
    active: set[int] = set()
    out = []
    for batch in batches:
        h = batch.header()
        if batch.is_v2 and h.producer_id >= 0:
            while pending and pending[0][0] <= h.last_offset:
                active.add(pending.pop(0)[1])
            if batch.is_control:
                records = _records(batch)
                if records and records[0].control_type == "ABORT":
                    active.discard(h.producer_id)
            elif batch.is_transactional and h.producer_id in active:
                continue
        if not (batch.is_v2 and batch.is_control):
            out.append(batch)
    return out


def _records(batch) -> list:
    try:
        return batch.records()
    except RecordFormatError:  # a damaged marker ends nothing the consumer can see
        return []
