"""impl.producer_runs: the producer state after reading only the batches a recovery keeps is the
state after reading every batch with a producer id (same entries, kept batches, open transactions,
aborted transactions, and the same refusal), and the compiled collapse keeps the same batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from impl import producer_runs, producer_state
from impl._batch_walk import collapse as compiled_collapse
from impl.errors import LogError
from impl.file_records import BatchScan
from impl.producer_state import ProducerStateManager
from impl.record_walk import end_marker
from model.records import build_batch_v2, build_control_batch

T = 1_700_000_000_000


@st.composite
def _log(draw) -> bytes:
    out, offset = bytearray(), 0
    for _ in range(draw(st.integers(0, 40))):
        pid = draw(st.sampled_from([1, 2, 3]))
        epoch = draw(st.sampled_from([0, 0, 0, 1]))
        kind = draw(st.sampled_from(["plain"] * 6 + ["txn", "commit", "abort"]))
        if kind in ("commit", "abort"):
            out += build_control_batch(offset, 1 if kind == "commit" else 0, T, producer_id=pid, producer_epoch=epoch)
            offset += 1
        else:
            n = draw(st.integers(1, 3))
            out += build_batch_v2(offset, [(T + offset, None, b"v")] * n, producer_id=pid, producer_epoch=epoch,
                                  base_sequence=offset, transactional=kind == "txn")  # fmt: skip
            offset += n
    return bytes(out)


def _state(log: bytes, headers) -> tuple:
    psm, aborted, refused = ProducerStateManager(None, "/p-0", listed=[]), [], None  # aborted: the txn index's appends
    try:
        for h in headers:
            marker = end_marker(log, h) if h.attributes & 0x20 else None
            psm.read(h, marker, aborted)
    except LogError as e:
        refused = str(e)
    return psm.producers, psm.batches, psm.ongoing, aborted, psm.read_back, refused, list(psm.producers), list(psm.batches)


@settings(max_examples=150, deadline=None)
@given(_log())
def test_the_kept_batches_leave_the_state_all_leave(log):
    every = list(BatchScan(log))
    kept = producer_runs.collapse(log, [h.position for h in every])
    assert _state(log, every) == _state(log, [h for h in every if h.position in set(kept)])
    packed = b"".join(h.position.to_bytes(8, "little", signed=True) for h in every)
    assert compiled_collapse(log, packed, producer_runs.KEPT_BATCHES) == kept


def test_a_long_run_is_cut_to_its_first_and_last_five():
    log = b"".join(build_batch_v2(i, [(T, None, b"v")], producer_id=9, producer_epoch=0, base_sequence=i) for i in range(50))
    every = [h.position for h in BatchScan(log)]
    assert producer_runs.collapse(log, every) == every[:1] + every[-5:]


def test_the_kept_count_is_the_producer_states():
    assert producer_runs.KEPT_BATCHES == producer_state.KEPT_BATCHES
