"""How ``klc dump --print-data-log`` shows a record's key and value: printable text, and the
``--key-decoder``/``--value-decoder`` choices (Kafka's tool takes decoder classes:
``StringDecoder``, ``LongDecoder``, ``IntegerDecoder``; ``hex`` stands in for ``DefaultDecoder``,
whose raw bytes are no text).

A decoder maps the bytes to a JSON-able value or raises :class:`NotDecoded` with the reason; the
caller prints the reason with the record's offset.  Nothing here writes a control byte: text that is
not valid, printable UTF-8 is escaped (:func:`printable`).
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Callable, Iterator

# A key or value is rendered this many bytes at a time: what its text costs beyond the record
# itself (docs/dump.md, "Bounded memory")
PIECE = 1 << 20


class NotDecoded(ValueError):
    """The bytes are not what the decoder reads; the message says why."""


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(c: str) -> str:
    if c == "\\":
        return "\\\\"
    if c.isprintable():
        return c
    if c in _SHORT:
        return _SHORT[c]
    return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"


def printable(b: bytes) -> str:
    """The bytes as text that is safe on a terminal: valid UTF-8 of printable characters as it is;
    otherwise every backslash doubled, ``\\t``/``\\n``/``\\r``, ``\\uXXXX`` (``\\UXXXXXXXX``) for
    another non-printable character, and ``\\xNN`` for each byte that is not UTF-8."""
    text = b.decode("utf-8", errors="surrogateescape")  # an invalid byte 0xNN becomes U+DCNN
    if text.isprintable() and "\\" not in text:
        return text
    return _escaped(text)


def _escape(code: int) -> str:
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else _escape_char(chr(code))


# the common escapes in one table (C0 and C1 controls, DEL, backslash, undecodable bytes), so a
# text needing only these is escaped by str.translate rather than a character at a time
_TABLE = {code: _escape(code) for code in (*range(0x20), *range(0x7F, 0xA0), 0x5C, *range(0xDC80, 0xDD00))}


def _escaped(text: str) -> str:
    quick = text.translate(_TABLE)
    if quick.isprintable():
        return quick
    out = []
    for c in text:
        code = ord(c)
        out.append(f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else _escape_char(c))
    return "".join(out)


def text_pieces(b, piece: int = PIECE) -> Iterator[str]:
    """UTF-8 text of ``b`` (surrogate-escaped), ``piece`` bytes at a time: no character is split."""
    view = memoryview(b)
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    for at in range(0, len(view), piece):
        yield decoder.decode(view[at : at + piece], final=at + piece >= len(view))


def printable_pieces(b) -> Iterator[str]:
    """:func:`printable` of ``b`` in pieces of at most ``PIECE`` bytes of input: a 250 MiB value
    costs a piece's text, not a copy of itself in text (two passes: whether any escape is needed
    decides how every piece prints)."""
    if len(b) <= PIECE:
        yield printable(bytes(b))
        return
    clean = all(t.isprintable() and "\\" not in t for t in text_pieces(b))
    for text in text_pieces(b):
        yield text if clean else _escaped(text)


def hex_pieces(b) -> Iterator[str]:
    view = memoryview(b)
    for at in range(0, len(view), PIECE):
        yield view[at : at + PIECE].hex()


def _string(b: bytes) -> str:
    return printable(b)


def _hex(b: bytes) -> str:
    return b.hex()


def _fixed(b: bytes, fmt: str, name: str) -> int:
    size = struct.calcsize(fmt)
    if len(b) != size:
        raise NotDecoded(f"{len(b)} bytes, {name} takes {size}")
    return struct.unpack(fmt, b)[0]


def _long(b: bytes) -> int:
    """Kafka's ``LongDecoder``: an 8-byte big-endian signed integer (Kafka reads the first 8 bytes of
    a longer value and fails on a shorter one; klc requires exactly 8)."""
    return _fixed(b, ">q", "a long")


def _int(b: bytes) -> int:
    """Kafka's ``IntegerDecoder``: a 4-byte big-endian signed integer (exactly 4 bytes)."""
    return _fixed(b, ">i", "an int")


DECODERS: dict[str, Callable[[bytes], object]] = {"string": _string, "hex": _hex, "long": _long, "int": _int}


def not_decoded(offset: int, reason: str) -> str:
    """The marker printed in place of a key or value that does not decode."""
    return f"<not decoded at offset {offset}: {reason}>"
