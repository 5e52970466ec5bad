"""impl's record walk (offset and timestamp of each record, searchForTimestamp, offsetOfMaxTimestamp)
against the model's full decoder, on every magic and codec; hostile batches raise only
LogFormatError."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.strategies import any_batch, hostile_batches, segments
from impl.errors import LogFormatError
from impl.file_records import BatchScan
from impl.record_walk import offset_of_max_timestamp, records, search_for_timestamp
from model.errors import RecordFormatError
from model.file_records import iterate_file
from model.records import build_batch_v2


def _model_records(data: bytes):
    out = []
    for batch in iterate_file(data).batches:
        try:
            out.append([(r.offset, r.timestamp) for r in batch.records()])
        except RecordFormatError:
            out.append(None)
    return out


def _impl_records(data: bytes):
    out = []
    for header in BatchScan(data):
        try:
            out.append(list(records(data, header)))
        except LogFormatError:
            out.append(None)
    return out


@given(segments())
def test_walk_matches_the_model(data):
    model, impl = _model_records(data), _impl_records(data)
    assert len(model) == len(impl)
    for m, i in zip(model, impl, strict=True):
        if m is not None:  # the model decodes fully; where it succeeds the walk must agree
            assert i == m


@given(any_batch)
def test_every_kind_of_batch(batch):
    assert _impl_records(batch) == _model_records(batch) or None in _model_records(batch)


@given(segments(), st.integers(-2, 2**41), st.integers(0, 50))
def test_search_for_timestamp_matches_a_brute_force_scan(data, target, starting_offset):
    expected = None
    for batch in iterate_file(data).batches:
        if batch.header().max_timestamp >= target:
            try:
                found = next(
                    (
                        (r.timestamp, r.offset)
                        for r in batch.records()
                        if r.timestamp >= target and r.offset >= starting_offset
                    ),
                    None,
                )
            except RecordFormatError:
                return
            if found:
                expected = found
                break
    assert search_for_timestamp(data, target, 0, starting_offset) == expected


def test_offset_of_max_timestamp():
    data = build_batch_v2(10, [(5, b"a", b"x"), (9, b"b", b"y"), (9, b"c", b"z"), (7, None, None)])
    (header,) = list(BatchScan(data))
    assert offset_of_max_timestamp(data, header) == 11
    log_append = build_batch_v2(
        10, [(5, b"a", b"x"), (1, b"b", b"y")], timestamp_type="LogAppendTime", log_append_time=99
    )
    (header,) = list(BatchScan(log_append))
    assert offset_of_max_timestamp(log_append, header) == 10


@given(hostile_batches())
def test_hostile_batches_raise_only_declared_errors(data):
    for header in BatchScan(data):
        try:
            list(records(data, header))
        except LogFormatError as e:
            assert e.position == header.position
