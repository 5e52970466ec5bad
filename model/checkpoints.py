"""Checkpoint text files (spec §6.5): ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint`` (entries ``topic partition offset``) and ``leader-epoch-checkpoint``
(entries ``epoch startOffset``), version 0.  Pure text in, values out, with Java's reading rules:
lines end at \\n, \\r or \\r\\n (BufferedReader.readLine); fields split on runs of whitespace, a
leading run giving an empty first field (Pattern.split); every line after the count is an entry.
"""

from __future__ import annotations

import re

VERSION = 0
_LINES = re.compile(r"\r\n|\r|\n")
_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")


class CheckpointError(ValueError):
    """``kind``: IOException (malformed file) or NumberFormatException (a bad number in an entry)."""

    def __init__(self, kind: str, reason: str, file: str, line: int, detail: str):
        self.kind, self.reason, self.file, self.line, self.detail = kind, reason, file, line, detail
        super().__init__(f"{file}: line {line}: {kind} ({reason}): {detail}")


def _lines(text: str) -> list[str]:
    parts = _LINES.split(text)
    return parts[:-1] if parts and parts[-1] == "" else parts


def _java_number(text: str, bits: int) -> int | None:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None


def _decode(data, file: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckpointError(
            "IOException", "not-utf8", file, bytes(data)[: e.start].count(b"\n") + 1, "Input length = 1"
        ) from None


def _read(data, file: str, fields: int, convert) -> list:
    lines = _lines(_decode(data, file))
    if not lines:
        return []

    def header(n: int) -> int:
        value = _java_number(lines[n], 32)
        if value is None:
            raise CheckpointError(
                "IOException", "malformed-line", file, n + 1, f"Malformed line in checkpoint file: {lines[n]}"
            )
        return value

    version = header(0)
    if version != VERSION:
        raise CheckpointError(
            "IOException",
            "unrecognised-version",
            file,
            1,
            f"Unrecognised version:{version}, expected version: {VERSION}",
        )
    if len(lines) == 1:
        return []
    count = header(1)
    entries = []
    for n in range(2, len(lines)):
        parts = _WHITESPACE.split(lines[n])
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) != fields:
            raise CheckpointError(
                "IOException", "malformed-line", file, n + 1, f"Malformed line in checkpoint file: {lines[n]}"
            )
        entries.append(convert(parts, file, n + 1))
    if len(entries) != count:
        raise CheckpointError(
            "IOException",
            "entry-count",
            file,
            len(lines),
            f"Expected [{count}] entries but found only [{len(entries)}]",
        )
    return entries


def _number(text: str, bits: int, file: str, line: int) -> int:
    value = _java_number(text, bits)
    if value is None:
        raise CheckpointError("NumberFormatException", "bad-number", file, line, f'For input string: "{text}"')
    return value


def parse_offsets(data, file: str = "<checkpoint>") -> dict[tuple[str, int], int]:
    entries = _read(data, file, 3, lambda p, f, n: ((p[0], _number(p[1], 32, f, n)), _number(p[2], 64, f, n)))
    return dict(entries)


def parse_epochs(data, file: str = "<checkpoint>") -> list[tuple[int, int]]:
    return _read(data, file, 2, lambda p, f, n: (_number(p[0], 32, f, n), _number(p[1], 64, f, n)))


def _render(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in [str(VERSION), str(len(lines)), *lines])


def render_offsets(entries: dict[tuple[str, int], int]) -> str:
    """Entries sorted by (topic, partition): Kafka writes map order, which is unspecified."""
    return _render([f"{t} {p} {o}" for (t, p), o in sorted(entries.items())])


def render_epochs(entries: list[tuple[int, int]]) -> str:
    return _render([f"{e} {o}" for e, o in entries])
