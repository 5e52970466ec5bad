"""``klc dump`` for ``.index``, ``.timeindex`` and ``.txnindex`` files (spec §3, §7.7, §7.8).

Like ``kafka-dump-log.sh``: the entries Kafka reads (an existing file counts as full, §3.1 rule 4),
stopping at the first zero entry as Kafka's tool does; ``--index-sanity-check`` prints Kafka's
verdict; ``--verify-index-only`` compares the entries with the segment's ``.log`` and lists
mismatches.  After the entries, one line says what the implementation recognises in the file (real
entries before a zero-padded tail, or corruption).  Files are opened read-only and never changed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator

from impl.errors import IndexFailure
from impl.index import OffsetIndex, TimeIndex
from impl.index_verify import verify_offset_index, verify_time_index
from impl.storage import OsStorage
from impl.txn_index import TransactionIndex
from operator_tools.dump import DumpIOError, DumpOptions, _open_buffer, base_offset_from_name, check_regular_file

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


def dump_index_file(path: str, options: DumpOptions, emit: Callable[[str], None], name: str | None = None) -> None:
    """Dump an index file; ``name``, its kind's name when the file carries a .deleted, .cleaned or
    .swap suffix."""
    name = name or path
    base = base_offset_from_name(path)
    if base is None:
        raise DumpIOError(f"cannot read {path}: the file name does not start with a base offset (§2.1)")
    check_regular_file(path)
    storage = OsStorage(read_only=True)
    try:
        if name.endswith(".txnindex"):  # streamed: a transaction index may be gigabytes of records
            for line in _txn_lines(path, TransactionIndex(storage, path, base), options):
                emit(line)
            return
        else:
            cls = OffsetIndex if name.endswith(".index") else TimeIndex
            index = cls(storage, path, base, max(os.path.getsize(path), cls.ENTRY_SIZE))
            try:
                lines = list(_index_lines(path, index, options))
            finally:
                index.close_handler()
    except BrokenPipeError:
        raise  # the reader went away (`klc dump X.txnindex | head`): the caller's to handle
    except OSError as e:
        raise DumpIOError(f"cannot read {path}: {e.strerror or e}") from None
    for line in lines:
        emit(line)


def _verdict(check) -> IndexFailure | None:
    try:
        check()
    except IndexFailure as e:
        return e
    return None


def _sanity_lines(path: str, failure: IndexFailure | None, as_json: bool) -> Iterator[str]:
    if as_json:
        d = {"type": "sanity-check", "file": path, "passed": failure is None}
        if failure is not None:
            d.update(kind=failure.kind, reason=failure.reason, detail=failure.detail)
        yield json.dumps(d)
    elif failure is None:
        yield f"{path} passed sanity check."
    else:
        yield f"{path} failed sanity check: {failure.kind} ({failure.reason}): {failure.detail}"


def _index_lines(path: str, index, options: DumpOptions) -> Iterator[str]:
    is_offset = isinstance(index, OffsetIndex)
    if options.index_sanity_check:
        yield from _sanity_lines(path, _verdict(index.kafka_sanity_check), options.as_json)
        return
    if options.verify_index_only:
        yield from _verify_lines(path, index, is_offset, options.as_json)
        return
    if not options.as_json:
        yield f"Dumping {path}"
    shown = 0
    for i in range(index.entries):
        key, value = index.entry(i)
        offset = key if is_offset else value
        if offset == index.base_offset and i > 0:  # Kafka's tool stops at the first zero entry
            break
        shown += 1
        if options.as_json:
            names = ("offset", "position") if is_offset else ("timestamp", "offset")
            yield json.dumps({"type": "index-entry", "file": path, "slot": i, names[0]: key, names[1]: value})
        elif is_offset:
            yield f"offset: {key} position: {value}"
        else:
            yield f"timestamp: {key} offset: {value}"
    summary = {
        "type": "index-summary", "file": path, "file_size": index.length, "kafka_entries": index.entries,
        "shown_entries": shown, "recognition": index.recognition, "real_entries": index.recognised,
        "recognition_detail": index.recognition_detail,
    }  # fmt: skip
    if options.as_json:
        yield json.dumps(summary)
    else:
        detail = f": {index.recognition_detail}" if index.recognition_detail else ""
        yield (
            f"Kafka reads {index.entries} entries from {index.length} bytes and shows {shown} "
            f"(it stops at the first zero entry); recognised: {index.recognised} real entries ({index.recognition}{detail})"
        )


def _verify_lines(path: str, index, is_offset: bool, as_json: bool) -> Iterator[str]:
    head, base = os.path.split(path)
    log_path = os.path.join(head, base.split(".", 1)[0] + ".log")  # the segment's, whatever suffix the index has
    log = _open_buffer(log_path)  # a missing .log is an I/O error (DumpIOError)
    try:
        if is_offset:
            mismatches = verify_offset_index(index, log)
        else:
            offsets_path = path[: path.rindex(".")] + ".index"
            storage = OsStorage(read_only=True)
            if os.path.isfile(offsets_path):
                offsets = OffsetIndex(storage, offsets_path, index.base_offset, max(os.path.getsize(offsets_path), 8))
            else:  # no offset index: every lookup starts at position 0
                offsets = _NoOffsetIndex(index.base_offset)
            try:
                mismatches = verify_time_index(index, offsets, log)
            finally:
                if isinstance(offsets, OffsetIndex):
                    offsets.close_handler()
    finally:
        if hasattr(log, "close"):
            log.close()
    for m in mismatches:
        if as_json:
            yield json.dumps({"type": "mismatch", "file": path, **m._asdict()})
        elif m.problem in ("offset mismatch", "no batch at this position"):
            yield f"Mismatch in {path} entry {m.entry}: index offset: {m.key} position: {m.value}, log offset: {m.found} ({m.problem})"
        elif m.problem == "timestamp mismatch":
            yield f"Mismatch in {path} entry {m.entry}: index timestamp: {m.key}, log timestamp: {m.found}"
        elif m.problem == "timestamp out of order":
            yield f"Out of order timestamp in {path} entry {m.entry}: index timestamp: {m.key}, previously indexed timestamp: {m.found}"
        else:
            yield f"Offset not found in {path} entry {m.entry}: indexed offset: {m.value}, found log offset: {m.found}"
    if as_json:
        yield json.dumps({"type": "verify-summary", "file": path, "log": log_path, "mismatches": len(mismatches)})
    else:
        yield f"{path}: {len(mismatches)} mismatches against {log_path}"


class _NoOffsetIndex:
    def __init__(self, base_offset: int):
        self.base_offset = base_offset

    def lookup(self, target: int) -> tuple[int, int]:
        return self.base_offset, 0


def _txn_lines(path: str, txn: TransactionIndex, options: DumpOptions) -> Iterator[str]:
    """The dump of a transaction index, line by line as the records are read (one read of
    ``READ_RECORDS`` records held at a time): the first line comes at once whatever the file's size.
    Kafka's tool reads every record before it prints one (allAbortedTxns), so a bad record prints
    none there; here the records before it print, then the error line with its byte position, as
    for a ``.log`` (docs/dump.md)."""
    try:
        if options.index_sanity_check:
            yield from _sanity_lines(path, _verdict(txn.sanity_check), options.as_json)
            return
        if options.verify_index_only:
            text = f"{path}: --verify-index-only does not apply to a transaction index; use --index-sanity-check"
            yield json.dumps({"type": "verify-summary", "file": path, "applicable": False}) if options.as_json else text
            return
        if not options.as_json:
            yield f"Dumping {path}"
        entries = txn.iter_entries()
        i = 0
        while True:
            try:
                e = next(entries, None)
            except IndexFailure as failure:
                yield _txn_error(path, failure, options.as_json)
                return
            if e is None:
                return
            if options.as_json:
                yield json.dumps({"type": "aborted-txn", "file": path, "position": i * 34, **e._asdict()})
            else:
                yield (
                    f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
                    f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}"
                )
            i += 1
    finally:
        txn.close()


def _txn_error(path: str, failure: IndexFailure, as_json: bool) -> str:
    if as_json:
        return json.dumps(
            {"type": "error", "file": path, "kind": failure.kind, "reason": failure.reason, "detail": failure.detail}
        )
    return f"Found invalid entry in {path}: {failure.kind} ({failure.reason}): {failure.detail}"
