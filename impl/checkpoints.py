"""Checkpoint files through the storage protocol (spec §6.5): read with Java's rules, written the
atomic way — ``<file>.tmp`` written and fsynced, renamed over ``<file>``, parent directory fsynced.

An independent scanner (the model parses with regular expressions): lines are cut at \\n, \\r or
\\r\\n, fields at runs of Java whitespace.  Entries are written sorted by key (Kafka writes map
order, which is unspecified).
"""

from __future__ import annotations

from impl.storage import Storage

_SPACE = " \t\n\x0b\f\r"


class CheckpointError(ValueError):
    def __init__(self, kind: str, reason: str, file: str, line: int, detail: str):
        self.kind, self.reason, self.file, self.line, self.detail = kind, reason, file, line, detail
        super().__init__(f"{file}: line {line}: {kind} ({reason}): {detail}")


def _split_lines(text: str) -> list[str]:
    out, start, i, n = [], 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n" or c == "\r":
            out.append(text[start:i])
            i += 2 if c == "\r" and i + 1 < n and text[i + 1] == "\n" else 1
            start = i
        else:
            i += 1
    if start < n:
        out.append(text[start:])
    return out


def _fields(line: str) -> list[str]:
    out, current, leading = [], [], True
    for c in line:
        if c in _SPACE:
            if current or leading:
                out.append("".join(current))
                current, leading = [], False
        else:
            current.append(c)
            leading = False
    if current:
        out.append("".join(current))
    while out and out[-1] == "":
        out.pop()
    return out


def _int(text: str, bits: int) -> int | None:
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    value = int(text)
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


def parse(data: bytes, file: str, width: int) -> list[list[int | str]]:
    """Entries as field lists (offsets: [topic, partition, offset]; epochs: [epoch, offset])."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckpointError(
            "IOException", "not-utf8", file, bytes(data)[: e.start].count(b"\n") + 1, "Input length = 1"
        ) from None
    lines = _split_lines(text)
    if not lines:
        return []
    version = _int(lines[0], 32)
    if version is None:
        raise CheckpointError(
            "IOException", "malformed-line", file, 1, f"Malformed line in checkpoint file: {lines[0]}"
        )
    if version != 0:
        raise CheckpointError(
            "IOException", "unrecognised-version", file, 1, f"Unrecognised version:{version}, expected version: 0"
        )
    if len(lines) < 2:
        return []
    count = _int(lines[1], 32)
    if count is None:
        raise CheckpointError(
            "IOException", "malformed-line", file, 2, f"Malformed line in checkpoint file: {lines[1]}"
        )
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        fields = _fields(line)
        if len(fields) != width:
            raise CheckpointError(
                "IOException", "malformed-line", file, number, f"Malformed line in checkpoint file: {line}"
            )
        numeric = fields[1:] if width == 3 else fields
        bits = [32, 64] if width == 3 else [32, 64]
        values = []
        for text, b in zip(numeric, bits, strict=True):
            value = _int(text, b)
            if value is None:
                raise CheckpointError(
                    "NumberFormatException", "bad-number", file, number, f'For input string: "{text}"'
                )
            values.append(value)
        entries.append(([fields[0]] if width == 3 else []) + values)
    if len(entries) != count:
        raise CheckpointError(
            "IOException",
            "entry-count",
            file,
            len(lines),
            f"Expected [{count}] entries but found only [{len(entries)}]",
        )
    return entries


def _read_file(storage: Storage, path: str) -> bytes:
    if not storage.exists(path):
        return b""
    f = storage.open(path)
    try:
        return f.read(0, f.size())
    finally:
        f.close()


def read_offsets(storage: Storage, path: str) -> dict[tuple[str, int], int]:
    return {(t, p): o for t, p, o in parse(_read_file(storage, path), path, 3)}


def read_epochs(storage: Storage, path: str) -> list[tuple[int, int]]:
    return [(e, o) for e, o in parse(_read_file(storage, path), path, 2)]


def write_atomically(storage: Storage, path: str, lines: list[str]) -> None:
    """CheckpointFile.write + atomicMoveWithFallback: temp, fsync, rename, directory fsync."""
    text = f"0\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    tmp = path + ".tmp"
    f = storage.open(tmp, create=True)
    try:
        f.truncate(0)
        f.write_at(0, text.encode("utf-8"))
        f.fsync()
    finally:
        f.close()
    storage.rename(tmp, path)
    storage.fsync_dir(path.rsplit("/", 1)[0] or "/")


def write_offsets(storage: Storage, path: str, entries: dict[tuple[str, int], int]) -> None:
    write_atomically(storage, path, [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())])


def write_epochs(storage: Storage, path: str, entries) -> None:
    write_atomically(storage, path, [f"{e} {o}" for e, o in entries])
