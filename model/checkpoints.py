"""Checkpoint text files (spec §6.5), as pure text functions.

``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` hold ``topic partition
offset`` entries, ``leader-epoch-checkpoint`` holds ``epoch startOffset`` entries; both version 0::

    0            <- version
    2            <- entry count
    orders 0 5   <- one entry per line, each line ended by "\\n" (BufferedWriter.newLine)
    orders 1 7

Reading follows ``CheckpointFile.read`` and the entry formatters line by line:

- bytes are decoded as strict UTF-8 (``Files.newBufferedReader``): malformed input is an IOException.
  Kafka decodes 8 KiB at a time, so in a larger file a bad line before the bad bytes' 8 KiB block
  would be reported first; here undecodable bytes anywhere win.
- lines end at ``\\n``, ``\\r`` or ``\\r\\n``; a final terminator opens no extra line (``readLine``).
- no line → empty; version not an int → IOException "Malformed line"; version ≠ 0 → IOException
  "Unrecognised version"; only the version line → empty; count not an int → IOException "Malformed
  line"; a negative count → IllegalArgumentException (``new ArrayList<>(count)``; §6.5 is silent).
- every further line is an entry, split on runs of Java whitespace (``\\s+``, ``Pattern.split``: a
  leading run yields an empty first field, trailing empties are dropped); a wrong field count →
  IOException "Malformed line"; a bad partition/epoch (int32) or offset (int64) → NumberFormatException.
- entries read ≠ count → IOException "Expected [n] entries … but found only [m]".
- offsets go into a map, so a repeated (topic, partition) keeps its last offset; epochs stay a list.

(A count near 2^31 makes Kafka's ``new ArrayList<>(count)`` fail with OutOfMemoryError, which depends
on the heap; not modelled.)

Errors: :class:`CheckpointError` with ``kind`` the Java exception, a stable ``reason`` and the 1-based
``line`` (the count line for a count mismatch, the line holding the first undecodable byte for bad
UTF-8).
"""

from __future__ import annotations

import re

from model.names import java_integer, quoted_input

VERSION = 0
IO, NFE, IAE = "IOException", "NumberFormatException", "IllegalArgumentException"
_TERMINATOR = re.compile(r"\r\n|\r|\n")
_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]+")

#: Kafka's message quotes the malformed line whole; a line of megabytes (a damaged file's zeros)
#: is quoted by its first characters and its length, so that an error stays one readable line.
SHOWN_LINE_CHARS = 256


def shown_line(line: str) -> str:
    if len(line) <= SHOWN_LINE_CHARS:
        return line
    return f"{line[:SHOWN_LINE_CHARS]}... ({len(line)} characters)"


class CheckpointError(ValueError):
    """``kind``: IOException, NumberFormatException or IllegalArgumentException (§6.5 rules 2–5)."""

    def __init__(self, kind: str, reason: str, file: str, line: int, detail: str):
        self.kind, self.reason, self.file, self.line, self.detail = kind, reason, file, line, detail
        super().__init__(f"{file}, line {line}: {kind} ({reason}): {detail}")


def _text(data: str | bytes, file: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        before = bytes(data)[: e.start].decode("utf-8")
        line = len(_TERMINATOR.findall(before)) + 1
        raise CheckpointError(IO, "malformed-input", file, line, f"Input length = {e.end - e.start}") from None


def _lines(text: str) -> list[str]:
    lines = _TERMINATOR.split(text)
    return lines[:-1] if lines[-1] == "" else lines  # "a\n" is one line, "" none


def _fields(line: str) -> list[str]:
    """``Pattern.compile("\\\\s+").split(line)``."""
    if not _JAVA_SPACE.search(line):
        return [line]
    fields = _JAVA_SPACE.split(line)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def _read(data: str | bytes, file: str, width: int, entry) -> list:
    lines = _lines(_text(data, file))

    def malformed(n: int) -> CheckpointError:
        return CheckpointError(
            IO, "malformed-line", file, n, f"Malformed line in checkpoint file [{file}]: {shown_line(lines[n - 1])}"
        )

    def header(n: int) -> int:
        value = java_integer(lines[n - 1], 32)
        if value is None:
            raise malformed(n)
        return value

    if not lines:
        return []
    version = header(1)
    if version != VERSION:
        detail = f"Unrecognised version:{version}, expected version: {VERSION} in checkpoint file at: {file}"
        raise CheckpointError(IO, "unrecognised-version", file, 1, detail)
    if len(lines) == 1:
        return []
    count = header(2)
    if count < 0:
        raise CheckpointError(IAE, "negative-count", file, 2, f"Illegal Capacity: {count}")
    entries = []
    for n, line in enumerate(lines[2:], start=3):
        fields = _fields(line)
        if len(fields) != width:
            raise malformed(n)
        entries.append(entry(fields, lambda text, bits, n=n: _number(text, bits, file, n)))
    if len(entries) != count:
        detail = f"Expected [{count}] entries in checkpoint file [{file}], but found only [{len(entries)}]"
        raise CheckpointError(IO, "entry-count", file, 2, detail)
    return entries


def _number(text: str, bits: int, file: str, line: int) -> int:
    value = java_integer(text, bits)
    if value is None:
        raise CheckpointError(NFE, "number-format", file, line, quoted_input(text))
    return value


def parse_offsets(text: str | bytes, file: str = "<checkpoint>") -> dict[tuple[str, int], int]:
    """An offset checkpoint: {(topic, partition): offset}; bytes are decoded as Kafka decodes them."""
    entries = _read(text, file, 3, lambda f, num: ((f[0], num(f[1], 32)), num(f[2], 64)))
    return dict(entries)


def parse_epochs(text: str | bytes, file: str = "<checkpoint>") -> list[tuple[int, int]]:
    """A leader-epoch checkpoint: [(epoch, start offset)] in file order."""
    return _read(text, file, 2, lambda f, num: (num(f[0], 32), num(f[1], 64)))


def _render(lines: list[str]) -> str:
    return "".join(line + "\n" for line in [str(VERSION), str(len(lines)), *lines])


def render_offsets(entries: dict[tuple[str, int], int]) -> str:
    """Sorted by (topic, partition) for determinism; Kafka writes its map's order, which is unspecified."""
    return _render([f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(entries.items())])


def render_epochs(entries: list[tuple[int, int]]) -> str:
    return _render([f"{epoch} {start}" for epoch, start in entries])
