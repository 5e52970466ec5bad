"""Zigzag varints as Kafka writes them in v2 records (spec §1.6, ``ByteUtils``).

Zigzag maps signed to unsigned (0→0, −1→1, 1→2 …), then unsigned base-128 groups, least significant
first, high bit = "more bytes follow".  An int32 varint may use at most 5 bytes, an int64 varlong at
most 10; more is an error (IllegalArgumentException in Kafka, surfaced as an invalid record).
"""

from __future__ import annotations


class VarintError(ValueError):
    """Malformed or truncated varint."""


class VarintTruncated(VarintError):
    """The buffer ended inside the varint (Kafka: BufferUnderflowException)."""


class VarintTooLong(VarintError):
    """More than 5 (int32) or 10 (int64) bytes (Kafka: IllegalArgumentException)."""


def java_long(n: int) -> int:
    """Java long arithmetic: ``n`` wrapped into 64 bits (two's complement)."""
    return (n + 2**63) % 2**64 - 2**63


def zigzag(n: int, bits: int) -> int:
    return (n << 1) ^ (n >> (bits - 1))


def unzigzag(u: int) -> int:
    return (u >> 1) ^ -(u & 1)


def encode_varint(n: int, bits: int = 32) -> bytes:
    """Encode a signed int32 (bits=32) or int64 (bits=64) as a zigzag varint."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= n <= hi:
        raise ValueError(f"{n} does not fit a signed int{bits}")
    u = zigzag(n, bits) & ((1 << bits) - 1)
    out = bytearray()
    while True:
        if u < 0x80:
            out.append(u)
            return bytes(out)
        out.append((u & 0x7F) | 0x80)
        u >>= 7


def encode_varlong(n: int) -> bytes:
    return encode_varint(n, 64)


def decode_varint(buf: bytes, pos: int, bits: int = 32) -> tuple[int, int]:
    """Decode a zigzag varint at ``pos``; return (value, next position).

    Raises VarintError if the buffer ends first or the encoding is longer than Kafka allows.
    """
    max_bytes = 5 if bits == 32 else 10
    u = 0
    for i in range(max_bytes):
        if pos + i >= len(buf):
            raise VarintTruncated("buffer ended inside a varint")
        b = buf[pos + i]
        u |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            # Kafka accumulates into a 32/64-bit register: excess high bits are dropped.
            u &= (1 << bits) - 1
            return unzigzag(u), pos + i + 1
    raise VarintTooLong(f"varint longer than {max_bytes} bytes")


def decode_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    return decode_varint(buf, pos, 64)
