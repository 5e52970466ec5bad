"""Property ``conforms`` (and ``bad-input``) for record formats: model and impl read the same
bytes identically — valid prefix, every header field, stop reason, error kind and position."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.formats import FORMAT_CHECKS, check_deep_decode_declared, check_scan_conforms
from conformance.strategies import hostile_batches, segments


@pytest.mark.parametrize("name", sorted(FORMAT_CHECKS))
def test_format_check_passes_on_impl(name):
    FORMAT_CHECKS[name]()


@given(st.lists(hostile_batches(), min_size=1, max_size=3).map(b"".join))
def test_hostile_batch_contents_give_declared_errors(data):
    """Valid CRC, arbitrary records section: deep iteration raises only RecordFormatError."""
    check_scan_conforms(data)
    check_deep_decode_declared(data)


@given(segments(min_batches=1), st.data())
def test_scan_windows(data, draw):
    """Scanning from any batch boundary to any end gives the same outcome on both sides."""
    outcome = check_scan_conforms(data)
    starts = [h[0] for h in outcome.headers]
    start = draw.draw(st.sampled_from(starts))
    end = draw.draw(st.integers(start, len(data)))
    check_scan_conforms(data, start, end)
