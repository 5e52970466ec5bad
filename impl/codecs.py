"""Decompression of batch payloads for record-level reads (spec §1.3, §1.8), every output capped.

gzip (concatenated members), snappy (xerial framing or a raw block), lz4 (Kafka's frame; for magic 0
the frame header's checksum byte is Kafka's historical wrong one, so those frames are walked block by
block without checking it), zstd (fed in slices so a tiny frame cannot expand far past the cap).  Any failure is
a :class:`CodecError`; the caller turns it into a LogFormatError with the batch position.
"""

from __future__ import annotations

import zlib

import cramjam
import lz4.block
import lz4.frame
import zstandard

LIMIT = 256 * 1024 * 1024
XERIAL = b"\x82SNAPPY\x00"


class CodecError(ValueError):
    pass


def _cap(n: int, limit: int) -> None:
    if n > limit:
        raise CodecError(f"decompressed size exceeds the limit of {limit} bytes")


def gunzip(data, limit: int) -> bytes:
    out, rest = bytearray(), bytes(data)
    while rest:
        d = zlib.decompressobj(47)
        try:
            out += d.decompress(rest, limit + 1 - len(out))
        except zlib.error as e:
            raise CodecError(f"gzip: {e}") from None
        _cap(len(out), limit)
        if d.unconsumed_tail:
            raise CodecError(f"decompressed size exceeds the limit of {limit} bytes")
        if not d.eof:
            raise CodecError("gzip: truncated stream")
        rest = d.unused_data
    return bytes(out)


def _snappy_block(block: bytes, budget: int) -> bytes:
    try:
        _cap(cramjam.snappy.decompress_raw_len(block), budget)
        return bytes(cramjam.snappy.decompress_raw(block))
    except CodecError:
        raise
    except Exception as e:
        raise CodecError(f"snappy: {e}") from None


def unsnappy(data, limit: int) -> bytes:
    data = bytes(data)
    if not data.startswith(XERIAL):
        return _snappy_block(data, limit)
    out, pos = bytearray(), 16  # magic (8), version (4), compatible version (4)
    if len(data) < pos:
        raise CodecError("snappy: truncated xerial header")
    while pos < len(data):
        n = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        if pos + 4 > len(data) or n < 0 or pos + 4 + n > len(data):
            raise CodecError(f"snappy: xerial block at {pos} runs past the end")
        out += _snappy_block(data[pos + 4 : pos + 4 + n], limit - len(out))
        pos += 4 + n
    return bytes(out)


def unlz4(data, limit: int) -> bytes:
    d = lz4.frame.LZ4FrameDecompressor()
    try:
        out = d.decompress(bytes(data), max_length=limit + 1)
    except RuntimeError as e:
        raise CodecError(f"lz4: {e}") from None
    _cap(len(out), limit)
    if not d.eof:
        raise CodecError(
            "lz4: truncated frame" if d.needs_input else f"decompressed size exceeds the limit of {limit} bytes"
        )
    return out


def unlz4_ignoring_header_checksum(data, limit: int) -> bytes:
    """The LZ4 frame of a magic-0 wrapper: descriptor, then blocks (size with the high bit meaning
    "stored"), an optional 4-byte checksum after each, a zero end mark (§1.8)."""
    data = bytes(data)
    if len(data) < 7 or data[:4] != b"\x04\x22\x4d\x18":
        raise CodecError("lz4: not an LZ4 frame")
    flags, bd = data[4], data[5]
    block_max = 1 << (8 + 2 * ((bd >> 4) & 7))
    pos = 6 + (8 if flags & 0x08 else 0) + 1
    out = bytearray()
    while True:
        if pos + 4 > len(data):
            raise CodecError("lz4: truncated frame")
        size = int.from_bytes(data[pos : pos + 4], "little")
        pos += 4
        if size == 0:
            return bytes(out)
        stored, size = size & 0x80000000, size & 0x7FFFFFFF
        block = data[pos : pos + size]
        if len(block) != size or size > block_max:
            raise CodecError("lz4: block runs past the end of the frame")
        try:
            out += block if stored else lz4.block.decompress(block, uncompressed_size=block_max)
        except Exception as e:
            raise CodecError(f"lz4: {e}") from None
        _cap(len(out), limit)
        pos += size + (4 if flags & 0x10 else 0)


def unzstd(data, limit: int) -> bytes:
    out, rest = bytearray(), bytes(data)
    while rest:
        d = zstandard.ZstdDecompressor().decompressobj()
        pos = 0
        try:
            while not d.eof and pos < len(rest):
                out += d.decompress(rest[pos : pos + 512])
                pos += 512
                _cap(len(out), limit)
        except zstandard.ZstdError as e:
            raise CodecError(f"zstd: {e}") from None
        if not d.eof:
            raise CodecError("zstd: truncated frame")
        rest = d.unused_data + rest[pos:]
    return bytes(out)


DECOMPRESSORS = {1: gunzip, 2: unsnappy, 3: unlz4, 4: unzstd}


def decompress(codec: int, data, limit: int = LIMIT, magic: int = 2) -> bytes:
    if codec == 3 and magic == 0:
        return unlz4_ignoring_header_checksum(data, limit)
    try:
        return DECOMPRESSORS[codec](data, limit)
    except KeyError:
        raise CodecError(f"unknown compression codec {codec}") from None
