"""What a cleaning round decides about transactional batches and markers (Kafka's
``CleanedTransactionMetadata``): impl's :mod:`impl.cleaned_transaction_metadata` against the
model's ``_Transactions`` over drawn batch sequences and aborted-transaction lists, and the
control batches both refuse as only damage makes them."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.cleaned_transaction_metadata import ABORT, COMMIT, CleanedTransactionMetadata, UnreadableMarker, marker_type
from impl.txn_index import AbortedTxn as ImplAbortedTxn
from model.cleaner import _Transactions
from model.errors import RecordFormatError
from model.indexes import AbortedTxn, TransactionIndex
from model.records import Batch, Record, build_batch_v2, build_control_batch, encode_batch_v2

T = 1_700_000_000_000
PIDS = (1, 2, 3)


@st.composite
def _round(draw):
    """(batches as (kind, producer id), aborted transactions as (pid, first, last), split points):
    kind is data, txn, ABORT, COMMIT or empty (a control batch an earlier round emptied)."""
    batches = draw(st.lists(st.tuples(st.sampled_from(["data", "txn", "txn", "ABORT", "COMMIT", "empty"]),
                                      st.sampled_from(PIDS)), max_size=14))  # fmt: skip
    n = max(len(batches), 1)
    aborted = draw(st.lists(st.tuples(st.sampled_from(PIDS), st.integers(0, n - 1), st.integers(0, n - 1)), max_size=5))
    splits = draw(st.lists(st.integers(0, n), max_size=3))
    return batches, [(p, min(a, b), max(a, b)) for p, a, b in aborted], sorted(splits)


def _model_batch(kind: str, pid: int, offset: int) -> Batch:
    if kind in ("ABORT", "COMMIT"):
        raw = build_control_batch(offset, 0 if kind == "ABORT" else 1, T, producer_id=pid, producer_epoch=0)
    elif kind == "empty":
        raw = encode_batch_v2(base_offset=offset, records=[], payload=b"", transactional=True, control=True,
                              base_timestamp=-1, max_timestamp=T, producer_id=pid, producer_epoch=0,
                              records_count=0)  # fmt: skip
    else:
        raw = build_batch_v2(offset, [(T, b"k", b"v")], producer_id=pid, producer_epoch=0, base_sequence=offset,
                             transactional=kind == "txn")  # fmt: skip
    return Batch(0, raw)


@given(_round())
def test_impl_decides_as_the_model(case):
    """Every batch's discard decision, and the entries written to the cleaned index, agree; the
    aborted transactions arrive in parts (as a round adds each source segment's), some twice."""
    batches, aborted, splits = case
    model, impl = _Transactions(), CleanedTransactionMetadata()
    model.cleaned_index = TransactionIndex(0)
    written: list[ImplAbortedTxn] = []

    class Index:
        def append(self, txn):
            written.append(txn)

    impl.cleaned_index = Index()
    parts = [aborted[:1], aborted, aborted[1:]]  # overlapping, as Kafka's per-source collection can be
    for offset, (kind, pid) in enumerate(batches):
        if offset in splits and parts:
            part = parts.pop(0)
            model.add_aborted([AbortedTxn(p, f, l, l + 1) for p, f, l in part])
            impl.add_aborted_transactions([ImplAbortedTxn(p, f, l, l + 1) for p, f, l in part])
        batch = _model_batch(kind, pid, offset)
        expected = model.on_read(batch, batch.header())
        if kind in ("ABORT", "COMMIT", "empty"):
            code = None if kind == "empty" else ABORT if kind == "ABORT" else COMMIT
            got = impl.on_control_batch_read(offset, pid, code)
        else:
            got = impl.on_batch_read(offset, pid, kind == "txn")
        assert got == expected, (offset, kind, pid)
    assert [(t.producer_id, t.first_offset) for t in written] == [
        (t.producer_id, t.first_offset) for t in model.cleaned_index.all_entries()
    ]


def test_aborted_data_then_its_marker():
    """An aborted transaction's batch may go; its ABORT marker stays (its data was read) and its
    entry is written; a COMMIT after read data stays, one with none read may go."""
    txns = CleanedTransactionMetadata()
    txns.add_aborted_transactions([ImplAbortedTxn(1, 0, 1, 2)])
    assert txns.on_batch_read(0, 1, True) is True
    assert txns.on_batch_read(0, 2, True) is False
    assert txns.on_control_batch_read(1, 1, ABORT) is False
    assert txns.on_control_batch_read(2, 2, COMMIT) is False
    assert txns.on_control_batch_read(3, 2, COMMIT) is True
    assert txns.on_control_batch_read(4, 1, ABORT) is True


@pytest.mark.parametrize(
    "key,value_len,why",
    [(None, 6, "key"), (b"\x00", 6, "key"), (struct.pack(">hh", -1, 0), 6, "key"), (struct.pack(">hh", 0, 0), 5, "value")],
)
def test_a_marker_only_damage_makes_is_refused(key, value_len, why):
    with pytest.raises(UnreadableMarker, match=why):
        marker_type([(key, value_len)])


def test_the_model_refuses_a_marker_only_damage_makes():
    raw = encode_batch_v2(base_offset=0, records=[Record(key=b"k", value=b"v")], transactional=True, control=True,
                          base_timestamp=T, max_timestamp=T, producer_id=1, producer_epoch=0)  # fmt: skip
    batch = Batch(0, raw)
    with pytest.raises(RecordFormatError) as e:
        _Transactions().on_read(batch, batch.header())
    assert e.value.kind == "UnsupportedControlBatch"
