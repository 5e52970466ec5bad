"""``klc load``: load data dirs exactly as a broker would (impl's LogManager over the real backend,
or with ``target="kafka"`` Kafka's own LogManager in the kafka target's JVM), on a private copy,
and report per partition what the load found and did."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from conformance.private_copy import private_copy
from conformance.targets.kafka_jvm import KafkaTargetError
from impl.config import LogConfig
from impl.file_records import BatchScan
from impl.log_manager import LogManager
from impl.storage import OsStorage


def _copies(dirs: list[str], work: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(original, private copy) of every dir that is one, and the problems met."""
    copies, problems = [], []
    for i, d in enumerate(dirs):
        if not os.path.isdir(d):
            problems.append(f"{d}: not a directory")
            continue
        copy = os.path.join(work, f"dir{i}")
        problems += private_copy(d, copy)
        copies.append((d, copy))
    return copies, problems


def load_dirs_on_kafka(dirs: list[str], config: dict, jvm) -> dict:
    """What Kafka's own loader (the kafka target, docs/kafka-target.md) does with ``dirs``: the
    same report, with ``"kafka"`` naming the release; what the load read is not measured there."""
    work = tempfile.mkdtemp(prefix="klc-load-")
    try:
        copies, problems = _copies(dirs, work)
        if not copies:  # nothing a broker could load
            none = {"seconds": 0.0, "log_bytes_read": None, "index_bytes_read": None}
            return {"kafka": jvm.version, "dirs": [], "problems": problems, "partitions": [], "load": none}
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
            topic, _, partition = x["partition"].rpartition("-")
            error = x["error"] and x["error"].replace(work + "/" + x["dir"], d)
            entry = {"dir": d, "name": x["partition"], "topic": topic, "partition": int(partition), "error": error}
            p = state.get(f"{x['dir']}/{x['partition']}")
            if p is not None and not error:
                folder = os.path.join(work, x["dir"], x["partition"])
                entry |= {
                    "log_start_offset": p["log_start_offset"],
                    "log_end_offset": p["log_end_offset"],
                    "recovery_point": p["recovery_point"],
                    "segments": [
                        {"base_offset": base, "size": size, "batches": _batches(os.path.join(folder, name), size)}
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
        return {
            "kafka": jvm.version,
            "dirs": [{"dir": d, "clean_shutdown": marked[d], "warnings": []} for d, _ in copies],
            "problems": problems,
            "partitions": partitions,
            "load": {"seconds": round(seconds, 4), "log_bytes_read": None, "index_bytes_read": None},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _ok(answer: dict) -> dict:
    if "ok" not in answer:
        why = answer.get("unsupported") or f"{answer.get('refused')}: {answer.get('message')}"
        raise KafkaTargetError(f"kafka target: Kafka did not load the dirs: {why}")
    return answer["ok"]


def _batches(path: str, size: int) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in BatchScan(f.read(size)))


def load_dirs(dirs: list[str], config: LogConfig) -> dict:
    work = tempfile.mkdtemp(prefix="klc-load-")
    try:
        copies, problems = _copies(dirs, work)
        storage = OsStorage()
        manager = LogManager(storage, [c for _, c in copies], config, lambda: int(time.time() * 1000))
        started = time.perf_counter()
        loads = manager.startup()
        seconds = time.perf_counter() - started
        stats = storage.stats.snapshot()
        names = {c: d for d, c in copies}
        partitions = []
        for load in loads:
            entry = {
                "dir": names[load.data_dir],
                "name": load.name,
                "topic": load.topic,
                "partition": load.partition,
                "error": load.error.replace(load.data_dir, names[load.data_dir]) if load.error else None,
            }
            if load.log is not None:
                log = load.log
                entry |= {
                    "log_start_offset": log.log_start_offset,
                    "log_end_offset": log.log_end_offset,
                    "recovery_point": log.recovery_point,
                    "segments": [
                        {"base_offset": s.base_offset, "size": s.size, "batches": sum(1 for _ in BatchScan(s.view()))}
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
        for log in manager.logs.values():
            log.close_handlers()
        return {
            "dirs": [
                {
                    "dir": names[c],
                    "clean_shutdown": manager.dirs[c].had_clean_shutdown,
                    "warnings": [w.replace(c, names[c]) for w in manager.dirs[c].warnings],
                }
                for _, c in copies
            ],
            "problems": problems,
            "partitions": partitions,
            "load": {
                "seconds": round(seconds, 4),
                "log_bytes_read": stats.log_bytes_read,
                "index_bytes_read": stats.index_bytes_read,
            },
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def format_text(report: dict) -> list[str]:
    lines = [f"as Apache Kafka {report['kafka']} loads it (the kafka target)"] if report.get("kafka") else []
    for d in report["dirs"]:
        lines.append(
            f"data dir {d['dir']}: {'clean shutdown (marker present)' if d['clean_shutdown'] else 'no clean-shutdown marker: unflushed segments are recovered'}"
        )
        lines += [f"  warning: {w}" for w in d["warnings"]]
    lines += [f"problem: {p}" for p in report["problems"]]
    for p in report["partitions"]:
        if p["error"]:
            lines.append(f"{p['name']}: NOT LOADED: {p['error']}")
            continue
        segs = ", ".join(f"{s['base_offset']}({s['size']} B, {s['batches']} batches)" for s in p["segments"])
        lines.append(
            f"{p['topic']}-{p['partition']}: log start {p['log_start_offset']}, log end {p['log_end_offset']}, "
            f"recovery point {p['recovery_point']}, segments {segs}"
        )
        if p.get("recovered_segments"):
            lines.append(f"  recovered segments {p['recovered_segments']}, {p['truncated_bytes']} bytes truncated")
        if p.get("removed_segments"):
            lines.append(f"  segments removed after a truncated one: {p['removed_segments']}")
    load = report["load"]
    read = (
        "bytes read not measured on Kafka"
        if load["log_bytes_read"] is None
        else f"log bytes read {load['log_bytes_read']}, index bytes read {load['index_bytes_read']}"
    )
    lines.append(f"loaded in {load['seconds']} s; {read}")
    return lines
