"""Decompression of batch payloads for record-level reads (spec §1.3, §1.7, §1.8), output capped.

* gzip — one or more concatenated gzip members (zlib, gzip framing only);
* snappy — xerial framing (magic, two int32 versions, then ``int32 length`` + raw block), or one raw
  block when the magic is absent; each block's claimed length is checked before it is expanded;
* lz4 — a Kafka LZ4 frame; for magic 0 the header checksum byte is Kafka's historical wrong one
  (KAFKA-3160), which Kafka ignores: it is replaced by the right one before the frame is decoded;
* zstd — one or more frames, fed in slices small enough that no frame expands far past the cap.

No input makes these allocate much beyond ``limit`` bytes.  Failures raise :class:`CodecError`, or
:class:`OverLimit` when the output would exceed ``limit``; the caller adds the batch position.
"""

from __future__ import annotations

import zlib

import cramjam
import lz4.frame
import zstandard

LIMIT = 256 * 1024 * 1024  # the most one batch may expand to
XERIAL = b"\x82SNAPPY\x00"
LZ4_MAGIC = b"\x04\x22\x4d\x18"


class CodecError(ValueError):
    """A compressed stream that does not decode (Kafka: KafkaException wrapping an IOException)."""


class SnappyChunkError(CodecError):
    """snappy-java's SnappyError (a java.lang.Error, not an Exception): a xerial chunk length that is
    negative or above the reader's 512 MiB bound."""


MAX_SNAPPY_CHUNK = 536_870_912  # SnappyInputStream.MAX_CHUNK_SIZE


class OverLimit(CodecError):
    def __init__(self, limit: int):
        super().__init__(f"decompressed size exceeds the limit of {limit} bytes")


def gunzip(data, limit: int) -> bytes:
    parts, total, rest = [], 0, data
    while True:
        d = zlib.decompressobj(31)
        try:
            part = d.decompress(rest, limit + 1 - total)
        except zlib.error as e:
            raise CodecError(f"gzip: {e}") from None
        parts.append(part)
        total += len(part)
        if total > limit or d.unconsumed_tail:
            raise OverLimit(limit)
        if not d.eof:
            raise CodecError("gzip: truncated stream")
        rest = d.unused_data
        if not rest:
            return parts[0] if len(parts) == 1 else b"".join(parts)


def _snappy_block(block, budget: int, limit: int) -> bytes:
    try:
        claimed = cramjam.snappy.decompress_raw_len(block)
    except Exception as e:  # cramjam's DecompressionError
        raise CodecError(f"snappy: {e}") from None
    if claimed > budget:
        raise OverLimit(limit)
    try:
        return cramjam.snappy.decompress_raw(block)
    except Exception as e:
        raise CodecError(f"snappy: {e}") from None


def unsnappy(data, limit: int) -> bytes | bytearray:
    data = bytes(data)
    if not data.startswith(XERIAL):
        return bytes(_snappy_block(data, limit, limit))
    end, pos, out = len(data), 16, bytearray()  # magic (8), version, compatible version (4 + 4)
    if end < pos:
        raise CodecError("snappy: truncated xerial header")
    while pos < end:
        n = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        if pos + 4 <= end and (n < 0 or n > MAX_SNAPPY_CHUNK):
            raise SnappyChunkError(f"snappy: xerial chunk length {n} at {pos} is negative or above {MAX_SNAPPY_CHUNK}")
        if pos + 4 > end or n < 0 or n > end - pos - 4:
            raise CodecError(f"snappy: xerial block at {pos} runs past the end of the stream")
        out += _snappy_block(data[pos + 4 : pos + 4 + n], limit - len(out), limit)
        pos += 4 + n
    return out


def _xxh32_short(b: bytes) -> int:
    """xxHash32 (seed 0) of fewer than 16 bytes: all an LZ4 frame descriptor needs."""
    m = 0xFFFFFFFF
    h, i = (374761393 + len(b)) & m, 0
    for i in range(0, len(b) - 3, 4):
        h = (h + int.from_bytes(b[i : i + 4], "little") * 3266489917) & m
        h = ((h << 17 | h >> 15) & m) * 668265263 & m
    for c in b[len(b) & ~3 :]:
        h = (h + c * 374761393) & m
        h = ((h << 11 | h >> 21) & m) * 2654435761 & m
    h = (h ^ h >> 15) * 2246822519 & m
    h = (h ^ h >> 13) * 3266489917 & m
    return h ^ h >> 16


def _fix_header_checksum(data) -> bytearray:
    """The frame with its header checksum byte recomputed over FLG, BD [, content size]."""
    frame = bytearray(data)
    if len(frame) < 7 or frame[:4] != LZ4_MAGIC:
        raise CodecError("lz4: not an LZ4 frame (bad magic or short header)")
    hc = 14 if frame[4] & 0x08 else 6
    if hc >= len(frame):
        raise CodecError("lz4: truncated frame descriptor")
    frame[hc] = _xxh32_short(bytes(frame[4:hc])) >> 8 & 0xFF
    return frame


def unlz4(data, limit: int, magic: int = 2) -> bytes:
    if magic == 0:
        data = _fix_header_checksum(data)
    d = lz4.frame.LZ4FrameDecompressor()
    try:
        out = d.decompress(data, max_length=limit + 1)
    except Exception as e:  # RuntimeError from the library
        raise CodecError(f"lz4: {e}") from None
    if len(out) > limit:
        raise OverLimit(limit)
    if not d.eof:
        if d.needs_input:
            raise CodecError("lz4: truncated frame")
        raise OverLimit(limit)
    return out


def unzstd(data, limit: int) -> bytearray:
    out, rest = bytearray(), bytes(data)
    while rest:
        d = zstandard.ZstdDecompressor().decompressobj()
        pos = 0
        while not d.eof and pos < len(rest):
            # one input byte expands to at most ~32 KiB (a 4-byte RLE block of 128 KiB)
            step = max(256, (limit - len(out)) >> 15)
            try:
                out += d.decompress(rest[pos : pos + step])
            except zstandard.ZstdError as e:
                raise CodecError(f"zstd: {e}") from None
            pos += step
            if len(out) > limit:
                raise OverLimit(limit)
        if not d.eof:
            raise CodecError("zstd: truncated frame")
        rest = d.unused_data + rest[pos:]
    return out


def decompress(codec: int, data, limit: int = LIMIT, magic: int = 2):
    """The decompressed bytes (a bytes-like object) of a Kafka-framed stream of codec 1–4."""
    if codec == 1:
        return gunzip(data, limit)
    if codec == 2:
        return unsnappy(data, limit)
    if codec == 3:
        return unlz4(data, limit, magic)
    if codec == 4:
        return unzstd(data, limit)
    raise CodecError(f"Unknown compression type id: {codec}")


# --- compression (the log cleaner's rebuilt batches, same codec as the source) -----------------

XERIAL_HEADER = XERIAL + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")  # magic, version 1, compatible 1
XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream's default block size


def _snappy_xerial(data) -> bytes:
    """Kafka's xerial framing: the 16-byte header, then each 32 KiB input block as ``>i`` length +
    raw snappy block."""
    data = bytes(data)
    out = bytearray(XERIAL_HEADER)
    for i in range(0, len(data), XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + XERIAL_BLOCK]))
        out += len(block).to_bytes(4, "big", signed=True)
        out += block
    return bytes(out)


GZIP_OS, OS_UNKNOWN = 9, 255  # the gzip header's OS byte (RFC 1952), as Java 17 writes it


def compress(codec: int, data) -> bytes:
    """The Kafka-framed compressed stream of ``data`` for codec 1–4, byte for byte as Kafka's
    MemoryRecordsBuilder writes it on Java 17 (a cleaner's rebuilt batch): gzip level 6 with a
    gzip header whose OS byte is 255 (GZIPOutputStream since JDK 16, JDK-8244706); snappy in xerial
    framing; lz4 frames of independent 64 KiB blocks without checksums or content size; zstd level
    3 streamed (ZstdOutputStream): no content size, the window descriptor of an unknown size, and
    the frame closed by an empty last block."""
    if codec == 1:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        out = bytearray(c.compress(data) + c.flush())
        out[GZIP_OS] = OS_UNKNOWN
        return bytes(out)
    if codec == 2:
        return _snappy_xerial(data)
    if codec == 3:
        return lz4.frame.compress(
            bytes(data),
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
    if codec == 4:
        stream = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
        return stream.compress(bytes(data)) + stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + stream.flush()
    raise CodecError(f"Unknown compression type id: {codec}")
