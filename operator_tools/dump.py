"""``klc dump``: what is in a ``.log`` file, modelled on Kafka's ``kafka-dump-log.sh``.

The shallow walk is the implementation's zero-copy :class:`impl.file_records.BatchScan` (so a
multi-gigabyte segment is mmapped, not read into memory); record-level decoding for
``--deep-iteration``/``--print-data-log`` is the model's.  The walk stops where Kafka's recovery
would: the valid prefix is printed, then one line naming the file, byte position and reason.
"""

from __future__ import annotations

import base64
import codecs
import json
import mmap
import os
import stat
from collections.abc import Callable, Iterator

import attrs

from impl.file_records import CORRUPT, SHORT_TAIL, TORN, BatchHeader, BatchScan
from model import compression
from model.errors import RecordFormatError
from model.records import CONTROL_BIT, DELETE_HORIZON_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, Batch, wrap_sequence
from operator_tools import files
from operator_tools.dump_decoders import (
    DECODERS,
    PIECE,
    NotDecoded,
    hex_pieces,
    not_decoded,
    printable,
    printable_pieces,
)
from operator_tools.dump_topics import TOPIC_DECODERS


@attrs.frozen
class DumpOptions:
    deep_iteration: bool = False
    print_data_log: bool = False
    as_json: bool = False
    index_sanity_check: bool = False
    verify_index_only: bool = False
    max_bytes: int | None = None  # record files: only the batches wholly within the first N bytes
    skip_record_metadata: bool = False  # text: record lines show only key and payload
    key_decoder: str = "string"  # a name of dump_decoders.DECODERS
    value_decoder: str = "string"
    topic_decoder: str | None = None  # a name of dump_topics.TOPIC_DECODERS: key and value together

    @property
    def decodes(self) -> bool:
        """Whether keys and values are shown otherwise than as text (JSON: ``*_decoded`` fields)."""
        return self.topic_decoder is not None or (self.key_decoder, self.value_decoder) != ("string", "string")

    @property
    def deep(self) -> bool:
        return self.deep_iteration or self.print_data_log


class DumpIOError(Exception):
    """The file could not be opened or read (the only failure that changes the exit status)."""


def check_regular_file(path: str) -> None:
    """DumpIOError unless ``path`` is a regular file (following links): a FIFO would block a
    reader forever, a directory or a device is no segment."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise DumpIOError(f"cannot read {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a special file"
        raise DumpIOError(f"cannot read {path}: not a regular file ({kind})")


def _open_buffer(path: str):
    """A read-only mmap of ``path`` (or ``b""`` for an empty file); caller closes what it gets."""
    check_regular_file(path)
    try:
        return files.view(path)
    except OSError as e:
        raise DumpIOError(f"cannot read {path}: {e.strerror or e}") from None


def base_offset_from_name(path: str) -> int | None:
    """§2.1: the characters before the first ``.`` of the file name, as a signed 64-bit decimal."""
    name = os.path.basename(path)
    prefix = name.split(".", 1)[0]
    try:
        value = int(prefix, 10)
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 and prefix.lstrip("+-").isdigit() else None


# --- derived header facts (v2 attribute bits of §1.3; legacy of §1.7) -----------------------------


def _attr_byte(h: BatchHeader) -> int:
    return h.attributes & 0xFF


def timestamp_type(h: BatchHeader) -> str:
    if h.magic == 0 or (h.magic < 0):
        return "NoTimestampType"
    return "LogAppendTime" if _attr_byte(h) & TIMESTAMP_TYPE_BIT else "CreateTime"


def codec_name(h: BatchHeader) -> str:
    codec = _attr_byte(h) & 0x07
    return compression.CODEC_NAMES.get(codec, f"unknown({codec})")


def header_dict(h: BatchHeader) -> dict:
    v2 = h.magic >= 2
    attrs_ = _attr_byte(h)
    d = h._asdict()
    d.update(
        base_offset=h.offset if v2 else None,
        count=h.records_count if v2 else None,
        last_sequence=wrap_sequence(h.base_sequence, h.last_offset_delta) if v2 else -1,
        codec=codec_name(h),
        timestamp_type=timestamp_type(h),
        is_transactional=v2 and bool(attrs_ & TRANSACTIONAL_BIT),
        is_control=v2 and bool(attrs_ & CONTROL_BIT),
        delete_horizon_ms=h.base_timestamp if v2 and attrs_ & DELETE_HORIZON_BIT else None,
        is_valid=True,
    )
    return d


def _json_bytes(b: bytes | None) -> dict | None:
    if b is None:
        return None
    out = {"base64": base64.b64encode(b).decode("ascii")}
    try:
        out["utf8"] = b.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return out


def _json_string_pieces(texts) -> Iterator[str]:
    """A JSON string of the concatenated ``texts``, a piece each (ASCII-escaped, as json.dumps)."""
    yield '"'
    for text in texts:
        yield json.dumps(text)[1:-1]
    yield '"'


def _json_bytes_pieces(b) -> Iterator[str]:
    """:func:`_json_bytes` in pieces of ``PIECE`` input bytes: a 250 MiB value is never held as text."""
    if b is None or len(b) <= PIECE:
        yield json.dumps(_json_bytes(None if b is None else bytes(b)))
        return
    view = memoryview(b)
    step = PIECE // 3 * 3  # whole base64 quanta: the pieces concatenate to one encoding
    yield '{"base64": '
    yield from _json_string_pieces(
        base64.b64encode(view[at : at + step]).decode("ascii") for at in range(0, len(view), step)
    )
    try:
        for _ in text_pieces_strict(view):
            pass
    except UnicodeDecodeError:
        yield "}"
        return
    yield ', "utf8": '
    yield from _json_string_pieces(text_pieces_strict(view))
    yield "}"


def text_pieces_strict(view) -> Iterator[str]:
    """The UTF-8 text of ``view`` a piece at a time; UnicodeDecodeError if it is not UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    for at in range(0, len(view), PIECE):
        yield decoder.decode(view[at : at + PIECE], final=at + PIECE >= len(view))


# --- per-batch rendering ----------------------------------------------------------------------


def batch_text(h: BatchHeader) -> str:
    d = header_dict(h)
    tail = (
        f"position: {h.position} {d['timestamp_type']}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
        f"compresscodec: {d['codec']} crc: {h.crc} isvalid: true"
    )
    if h.magic < 2:
        return f"offset: {h.last_offset} {tail}"
    horizon = "OptionalLong.empty" if d["delete_horizon_ms"] is None else f"OptionalLong[{d['delete_horizon_ms']}]"
    return (
        f"baseOffset: {h.offset} lastOffset: {h.last_offset} count: {h.records_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {d['last_sequence']} producerId: {h.producer_id} "
        f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {str(d['is_transactional']).lower()} isControl: {str(d['is_control']).lower()} "
        f"deleteHorizonMs: {horizon} {tail}"
    )


def _decoded(r, options: DumpOptions) -> tuple[object, object]:
    """The record's (key, value) as the chosen decoders read them: a JSON-able value, None for
    null bytes, or the NotDecoded that says why not."""
    if options.topic_decoder is not None:
        return TOPIC_DECODERS[options.topic_decoder](r.key, r.value)
    return _decode(DECODERS[options.key_decoder], r.key), _decode(DECODERS[options.value_decoder], r.value)


def _decode(decoder, b: bytes | None):
    if b is None:
        return None
    try:
        return decoder(b)
    except NotDecoded as e:
        return e


def _shown(value, offset: int) -> str:
    """One decoded key or value on a text line: never a control byte (JSON is ASCII-escaped)."""
    if isinstance(value, NotDecoded):
        return not_decoded(offset, str(value))
    if value is None:
        return "null"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _as_json(value):
    return {"not_decoded": str(value)} if isinstance(value, NotDecoded) else value


def _metadata_text(r, magic: int) -> str:
    key_size = -1 if r.key is None else len(r.key)
    value_size = -1 if r.value is None else len(r.value)
    s = f" offset: {r.offset} {r.timestamp_type}: {r.timestamp} keySize: {key_size} valueSize: {value_size}"
    if magic >= 2:
        keys = ",".join(printable(k) for k, _ in r.headers)
        s += f" sequence: {r.sequence} headerKeys: [{keys}]"
    else:
        s += f" crc: {r.crc} isvalid: {str(r.crc_valid).lower()}"
    return s


def record_text(r, magic: int, options: DumpOptions) -> str:
    return "".join(record_pieces(r, magic, options))


def record_pieces(r, magic: int, options: DumpOptions) -> Iterator[str]:
    """kafka-dump-log's record line in pieces (a key or value of any size is rendered a piece at a
    time); ``--skip-record-metadata`` keeps only the data (a control record's marker is its data)."""
    yield "|" if options.skip_record_metadata else "|" + _metadata_text(r, magic)
    if r.control_type is not None:
        if r.coordinator_epoch is not None:
            yield f" endTxnMarker: {r.control_type} coordinatorEpoch: {r.coordinator_epoch}"
        else:
            yield f" controlType: {r.control_type}"
        return
    if not options.print_data_log:
        return
    if r.key is not None:
        yield " key: "
        yield from _shown_pieces(r, r.key, options.key_decoder, options, 0)
    yield " payload: "
    yield from _shown_pieces(r, r.value, options.value_decoder, options, 1)


def _large(r) -> bool:
    return max(len(r.key or b""), len(r.value or b"")) > PIECE


def _shown_pieces(r, b, decoder: str, options: DumpOptions, which: int) -> Iterator[str]:
    """A key (``which`` 0) or value (1) on a text line: the string and hex decoders streamed."""
    if options.topic_decoder is None and b is not None and decoder in ("string", "hex"):
        yield from (printable_pieces(b) if decoder == "string" else hex_pieces(b))
    else:
        yield _shown(_decoded(r, options)[which], r.offset)


def record_json_pieces(r, options: DumpOptions) -> Iterator[str]:
    """:func:`record_dict` as JSON text in pieces: keys and values of any size streamed."""
    if not options.print_data_log:
        yield json.dumps(record_dict(r, options))
        return
    yield json.dumps(record_dict(r, options, data=False))[:-1]
    yield ', "key": '
    yield from _json_bytes_pieces(r.key)
    yield ', "value": '
    yield from _json_bytes_pieces(r.value)
    headers = [{"key": k.decode("utf-8", errors="replace"), "value": _json_bytes(v)} for k, v in r.headers]
    yield ', "headers": ' + json.dumps(headers)
    if options.decodes and r.control_type is None:
        for which, (name, b, decoder) in enumerate(
            (("key", r.key, options.key_decoder), ("value", r.value, options.value_decoder))
        ):
            yield f', "{name}_decoded": '
            if options.topic_decoder is None and b is not None and decoder in ("string", "hex"):
                yield from _json_string_pieces(printable_pieces(b) if decoder == "string" else hex_pieces(b))
            else:
                yield json.dumps(_as_json(_decoded(r, options)[which]))
    yield "}"


def record_dict(r, options: DumpOptions, data: bool = True) -> dict:
    d = {
        "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": r.timestamp_type,
        "key_size": -1 if r.key is None else len(r.key),
        "value_size": -1 if r.value is None else len(r.value),
        "sequence": r.sequence,
        "header_keys": [k.decode("utf-8", errors="replace") for k, _ in r.headers],
    }
    if r.crc is not None:
        d.update(crc=r.crc, is_valid=r.crc_valid)
    if r.control_type is not None:
        d.update(control_type=r.control_type, coordinator_epoch=r.coordinator_epoch)
    if options.print_data_log and data:
        d.update(
            key=_json_bytes(r.key),
            value=_json_bytes(r.value),
            headers=[{"key": k.decode("utf-8", errors="replace"), "value": _json_bytes(v)} for k, v in r.headers],
        )
        if options.decodes and r.control_type is None:
            key, value = _decoded(r, options)
            d.update(key_decoded=_as_json(key), value_decoded=_as_json(value))
    return d


def _stop_text(path: str, scan: BatchScan) -> str | None:
    if scan.stop == CORRUPT:
        e = scan.error
        return f"Found invalid batch in {path} at byte position {e.position}: {e.kind} ({e.reason}): {e.detail}"
    remaining = scan.end - scan.valid_bytes
    if scan.stop == TORN:
        return (
            f"Found a partial batch at the end of {path} at byte position {scan.valid_bytes}: "
            f"{remaining} bytes present, fewer than its header declares (ignored, as Kafka's iteration does)"
        )
    if scan.stop == SHORT_TAIL:
        return (
            f"Found {remaining} trailing bytes at the end of {path} at byte position {scan.valid_bytes}: "
            "too few for a batch header (ignored, as Kafka's iteration does)"
        )
    return None


def dump_file(path: str, options: DumpOptions, emit: Callable[..., None]) -> None:
    """Dump one file through ``emit`` (one line per call; ``end=""`` for a piece of a line whose
    rest follows).  Raises DumpIOError only."""
    buf = _open_buffer(path)
    try:
        for line in _dump_lines(path, buf, options):
            if isinstance(line, str):
                emit(line)
            else:  # a JSON batch and its records: one line, written as its records are decoded
                for piece in line:
                    emit(piece, end="")
                emit("")
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def _records(buf, h: BatchHeader, errors: list) -> Iterator:
    """The batch's records one at a time (a multi-million-record batch is never held whole); a
    RecordFormatError ends them and is appended to ``errors``."""
    try:
        yield from Batch(h.position, bytes(buf[h.position : h.position + h.size])).iter_records()
    except RecordFormatError as e:
        errors.append(e)


def _json_batch(path: str, buf, h: BatchHeader, options: DumpOptions, errors: list) -> Iterator[str]:
    """The batch object in pieces: its header fields, then each record as it is decoded."""
    d = json.dumps({"type": "batch", "file": path, **header_dict(h)})
    if not options.deep:
        yield d
        return
    yield d[:-1] + ', "records": ['
    for i, r in enumerate(_records(buf, h, errors)):
        if i:
            yield ", "
        yield from record_json_pieces(r, options)
    yield "]}"


def _cut_by_max_bytes(scan: BatchScan, size: int) -> bool:
    """Whether the walk ended at the --max-bytes bound rather than at the file's own end or damage:
    kafka-dump-log reads ``slice(0, maxBytes)``, so a batch running past the bound is not read."""
    return scan.end < size and scan.stop != CORRUPT


def _dump_lines(path: str, buf, options: DumpOptions) -> Iterator:
    scan = BatchScan(buf, 0, options.max_bytes)
    if not options.as_json:
        yield f"Dumping {path}"
        base = base_offset_from_name(path)
        if base is not None:
            yield f"Log starting offset: {base}"
    for h in scan:
        errors: list[RecordFormatError] = []
        if options.as_json:
            yield _json_batch(path, buf, h, options, errors)
            if errors:
                yield json.dumps(_error_dict(path, errors[0], "records"))
            continue
        yield batch_text(h)
        if options.deep:
            for r in _records(buf, h, errors):
                pieces = record_pieces(r, h.magic, options)
                # a large key or value: one line written a piece at a time, else the line itself
                yield pieces if _large(r) and options.print_data_log else "".join(pieces)
        if errors:
            e = errors[0]
            yield f"Found invalid records in {path} at byte position {e.position}: {e.kind} ({e.reason}): {e.detail}"
    cut = _cut_by_max_bytes(scan, len(buf))
    if options.as_json:
        if scan.error is not None:
            yield json.dumps(_error_dict(path, scan.error, "batch"))
        yield json.dumps(
            {"type": "end", "file": path, "stop": "max-bytes" if cut else scan.stop, "valid_bytes": scan.valid_bytes,
             "file_size": len(buf), "batches": scan.batches}
        )  # fmt: skip
    elif cut:
        yield (
            f"Stopped at --max-bytes {options.max_bytes} in {path} at byte position {scan.valid_bytes}: "
            f"the next {len(buf) - scan.valid_bytes} bytes (file size {len(buf)}) not read"
        )
    else:
        line = _stop_text(path, scan)
        if line:
            yield line


def _error_dict(path: str, e, scope: str) -> dict:
    return {
        "type": "error",
        "scope": scope,
        "file": path,
        "position": e.position,
        "kind": e.kind,
        "reason": e.reason,
        "detail": e.detail,
    }
