"""impl.file_records.BatchScan on every kind of buffer, and its bookkeeping."""

from __future__ import annotations

import mmap

from conformance.formats import impl_outcome, mixed_reference_segment, model_outcome
from impl.file_records import CORRUPT, END, BatchScan, scan


def test_any_buffer_type(tmp_path):
    data = mixed_reference_segment()
    expected = model_outcome(data)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        buffers = [data, bytearray(data), memoryview(data), memoryview(data).cast("b"), mm]
        for buf in buffers:
            assert impl_outcome(buf) == expected, type(buf)
        # the scan released its view: the mmap can be closed right away
    assert mm.closed


def test_bookkeeping():
    data = mixed_reference_segment()
    s = BatchScan(data + bytes(40)).run()
    assert s.stop == CORRUPT and s.batches == 6 and s.valid_bytes == len(data) == s.bytes_checked
    assert s.error.position == len(data) and "size-below-minimum" in str(s.error)
    headers, s2 = scan(data)
    assert s2.stop == END and len(headers) == 6 and headers[-1].records_count == 1
    # a window that starts at a batch boundary
    second = headers[1].position
    s3 = BatchScan(data, second, headers[3].position).run()
    assert s3.batches == 2 and s3.bytes_checked == headers[3].position - second


def test_crc_mismatch_error_names_the_position():
    data = bytearray(mixed_reference_segment())
    data[-1] ^= 0xFF
    s = BatchScan(bytes(data)).run()
    assert s.stop == CORRUPT and s.error.reason == "crc-mismatch"
    assert s.error.kind == "CorruptRecordException" and s.error.position == s.valid_bytes
    s.error.file = "x.log"
    assert str(s.error).startswith("x.log: byte position")


def test_buffers_with_wide_items_are_measured_in_bytes():
    import array

    data = bytes(40)
    for buf in (array.array("I", data), memoryview(bytearray(data)).cast("B", (5, 8))):
        s = BatchScan(buf).run()
        assert (s.stop, s.valid_bytes, s.error.reason) == (CORRUPT, 0, "size-below-minimum")
        assert impl_outcome(buf) == model_outcome(data)
