"""``klc load``: load data dirs exactly as a broker would (impl's LogManager over the real backend,
or with ``target="kafka"`` Kafka's own LogManager in the kafka target's JVM), on a private copy,
and report per partition what the load found and did."""

from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile
import time

from conformance.targets.kafka_jvm import KafkaTargetError
from impl.config import LogConfig
from impl.file_records import BatchScan
from operator_tools import dir_lock
from impl.log_manager import LogManager
from impl.names import parse_topic_partition
from impl.storage import OsStorage
from operator_tools import files, preflight
from operator_tools.private_copy import private_copy

LOG_DIR_FILES = (".kafka_cleanshutdown", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                 "replication-offset-checkpoint", "meta.properties", "cleaner-offset-checkpoint")  # fmt: skip
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


HOST_FULL = (errno.ENOSPC, errno.EDQUOT)
HOST_FULL_TEXT = ("No space left on device", "Disk quota exceeded")


class HostError(Exception):
    """klc could not do the load on this host (the private copy did not fit in TMPDIR): no verdict
    about the broker, whose data is not at fault."""


def _host_full(text: str | None) -> bool:
    return bool(text) and any(t in text for t in HOST_FULL_TEXT)


def _work_dir() -> str:
    try:
        return tempfile.mkdtemp(prefix="klc-load-")
    except OSError as e:
        raise HostError(
            f"cannot make the private copy's dir in TMPDIR ({tempfile.gettempdir()}): {e.strerror}"
        ) from None


def _remove(work: str) -> None:
    """The private copy removed; a failure is said (a copy left in TMPDIR is no silent leftover)."""
    problems = []
    shutil.rmtree(work, onerror=lambda _f, path, exc: problems.append(f"{path}: {exc[1]}"))
    if problems:
        print(f"klc load: the private copy {work} was not wholly removed: {problems[0]}", file=sys.stderr)


def _did_not_fit(report: dict, dirs: list[str]) -> None:
    """HostError if the load failed for want of space in TMPDIR (the copy's file system), not for
    anything in the broker's data: the disk the broker writes to is not the one that filled up."""
    texts = [report.get("startup_error"), *(p["error"] for p in report["partitions"])]
    if any(_host_full(t) for t in texts):
        raise HostError(
            f"the private copy of {', '.join(dirs)} filled TMPDIR ({tempfile.gettempdir()}) during the load: "
            "no verdict about the broker; set TMPDIR to a file system with room for the data and what the load writes"
        )


def _copies(dirs: list[str], work: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(original, private copy) of every dir that is a log dir, and the problems met."""
    copies, problems, seen = [], [], {}
    for i, d in enumerate(dirs):
        if not os.path.isdir(d):
            problems.append(f"{d}: not a directory")
            continue
        real = os.path.realpath(d)
        if real in seen:
            problems.append(f"{d}: the same directory as {seen[real]}, loaded once")
            continue
        seen[real] = d
        shape = not_a_log_dir(d)
        if shape:
            problems.append(f"{d}: {shape}")
            continue
        copy = os.path.join(work, f"dir{i}")
        copied = private_copy(d, copy)
        full = next((p for p in copied if _host_full(p)), None)
        if full:
            raise HostError(
                f"the private copy of {d} did not fit in TMPDIR ({tempfile.gettempdir()}): {full}: no verdict "
                "about the broker; set TMPDIR to a file system with room for the data's extents"
            )
        problems += copied
        copies.append((d, copy))
    return copies, problems


def not_a_log_dir(d: str) -> str | None:
    """Why ``d`` is not a broker's log dir, or None: it must hold partition dirs or the files a
    broker writes there (checkpoints, the clean-shutdown marker, meta.properties)."""
    try:
        names = os.listdir(d)
    except OSError as e:
        return f"cannot list it: {e.strerror}"
    if not names:
        return "empty: no partition directories and no checkpoint files, nothing a broker would load"
    if any(n.endswith(SEGMENT_SUFFIXES) for n in names):
        return "holds segment files itself: a partition directory? give its parent, the log dir"
    if not any(os.path.isdir(os.path.join(d, n)) for n in names) and not set(names) & set(LOG_DIR_FILES):
        return "not a Kafka log dir: no partition directories and no checkpoint files"
    return None


def _not_copied(problems: list[str], d: str) -> dict[str, list[str]]:
    """Per partition dir name, the files of it the private copy could not take."""
    out: dict[str, list[str]] = {}
    for problem in problems:
        path = problem.split(": ", 1)[0]
        rel = os.path.relpath(path, d)
        parts = rel.split(os.sep)
        if len(parts) >= 2 and not rel.startswith(".."):
            out.setdefault(parts[0], []).append(os.sep.join(parts[1:]))
    return out


def load_dirs_on_kafka(dirs: list[str], config: dict, jvm, count_batches: bool = False) -> dict:
    """What Kafka's own loader (the kafka target, docs/kafka-target.md) does with ``dirs``: the
    same report, with ``"kafka"`` naming the release; what the load read is not measured there."""
    work = _work_dir()
    try:
        copies, problems = _copies(dirs, work)
        if not copies:  # nothing a broker could load
            none = {"seconds": 0.0, "log_bytes_read": None, "index_bytes_read": None}
            return _judged({"kafka": jvm.version, "dirs": [], "problems": problems, "partitions": [], "load": none})
        names = {os.path.basename(c): d for d, c in copies}
        marked = {d: os.path.exists(os.path.join(c, ".kafka_cleanshutdown")) for d, c in copies}
        sizes = {  # each .log's size before the load: what recovery truncated is the difference
            os.path.join(dirpath, n): os.path.getsize(os.path.join(dirpath, n))
            for _, c in copies
            for dirpath, _dirs, files in os.walk(c)
            for n in files
            if n.endswith(".log")
        }
        _ok(
            jvm.request(
                {
                    "op": "configure",
                    "root": work,
                    "data_dirs": list(names),
                    "config": config,
                    "clock_ms": int(time.time() * 1000),
                }
            )
        )
        started = time.perf_counter()
        opened = _ok(jvm.request({"op": "open"}))
        seconds = time.perf_counter() - started
        loaded = opened["loaded"]
        state = _ok(jvm.request({"op": "state"}))["partitions"] if opened["started"] else {}
        partitions = []
        for x in loaded:
            d = names[x["dir"]]
            topic, partition, _kind = parse_topic_partition(x["partition"])  # Kafka's loaded list parsed it
            error = _in_dirs(x["error"], {f"{work}/{copy}": name for copy, name in names.items()})
            entry = {"dir": d, "name": x["partition"], "topic": topic, "partition": partition, "error": error}
            if x.get("kind"):
                entry["kind"] = x["kind"]
                if not error:  # loaded but not served: no state, what its load recovered
                    entry["recovered_segments"] = x["recovered"]
            entry["not_copied"] = _not_copied(problems, d).get(x["partition"], [])
            p = state.get(f"{x['dir']}/{x['partition']}")
            if p is not None and not error:
                folder = os.path.join(work, x["dir"], x["partition"])
                entry |= {
                    "log_start_offset": p["log_start_offset"],
                    "log_end_offset": p["log_end_offset"],
                    "recovery_point": p["recovery_point"],
                    "segments": [
                        _segment(base, size, count_batches and _batches(os.path.join(folder, name), size))
                        for base, size, name in p["segments"]
                    ],
                    "leader_epochs": p["epochs"],
                    "recovered_segments": x["recovered"],
                    "truncated_bytes": sum(
                        max(0, sizes.get(os.path.join(folder, name), size) - size) for _b, size, name in p["segments"]
                    ),
                }
            partitions.append(entry)
        jvm.request({"op": "halt"})
        failed = (
            None if opened["started"] else next((p["error"] for p in partitions if p["error"]), "the startup failed")
        )
        return _judged({
            "kafka": jvm.version,
            "dirs": [
                {"dir": d, "clean_shutdown": marked[d], "warnings": [], "held_by": dir_lock.holder(d)} for d, _ in copies
            ],
            "problems": problems,
            "startup_error": failed,
            "partitions": partitions,
            "load": {"seconds": round(seconds, 4), "log_bytes_read": None, "index_bytes_read": None},
        })  # fmt: skip
    finally:
        _remove(work)


def _ok(answer: dict) -> dict:
    if "ok" not in answer:
        why = answer.get("unsupported") or f"{answer.get('refused')}: {answer.get('message')}"
        raise KafkaTargetError(f"kafka target: Kafka did not load the dirs: {why}")
    return answer["ok"]


def _batches(path: str, size: int) -> int:
    """The batches of a segment's first ``size`` bytes, through a mapping: a 1 GiB segment costs
    the page cache, not the heap."""
    if size == 0:
        return 0
    whole = files.view(path)
    try:
        return BatchScan(whole, 0, size).run().batches
    finally:
        whole.close()


def _segment(base: int, size: int, batches) -> dict:
    """A segment's entry; ``batches`` only when counted (``--count-batches``: a CRC scan of every
    segment, which a load itself does not do for a cleanly shut down one)."""
    return {"base_offset": base, "size": size} | ({"batches": batches} if batches is not False else {})


def load_dirs(dirs: list[str], config: LogConfig, count_batches: bool = False) -> dict:
    work = _work_dir()
    try:
        copies, problems = _copies(dirs, work)
        storage = OsStorage()
        manager = LogManager(storage, [c for _, c in copies], config, lambda: int(time.time() * 1000))
        manager.close_after_load = True  # the report needs offsets, not open files (docs/load.md)
        started = time.perf_counter()
        loads = manager.startup()
        seconds = time.perf_counter() - started
        stats = storage.stats.snapshot()
        names = {c: d for d, c in copies}
        missing = {(d, name): files for d, _ in copies for name, files in _not_copied(problems, d).items()}
        partitions = []
        for load in loads:
            entry = {
                "dir": names[load.data_dir],
                "name": load.name,
                "topic": load.topic,
                "partition": load.partition,
                "error": _in_dirs(load.error, names),
                "not_copied": missing.get((names[load.data_dir], load.name), []),
            }
            if load.kind:
                entry["kind"] = load.kind
            if load.log is not None:
                log = load.log
                entry |= {
                    "log_start_offset": log.log_start_offset,
                    "log_end_offset": log.log_end_offset,
                    "recovery_point": log.recovery_point,
                    "segments": [
                        _segment(s.base_offset, s.size, count_batches and _batches(s.log_path, s.size))
                        for s in log.segments
                    ],
                    "leader_epochs": [list(e) for e in log.epoch_cache.entries],
                }
            if load.report is not None:
                r = load.report
                entry |= {
                    "recovered_segments": r.recovered_segments,
                    "truncated_bytes": r.truncated_bytes,
                    "deleted_files": [os.path.basename(p) for p in r.deleted_files],
                    "removed_segments": r.removed_segments,
                }
            partitions.append(entry)
        for log in [*manager.logs.values(), *manager.futures.values(), *(log for _, log in manager.strays)]:
            log.close_handlers()
        return _judged({
            "dirs": [
                {
                    "dir": names[c],
                    "clean_shutdown": manager.dirs[c].had_clean_shutdown,
                    "warnings": [w.replace(c, names[c]) for w in manager.dirs[c].warnings],
                    "held_by": dir_lock.holder(names[c]),
                }
                for _, c in copies
            ],
            "problems": problems,
            "startup_error": _in_dirs(manager.startup_error, names),
            "partitions": partitions,
            "load": {
                "seconds": round(seconds, 4),
                "log_bytes_read": stats.log_bytes_read,
                "index_bytes_read": stats.index_bytes_read,
            },
        })  # fmt: skip
    finally:
        _remove(work)


def _judged(report: dict) -> dict:
    """The report with what the restart discards and its verdict (operator_tools/preflight.py);
    HostError when TMPDIR filled up rather than anything the broker did."""
    _did_not_fit(report, [d["dir"] for d in report["dirs"]])
    hws = {}
    for d in report["dirs"]:
        hws[d["dir"]], warning = preflight.high_watermarks(d["dir"])
        if warning:
            d["warnings"].append(warning)
    preflight.judge(report, hws)
    return report


def _in_dirs(text: str | None, names: dict[str, str]) -> str | None:
    """``text`` with the private copies' paths given back as the dirs the user named."""
    for copy, name in names.items():
        text = text and text.replace(copy, name)
    return text


MOVED = {
    "future": "a future replica's directory (KIP-113: a move between data dirs not yet promoted)"
    ": loaded as the partition's future log, not served",
    "stray": "a stray replica's directory (one KRaft's metadata no longer assigned here): loaded, then"
    " neither served nor deleted — an operator removes it",
}


def _recovered(p: dict) -> str:
    bases = p.get("recovered_segments") or []
    return f"; its load recovered segment(s) {', '.join(map(str, bases))}" if bases else ""


def format_text(report: dict) -> list[str]:
    lines = [f"as Apache Kafka {report['kafka']} loads it (the kafka target)"] if report.get("kafka") else []
    for d in report["dirs"]:
        lines.append(
            f"data dir {d['dir']}: {'clean shutdown (marker present)' if d['clean_shutdown'] else 'no clean-shutdown marker: unflushed segments are recovered'}"
        )
        lines += [f"  warning: {w}" for w in d["warnings"]]
        if d.get("held_by") is not None:
            lines.append(
                f"STARTUP FAILS: {d['dir']}/{dir_lock.LOCK} is held by process {d['held_by']}: a broker is up on this "
                "dir, and Kafka's LogManager refuses to start on a dir another process has locked; the load below "
                "is of a copy taken while that process wrote to it"
            )
    lines += [f"problem: {p}" for p in report["problems"]]
    if report.get("startup_error"):
        lines.append(
            f"STARTUP FAILS: {report['startup_error']} — the broker does not start (spec §6.2 step 7); "
            "each partition below is as its own load left it"
        )
    for p in report["partitions"]:
        if p["error"]:
            lines.append(f"{p['name']}: NOT LOADED: {p['error']}")
            continue
        if p.get("kind") == "delete":  # §2.3 rule 2, §6.2 step 6
            lines.append(
                f"{p['name']}: a deleted partition's directory ({p['topic']}-{p['partition']}): loaded without "
                "recovery and queued for deletion, never served; deleted file.delete.delay.ms after the start"
            )
            continue
        if p.get("kind") in MOVED:  # §2.3 rule 2: Kafka 4.4.0's LogManager.loadLog
            lines.append(f"{p['name']}: {MOVED[p['kind']]} ({p['topic']}-{p['partition']}){_recovered(p)}")
            continue
        if "segments" not in p:  # loaded, then the startup failed: Kafka shows no state of it
            lines.append(f"{p['name']}: loaded, not served (the startup failed)")
            continue
        segs = ", ".join(
            f"{s['base_offset']}({s['size']} B{f', {n} batches' if (n := s.get('batches')) is not None else ''})"
            for s in p["segments"]
        )
        lines.append(
            f"{p['topic']}-{p['partition']}: log start {p['log_start_offset']}, log end {p['log_end_offset']}, "
            f"recovery point {p['recovery_point']}, segments {segs}"
        )
        if p.get("not_copied"):
            lines.append(f"  INCOMPLETE: not copied, so the log above lacks them: {', '.join(p['not_copied'])}")
        if p.get("recovered_segments"):
            lines.append(f"  recovered segments {p['recovered_segments']}, {p['truncated_bytes']} bytes truncated")
        if p.get("removed_segments"):
            lines.append(f"  segments removed after a truncated one: {p['removed_segments']}")
        lines += preflight.partition_lines(p)
    load = report["load"]
    read = (
        "bytes read not measured on Kafka"
        if load["log_bytes_read"] is None
        else f"log bytes read {load['log_bytes_read']}, index bytes read {load['index_bytes_read']}"
    )
    lines.append(f"loaded in {load['seconds']} s; {read}")
    r = report["restart"]
    lines.append(
        f"restart: {r['verdict'].upper() if r['exit_status'] in (4, 5) else r['verdict']} (exit status {r['exit_status']}): "
        f"{r['records_discarded']} records and {r['bytes_truncated']} bytes discarded, {r['segments_deleted']} segments "
        f"deleted, {r['acknowledged_records_lost']} acknowledged records lost"
    )
    return lines
