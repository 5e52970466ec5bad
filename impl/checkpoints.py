"""Checkpoint files through the storage protocol (spec §6.5).

Reading mirrors ``CheckpointFile.read``: a cursor hands out lines the way ``BufferedReader.readLine``
does (ends at ``\\n``, ``\\r`` or ``\\r\\n``), the header and the entries are consumed one line at a
time, fields are cut at runs of Java whitespace (`` \\t\\n\\x0b\\f\\r``; a leading run gives an empty
first field).  Errors are :class:`CheckpointError` with Kafka's exception class as ``kind``:
IOException (undecodable UTF-8, malformed line, unrecognised version, entry count), NumberFormatException
(a bad number inside an entry), IllegalArgumentException (a negative count, from ``new
ArrayList<>(count)``), and the 1-based ``line`` (the count line for a count mismatch).

Writing is ``CheckpointFile.write`` + ``Utils.atomicMoveWithFallback``: ``<file>.tmp`` created or
truncated and written, fsynced, closed, renamed over ``<file>``, parent directory fsynced.
"""

from __future__ import annotations

from impl.names import parse_java_number, quoted_input
from impl.storage import Storage

_WHITESPACE = str.maketrans("\t\x0b\f\r\n", "     ")

#: Kafka's message quotes the malformed line whole; a line of megabytes (a damaged file's zeros)
#: is quoted by its first characters and its length, so that an error stays one readable line.
SHOWN_LINE_CHARS = 256


def shown_line(line: str) -> str:
    if len(line) <= SHOWN_LINE_CHARS:
        return line
    return f"{line[:SHOWN_LINE_CHARS]}... ({len(line)} characters)"


class CheckpointError(ValueError):
    def __init__(self, kind: str, reason: str, file: str, line: int, detail: str):
        self.kind, self.reason, self.file, self.line, self.detail = kind, reason, file, line, detail
        super().__init__(f"{file}, line {line}: {kind} ({reason}): {detail}")


class _LineReader:
    """``BufferedReader.readLine`` over a string; ``number`` is the 1-based number of the last line."""

    def __init__(self, text: str):
        self.text, self.pos, self.number = text, 0, 0
        self._cr = self._lf = -2  # cached positions of the next '\r' / '\n' (-1: none left)

    def read_line(self) -> str | None:
        text, pos = self.text, self.pos
        if pos >= len(text):
            return None
        if self._lf != -1 and self._lf < pos:
            self._lf = text.find("\n", pos)
        if self._cr != -1 and self._cr < pos:
            self._cr = text.find("\r", pos)
        ends = [e for e in (self._lf, self._cr) if e >= 0]
        end = min(ends) if ends else len(text)
        self.pos = end + (2 if text.startswith("\r\n", end) else 1)
        self.number += 1
        return text[pos:end]


def _fields(line: str) -> list[str]:
    """Java's ``\\s+`` split: no separator → the line itself; trailing empty fields dropped."""
    parts = line.translate(_WHITESPACE).split(" ")
    if len(parts) == 1:
        return parts
    fields = [p for p in parts if p]
    return [""] + fields if fields and parts[0] == "" else fields


def _decode(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        head = data[: e.start].decode("utf-8")
        line = head.count("\n") + head.count("\r") - head.count("\r\n") + 1
        raise CheckpointError(
            "IOException", "malformed-input", file, line, f"Input length = {e.end - e.start}"
        ) from None


def _malformed(file: str, number: int, line: str) -> CheckpointError:
    return CheckpointError(
        "IOException", "malformed-line", file, number, f"Malformed line in checkpoint file [{file}]: {shown_line(line)}"
    )


def _scan(data: str | bytes, file: str, width: int):
    """Yields each entry's fields, with a number converter bound to its line."""
    reader = _LineReader(data if isinstance(data, str) else _decode(bytes(data), file))

    def header() -> int | None:
        line = reader.read_line()
        if line is None:
            return None
        value = parse_java_number(line, 32)
        if value is None:
            raise _malformed(file, reader.number, line)
        return value

    version = header()
    if version is None:
        return
    if version != 0:
        raise CheckpointError(
            "IOException",
            "unrecognised-version",
            file,
            1,
            f"Unrecognised version:{version}, expected version: 0 in checkpoint file at: {file}",
        )
    count = header()
    if count is None:
        return
    if count < 0:
        raise CheckpointError("IllegalArgumentException", "negative-count", file, 2, f"Illegal Capacity: {count}")
    found = 0
    while (line := reader.read_line()) is not None:
        fields = _fields(line)
        if len(fields) != width:
            raise _malformed(file, reader.number, line)
        found += 1
        yield fields, _Numbers(file, reader.number)
    if found != count:
        raise CheckpointError(
            "IOException",
            "entry-count",
            file,
            2,
            f"Expected [{count}] entries in checkpoint file [{file}], but found only [{found}]",
        )


class _Numbers:
    def __init__(self, file: str, line: int):
        self.file, self.line = file, line

    def __call__(self, text: str, bits: int) -> int:
        value = parse_java_number(text, bits)
        if value is None:
            raise CheckpointError("NumberFormatException", "number-format", self.file, self.line, quoted_input(text))
        return value


def parse_offsets(data: str | bytes, file: str = "<checkpoint>") -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for (topic, partition, offset), number in _scan(data, file, 3):
        key = (topic, number(partition, 32))
        out[key] = number(offset, 64)
    return out


def parse_epochs(data: str | bytes, file: str = "<checkpoint>") -> list[tuple[int, int]]:
    return [(number(epoch, 32), number(start, 64)) for (epoch, start), number in _scan(data, file, 2)]


def render_offsets(entries: dict[tuple[str, int], int]) -> str:
    """Entries sorted by (topic, partition): Kafka writes its map's iteration order, which is unspecified."""
    return _render([f"{t} {p} {o}" for (t, p), o in sorted(entries.items())])


def render_epochs(entries) -> str:
    return _render([f"{e} {o}" for e, o in entries])


def _render(lines: list[str]) -> str:
    return f"0\n{len(lines)}\n" + "".join(line + "\n" for line in lines)


#: The largest checkpoint file read.  Kafka reads one whole, a String per line, into its heap (a
#: broker's default is 1 GiB): a file of GiBs (a sparse tail a damaged disk left) ends its load with
#: an OutOfMemoryError.  Past this size the file is refused as too large, naming it, instead: a loader's
#: memory stays bounded (a few times this, for the text and its lines) whatever the file holds.
MAX_CHECKPOINT_BYTES = 64 << 20


def read_bytes(storage: Storage, path: str) -> bytes:
    """The whole file; a missing file reads as empty; CheckpointError past MAX_CHECKPOINT_BYTES."""
    if not storage.exists(path):
        return b""
    f = storage.open(path)
    try:
        size, chunks, done = f.size(), [], 0
        if size > MAX_CHECKPOINT_BYTES:
            raise CheckpointError(
                "OutOfMemoryError", "too-large", path, 1,
                f"{size} bytes: a checkpoint file is read whole, and this one is over {MAX_CHECKPOINT_BYTES}",
            )  # fmt: skip
        while done < size:
            chunk = f.read(done, size - done)
            if not chunk:
                break
            chunks.append(chunk)
            done += len(chunk)
        return b"".join(chunks)
    finally:
        f.close()


def read_offsets(storage: Storage, path: str) -> dict[tuple[str, int], int]:
    """An offset checkpoint file; a missing file reads as empty."""
    return parse_offsets(read_bytes(storage, path), path)


def read_epochs(storage: Storage, path: str) -> list[tuple[int, int]]:
    """A leader-epoch checkpoint file; a missing file reads as empty."""
    return parse_epochs(read_bytes(storage, path), path)


def write_text(storage: Storage, path: str, text: str, sync: bool = True) -> None:
    """§6.5 steps 1–4: ``<path>.tmp`` created/truncated and written, fsynced, closed, renamed over
    ``<path>``, the parent directory fsynced.  ``sync=False`` is Kafka's ``write(entries, false)``:
    neither fsync happens.  An error leaves ``<path>`` as it was (the temp file may remain)."""
    tmp = path + ".tmp"
    f = storage.open(tmp, create=True)
    try:
        f.truncate(0)
        f.write_at(0, text.encode("utf-8"))
        if sync:
            f.fsync()
    finally:
        f.close()
    storage.rename(tmp, path)
    if sync:
        parent = path.rpartition("/")[0] if "/" in path else "."
        storage.fsync_dir(parent or "/")


def write_offsets(storage: Storage, path: str, entries: dict[tuple[str, int], int], sync: bool = True) -> None:
    """Entries in (topic, partition) order (Kafka's order is its map's, unspecified)."""
    write_text(storage, path, render_offsets(entries), sync)


def write_epochs(storage: Storage, path: str, entries, sync: bool = True) -> None:
    """Entries in the order given (the cache's order: increasing epochs)."""
    write_text(storage, path, render_epochs(entries), sync)
