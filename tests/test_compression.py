"""Kafka's codec framings (model/compression.py)."""

from __future__ import annotations

import struct

import cramjam
import lz4.frame
import pytest
from hypothesis import given
from hypothesis import strategies as st

from model import compression as C


@pytest.mark.parametrize("codec", [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
@pytest.mark.parametrize("magic", [0, 1, 2])
@given(data=st.binary(max_size=70_000))
def test_round_trip(codec, magic, data):
    if codec == C.ZSTD and magic < 2:
        return
    assert C.decompress(codec, C.compress(codec, data, magic), magic) == data


def test_xxh32_reference_values():
    assert C.xxh32(b"") == 0x02CC5D05
    assert C.xxh32(b"a") == 0x550D7456
    assert C.xxh32(b"abc") == 0x32D153FF
    assert C.xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_snappy_uses_xerial_framing_and_reads_raw_snappy():
    framed = C.compress(C.SNAPPY, b"hello" * 100)
    assert framed.startswith(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    raw = bytes(cramjam.snappy.compress_raw(b"raw block"))
    assert C.decompress(C.SNAPPY, raw) == b"raw block"


def test_lz4_frame_header_and_the_magic_v0_checksum():
    v1 = C.compress(C.LZ4, b"x" * 1000, magic=1)
    assert v1[4] == 0x60 and v1[5] == 0x40  # independent blocks, no checksums, 64 KiB blocks
    assert v1[6] == C.lz4_header_checksum(v1, broken=False)
    v0 = C.compress(C.LZ4, b"x" * 1000, magic=0)
    assert v0[6] == C.lz4_header_checksum(v0, broken=True) != C.lz4_header_checksum(v0, broken=False)
    assert C.decompress(C.LZ4, v0, magic=0) == b"x" * 1000
    # a correctly checksummed frame is still readable as magic 0 (the checksum is ignored)
    assert C.decompress(C.LZ4, lz4.frame.compress(b"y" * 10), magic=0) == b"y" * 10


@pytest.mark.parametrize("codec", [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
def test_corrupt_and_truncated_streams(codec):
    good = C.compress(codec, bytes(range(256)) * 50)
    for bad in (b"junk", good[: len(good) // 2]):
        with pytest.raises(C.CompressionError):
            C.decompress(codec, bad)


@pytest.mark.parametrize("codec", [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
def test_output_cap(codec):
    bomb = C.compress(codec, bytes(2_000_000))
    with pytest.raises(C.OutputLimitExceeded):
        C.decompress(codec, bomb, max_output=100_000)


def test_unknown_codec():
    for fn in (C.compress, C.decompress):
        with pytest.raises(C.UnknownCodec):
            fn(6, b"")
    with pytest.raises(C.UnknownCodec):
        C.codec_name(7)
    assert C.codec_name(C.ZSTD) == "zstd"


def test_concatenated_gzip_members_and_xerial_damage():
    assert C.decompress(C.GZIP, C.compress(C.GZIP, b"a") + C.compress(C.GZIP, b"b")) == b"ab"
    header = C.XERIAL_HEADER
    for bad in (header[:10], header + b"\x00\x00", header + struct.pack(">i", 99) + b"x"):
        with pytest.raises(C.CompressionError):
            C.decompress(C.SNAPPY, bad)
    with pytest.raises(C.CompressionError):
        C.lz4_header_checksum(b"nope", broken=False)
