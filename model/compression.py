"""Kafka's compression codecs and their stream framing (spec §1.3, §1.7, §1.8).

Codec ids (attribute bits 0–2): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5–7 are unknown
(IllegalArgumentException "Unknown compression type id").  zstd exists only for magic 2.

Framing, per codec, exactly as Kafka's streams write and read it:

* gzip — one gzip member (``GZIPOutputStream``); readers accept concatenated members.
* snappy — snappy-java's ``SnappyOutputStream`` ("xerial") framing: an 8-byte magic ``\\x82SNAPPY\\x00``,
  int32 version, int32 compatible version, then blocks of ``int32 length`` + raw snappy block.  The
  reader (``SnappyInputStream``) falls back to one raw snappy block when the magic is absent — some
  non-Java clients write raw snappy.
* lz4 — an LZ4 frame (``KafkaLZ4BlockOutputStream``): 64 KiB independent blocks, no checksums.  For
  magic 0 Kafka writes, and ignores on read, the historically wrong header checksum computed over the
  frame magic as well as FLG/BD (KAFKA-3160 compatibility).
* zstd — standard zstd frames (zstd-jni streams).

Decompression output is capped (``max_output``) so that no input can make the model allocate more
than the cap, whatever sizes the data claims.  :func:`decompress_chunks` reads the same framing as a
stream of bounded chunks instead, the way Kafka's own readers consume it (``wrapForInput``): it holds
one chunk at a time, so it needs no cap on the total.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import cramjam
import lz4.block
import lz4.frame
import zstandard

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

#: Default ceiling on the bytes one compressed batch may expand to.
DEFAULT_MAX_OUTPUT = 256 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK = 32 * 1024
LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


class UnknownCodec(ValueError):
    """Codec id 5–7 (Kafka: IllegalArgumentException "Unknown compression type id")."""


class CompressionError(ValueError):
    """A compressed stream that does not decode (Kafka: KafkaException wrapping an IOException)."""


class SnappyChunkError(CompressionError):
    """snappy-java's SnappyError, a java.lang.Error and not an Exception: a xerial chunk length
    that is negative or above its reader's bound (SnappyInputStream.hasNextChunk, 1.1.10)."""


MAX_SNAPPY_CHUNK = 536_870_912  # SnappyInputStream.MAX_CHUNK_SIZE, the bound Kafka's reader keeps


class OutputLimitExceeded(CompressionError):
    """Decompression would exceed ``max_output`` bytes."""


def codec_name(codec: int) -> str:
    if codec not in CODEC_NAMES:
        raise UnknownCodec(f"Unknown compression type id: {codec}")
    return CODEC_NAMES[codec]


# --- xxHash32, needed only for the LZ4 frame header checksum byte -------------------------------

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """Plain xxHash32 (reference algorithm), used on the handful of LZ4 frame-descriptor bytes."""
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i + 16 <= n:
            for j in range(4):
                lane = int.from_bytes(data[i + 4 * j : i + 4 * j + 4], "little")
                v[j] = (_rotl((v[j] + lane * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[i : i + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def _lz4_descriptor_end(frame: bytes) -> int:
    """Index of the header-checksum byte (after FLG, BD and the optional 8-byte content size)."""
    if len(frame) < 7 or frame[:4] != LZ4_FRAME_MAGIC:
        raise CompressionError("not an LZ4 frame (bad magic or short header)")
    end = 6 + (8 if frame[4] & 0x08 else 0)
    if end >= len(frame):
        raise CompressionError("truncated LZ4 frame header")
    return end


def lz4_header_checksum(frame: bytes, broken: bool) -> int:
    """The HC byte: xxh32 of the descriptor (broken=True: of magic + descriptor, Kafka's v0 bug)."""
    end = _lz4_descriptor_end(frame)
    start = 0 if broken else 4
    return (xxh32(bytes(frame[start:end])) >> 8) & 0xFF


# --- compress ------------------------------------------------------------------------------------


def compress(codec: int, data: bytes, magic: int = 2) -> bytes:
    """Compress ``data`` as Kafka's writer for ``magic`` would frame it."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return zlib_gzip(data)
    if codec == SNAPPY:
        out = bytearray(XERIAL_HEADER)
        for i in range(0, max(len(data), 1), XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[i : i + XERIAL_BLOCK]))
            out += struct.pack(">i", len(block)) + block
        return bytes(out)
    if codec == LZ4:
        frame = bytearray(
            lz4.frame.compress(
                data,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
            )
        )
        if magic == 0:
            frame[_lz4_descriptor_end(frame)] = lz4_header_checksum(bytes(frame), broken=True)
        return bytes(frame)
    if codec == ZSTD:
        return zstandard.ZstdCompressor(write_content_size=False).compress(data)
    raise UnknownCodec(f"Unknown compression type id: {codec}")


GZIP_OS, OS_UNKNOWN = 9, 255  # the gzip header's OS byte (RFC 1952), as Java 17 writes it


def broker_compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed byte for byte as Kafka's broker compresses a batch it builds
    (MemoryRecordsBuilder, on Java 17: a cleaner's rebuilt batch), where :func:`compress` is a
    producer's framing: gzip's header has OS byte 255 (GZIPOutputStream since JDK 16,
    JDK-8244706), zstd is streamed (ZstdOutputStream at level 3: the window descriptor of an
    unknown size, the frame closed by an empty last block); snappy and lz4 as :func:`compress`."""
    if codec == GZIP:
        out = bytearray(zlib_gzip(data))
        out[GZIP_OS] = OS_UNKNOWN
        return bytes(out)
    if codec == ZSTD:
        stream = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
        return stream.compress(data) + stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + stream.flush()
    return compress(codec, data)


def zlib_gzip(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


# --- decompress ----------------------------------------------------------------------------------


def decompress(codec: int, data: bytes, magic: int = 2, max_output: int = DEFAULT_MAX_OUTPUT) -> bytes:
    """Decompress a Kafka-framed stream; raise CompressionError / UnknownCodec on bad input."""
    data = bytes(data)
    if codec == NONE:
        return data
    if codec == GZIP:
        return _gunzip(data, max_output)
    if codec == SNAPPY:
        return _unsnappy(data, max_output)
    if codec == LZ4:
        return _unlz4(data, magic, max_output)
    if codec == ZSTD:
        return _unzstd(data, max_output)
    raise UnknownCodec(f"Unknown compression type id: {codec}")


def _check_limit(n: int, max_output: int) -> None:
    if n > max_output:
        raise OutputLimitExceeded(f"decompressed size exceeds the limit of {max_output} bytes")


def _gunzip(data: bytes, max_output: int) -> bytes:
    out = bytearray()
    rest = data
    while True:
        d = zlib.decompressobj(31)
        try:
            out += d.decompress(rest, max_output + 1 - len(out))
        except zlib.error as e:
            raise CompressionError(f"gzip: {e}") from None
        _check_limit(len(out), max_output)
        if not d.eof:
            if d.unconsumed_tail:
                raise OutputLimitExceeded(f"decompressed size exceeds the limit of {max_output} bytes")
            raise CompressionError("gzip: truncated stream")
        rest = d.unused_data
        if not rest:
            return bytes(out)


def _raw_snappy(block: bytes, max_output: int, budget: int) -> bytes:
    try:
        claimed = cramjam.snappy.decompress_raw_len(block)
    except Exception as e:  # cramjam raises its own DecompressionError
        raise CompressionError(f"snappy: {e}") from None
    _check_limit(claimed, budget if budget < max_output else max_output)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except Exception as e:
        raise CompressionError(f"snappy: {e}") from None


def _unsnappy(data: bytes, max_output: int) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return _raw_snappy(data, max_output, max_output)
    out = bytearray()
    for block in _xerial_blocks(data):
        out += _raw_snappy(block, max_output, max_output - len(out))
    return bytes(out)


def _xerial_blocks(data: bytes) -> Iterator[bytes]:
    """The raw snappy blocks of snappy-java's xerial framing, each checked as it is reached."""
    if len(data) < len(XERIAL_HEADER):
        raise CompressionError("snappy: truncated xerial header")
    pos = len(XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("snappy: truncated xerial block length")
        (n,) = struct.unpack_from(">i", data, pos)
        if n < 0 or n > MAX_SNAPPY_CHUNK:
            raise SnappyChunkError(f"snappy: xerial chunk length {n} is negative or above {MAX_SNAPPY_CHUNK}")
        if pos + 4 + n > len(data):
            raise CompressionError(f"snappy: xerial block length {n} past end of stream")
        yield data[pos + 4 : pos + 4 + n]
        pos += 4 + n


def _unlz4(data: bytes, magic: int, max_output: int) -> bytes:
    frame = bytearray(data)
    if magic == 0:
        # Kafka ignores the header checksum for magic 0; give the library the one it expects.
        frame[_lz4_descriptor_end(frame)] = lz4_header_checksum(bytes(frame), broken=False)
    d = lz4.frame.LZ4FrameDecompressor()
    try:
        out = d.decompress(bytes(frame), max_length=max_output + 1)
    except RuntimeError as e:
        raise CompressionError(f"lz4: {e}") from None
    _check_limit(len(out), max_output)
    if not d.eof:
        if d.needs_input:
            raise CompressionError("lz4: truncated frame")
        raise OutputLimitExceeded(f"decompressed size exceeds the limit of {max_output} bytes")
    return out


def _unzstd(data: bytes, max_output: int) -> bytes:
    # Fed in small slices so that a highly compressible frame cannot expand far past the cap before
    # the check (a zstd block of 128 KiB can be described in 4 bytes).
    out = bytearray()
    rest = data
    while rest:
        d = zstandard.ZstdDecompressor().decompressobj()
        pos = 0
        try:
            while not d.eof and pos < len(rest):
                out += d.decompress(rest[pos : pos + 256])
                pos += 256
                _check_limit(len(out), max_output)
        except zstandard.ZstdError as e:
            raise CompressionError(f"zstd: {e}") from None
        if not d.eof:
            raise CompressionError("zstd: truncated frame")
        rest = d.unused_data + rest[pos:]
    return bytes(out)


# --- decompress as a stream ----------------------------------------------------------------------

#: The most output one step of :func:`decompress_chunks` produces (zstd: see ``_zstd_chunks``).
CHUNK = 64 * 1024


def decompress_chunks(codec: int, data, magic: int = 2) -> Iterator[bytes]:
    """The decompressed stream of ``data`` as a sequence of non-empty chunks, each produced only
    when asked for; CompressionError / UnknownCodec when the bad part is reached.  A snappy block
    is expanded whole, within ``DEFAULT_MAX_OUTPUT`` (snappy-java's reader, too, allocates a block's
    claimed length at once)."""
    if codec == NONE:
        return iter((bytes(data),) if len(data) else ())
    if codec == GZIP:
        return _gzip_chunks(bytes(data))
    if codec == SNAPPY:
        return _snappy_chunks(bytes(data))
    if codec == LZ4:
        return _lz4_chunks(bytes(data), magic)
    if codec == ZSTD:
        return _zstd_chunks(bytes(data))
    raise UnknownCodec(f"Unknown compression type id: {codec}")


def _gzip_chunks(data: bytes) -> Iterator[bytes]:
    rest = data
    while True:  # one member at least; concatenated members, as GZIPInputStream reads them
        d = zlib.decompressobj(31)
        pending = rest
        while not d.eof:
            try:
                out = d.decompress(pending, CHUNK)
            except zlib.error as e:
                raise CompressionError(f"gzip: {e}") from None
            if out:
                yield out
            elif not d.eof and not d.unconsumed_tail:
                raise CompressionError("gzip: truncated stream")
            pending = d.unconsumed_tail
        rest = d.unused_data
        if not rest:
            return


def _snappy_chunks(data: bytes) -> Iterator[bytes]:
    if not data.startswith(XERIAL_MAGIC):
        yield _raw_snappy(data, DEFAULT_MAX_OUTPUT, DEFAULT_MAX_OUTPUT)
        return
    for block in _xerial_blocks(data):
        chunk = _raw_snappy(block, DEFAULT_MAX_OUTPUT, DEFAULT_MAX_OUTPUT)
        if chunk:
            yield chunk


def _lz4_chunks(data: bytes, magic: int) -> Iterator[bytes]:
    frame = bytearray(data)
    if magic == 0:  # Kafka ignores the header checksum for magic 0 (module docstring)
        frame[_lz4_descriptor_end(frame)] = lz4_header_checksum(bytes(frame), broken=False)
    d = lz4.frame.LZ4FrameDecompressor()
    pending = bytes(frame)
    while not d.eof:
        try:
            out = d.decompress(pending, max_length=CHUNK)
        except RuntimeError as e:
            raise CompressionError(f"lz4: {e}") from None
        pending = b""
        if out:
            yield out
        elif d.needs_input and not d.eof:
            raise CompressionError("lz4: truncated frame")


def _zstd_chunks(data: bytes) -> Iterator[bytes]:
    # Fed 256 input bytes at a time: a zstd block of 128 KiB can be described in 4 bytes, so one
    # step yields at most 64 such blocks (8 MiB), whatever the frame claims.
    rest = data
    while rest:  # concatenated frames
        d = zstandard.ZstdDecompressor().decompressobj()
        pos = 0
        try:
            while not d.eof and pos < len(rest):
                out = d.decompress(rest[pos : pos + 256])
                pos += 256
                if out:
                    yield out
        except zstandard.ZstdError as e:
            raise CompressionError(f"zstd: {e}") from None
        if not d.eof:
            raise CompressionError("zstd: truncated frame")
        rest = d.unused_data + rest[pos:]
