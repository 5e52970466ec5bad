"""``klc dump`` for the files of a log dir that hold no record batches: producer snapshots, the text
checkpoints, ``partition.metadata``, ``meta.properties`` and KRaft's ``quorum-state``.

Each kind is decoded by its own format with Kafka's verdict on bad content, as Kafka's reader would
give it (docs/dump.md): the entries read, then one line naming the file, the line or byte position
and the reason.  A file is read whole but never more than :data:`MAX_BYTES`: none of these is
larger in a broker's dir.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Callable, Iterator

from model.checkpoints import CheckpointError, parse_epochs, parse_offsets
from model.producer_state import CorruptSnapshot, parse, snapshot_offset
from operator_tools import files
from operator_tools.dump import DumpIOError, DumpOptions, check_regular_file

MAX_BYTES = 64 << 20  # above a snapshot of Kafka's 1,000,000-entry bound (42 MB) and any checkpoint

OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
STATE_FILES = (*OFFSET_CHECKPOINTS, EPOCH_CHECKPOINT, "partition.metadata", "meta.properties", "quorum-state")


def dump_state_file(path: str, options: DumpOptions, emit: Callable[[str], None], name: str | None = None) -> None:
    """Dump ``path``, a file whose kind ``name`` gives (its name without a .deleted, .cleaned or
    .swap suffix; by default the file's own name).  Raises DumpIOError only."""
    name = name or os.path.basename(path)
    data = _read(path)
    lines = _snapshot_lines if name.endswith(".snapshot") else _BY_NAME[name]
    if not options.as_json:
        emit(f"Dumping {path}")
    for kind, fields in lines(path, name, data):
        emit(json.dumps({"type": kind, "file": path, **fields}) if options.as_json else _text(kind, fields))


def _read(path: str) -> bytes:
    check_regular_file(path)
    try:
        size = files.size(path)
        if size > MAX_BYTES:
            raise DumpIOError(f"cannot read {path}: {size} bytes, more than any such file holds ({MAX_BYTES})")
        return files.read(path, MAX_BYTES + 1)
    except OSError as e:
        raise DumpIOError(f"cannot read {path}: {e.strerror or e}") from None


def _text(kind: str, fields: dict) -> str:
    if kind == "error":
        where = f"line {fields['line']}" if "line" in fields else f"byte position {fields['position']}"
        return f"Found {fields['what']} in {fields['in']} at {where}: {fields['kind']} ({fields['reason']}): {fields['detail']}"
    if kind == "summary":
        return fields["text"]
    return " ".join(f"{k}: {v}" for k, v in fields.items())


def _error(path: str, what: str, kind: str, reason: str, detail: str, **where) -> tuple[str, dict]:
    fields = {"what": what, "in": path, **where, "kind": kind, "reason": reason, "detail": detail}
    return "error", fields


# --- producer snapshots (docs/producer-state.md, rules 2–4, 34–35) -------------------------------------


def _snapshot_lines(path: str, name: str, data: bytes) -> Iterator[tuple[str, dict]]:
    try:
        offset = snapshot_offset(name)
    except ValueError as e:  # a name Kafka cannot parse fails the partition's load (rule 34)
        yield _error(path, "a snapshot name", "NumberFormatException", "snapshot-name", str(e), position=0)
        return
    yield "summary", {"text": f"Producer state snapshot at offset {offset}"}
    try:
        entries = parse(data)
    except CorruptSnapshot as e:
        yield _error(path, "a corrupt snapshot", "CorruptSnapshotException", _reason(str(e)), str(e), position=0)
        yield "summary", {"text": "Kafka's load deletes this snapshot and reads the next older one (rule 35)"}
        return
    for pid, epoch, seq, last, delta, timestamp, coordinator, txn in entries:
        yield "producer", {
            "producerId": pid, "producerEpoch": epoch, "coordinatorEpoch": coordinator,
            "currentTxnFirstOffset": txn, "lastTimestamp": timestamp, "lastSequence": seq,
            "lastOffset": last, "offsetDelta": delta,
        }  # fmt: skip
    yield "summary", {"text": _count(len(entries), "producer")}


def _reason(message: str) -> str:
    if "CRC" in message:
        return "crc-mismatch"
    return "unknown-version" if "version" in message else "schema"


# --- text checkpoints (§6.5) ----------------------------------------------------------------------------


def _checkpoint_lines(parse, kind: str, fields, unit: str, verdict: str):
    """The lines of a text checkpoint: each entry ``parse`` reads as ``kind`` with ``fields(entry)``,
    or the line Kafka refuses and ``verdict``, what its load then does."""

    def lines(path: str, name: str, data: bytes) -> Iterator[tuple[str, dict]]:
        try:
            entries = list(parse(data, name))
        except CheckpointError as e:
            yield _error(path, "an unreadable checkpoint", e.kind, e.reason, e.detail, line=e.line)
            yield "summary", {"text": verdict}
            return
        for entry in entries:
            yield kind, fields(entry)
        yield "summary", {"text": _count(len(entries), unit)}

    return lines


_offsets_lines = _checkpoint_lines(
    lambda data, name: parse_offsets(data, name).items(), "offset",
    lambda e: {"topic": e[0][0], "partition": e[0][1], "offset": e[1]}, "partition",
    "Kafka's load takes this log dir offline (§6.6)",
)  # fmt: skip
_epochs_lines = _checkpoint_lines(
    parse_epochs, "epoch", lambda e: {"epoch": e[0], "startOffset": e[1]}, "epoch",
    "Kafka's load of this partition fails and takes its log dir offline (§6.6)",
)  # fmt: skip


# --- partition.metadata, meta.properties, quorum-state --------------------------------------------------


def _partition_metadata_lines(path: str, name: str, data: bytes) -> Iterator[tuple[str, dict]]:
    """PartitionMetadataFile: ``version: 0`` then ``topic_id: <Uuid>`` (22 characters of base64url,
    16 bytes)."""
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        yield _error(path, "unreadable metadata", "IOException", "malformed-input", str(e), position=e.start)
        return
    fields = [line.split(": ", 1) for line in lines[:2]]
    if len(fields) < 2 or any(len(f) != 2 for f in fields) or [f[0] for f in fields] != ["version", "topic_id"]:
        yield _error(
            path, "unreadable metadata", "IOException", "format", "expected 'version: 0' then 'topic_id: ID'", line=1
        )
        return
    if fields[0][1] != "0":
        yield _error(
            path, "unreadable metadata", "IOException", "version", f"unrecognized version {fields[0][1]!r}", line=1
        )
        return
    topic_id = fields[1][1]
    if not _is_uuid(topic_id):
        yield _error(
            path,
            "unreadable metadata",
            "IllegalArgumentException",
            "topic-id",
            f"not a Uuid: {topic_id[:40]!r}",
            line=2,
        )
        return
    yield "metadata", {"version": 0, "topic_id": topic_id}


def _is_uuid(text: str) -> bool:
    if len(text) != 22:
        return False
    try:
        return len(base64.urlsafe_b64decode(text + "==")) == 16
    except (binascii.Error, ValueError):
        return False


def _properties_lines(path: str, name: str, data: bytes) -> Iterator[tuple[str, dict]]:
    """java.util.Properties in ISO-8859-1: ``key=value`` or ``key: value``, ``#``/``!`` comments."""
    for number, line in enumerate(data.decode("latin-1").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        cut = min((i for i in (stripped.find("="), stripped.find(":")) if i >= 0), default=len(stripped))
        yield "property", {"key": stripped[:cut].strip(), "value": stripped[cut + 1 :].strip(), "line": number}


class _OutOfRange(ValueError):
    def __init__(self, digits: str):
        super().__init__(digits)
        self.digits = digits


def _long(digits: str) -> int:
    """An integer of quorum-state's JSON: Kafka reads its fields as Java ints and longs (Jackson
    refuses a number out of range); a longer digit string is refused before Python converts it."""
    if len(digits.lstrip("-")) > 19 or not -(2**63) <= int(digits) < 2**63:
        raise _OutOfRange(digits)
    return int(digits)


def _quorum_state_lines(path: str, name: str, data: bytes) -> Iterator[tuple[str, dict]]:
    try:
        text = data.decode("utf-8")
        state = json.loads(text, parse_int=_long)
    except _OutOfRange as e:
        at = len(text[: text.find(e.digits)].encode("utf-8"))
        detail = f"an integer of {len(e.digits.lstrip('-'))} digits, out of the range of a 64-bit long"
        yield _error(path, "unreadable quorum state", "IOException", "number-out-of-range", detail, position=at)
        return
    except UnicodeDecodeError as e:
        yield _error(path, "unreadable quorum state", "IOException", "malformed-input", str(e), position=e.start)
        return
    except json.JSONDecodeError as e:
        yield _error(path, "unreadable quorum state", "IOException", "json", e.msg, position=e.pos)
        return
    if not isinstance(state, dict):
        yield _error(path, "unreadable quorum state", "IOException", "json", "not a JSON object", position=0)
        return
    for key, value in state.items():
        yield "quorum-state", {"key": key, "value": json.dumps(value)[:200]}


_BY_NAME = {
    **{n: _offsets_lines for n in OFFSET_CHECKPOINTS},
    EPOCH_CHECKPOINT: _epochs_lines,
    "partition.metadata": _partition_metadata_lines,
    "meta.properties": _properties_lines,
    "quorum-state": _quorum_state_lines,
}


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
