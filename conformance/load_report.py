"""``klc load``: load data dirs exactly as a broker would (impl's LogManager over the real backend),
on a private copy, and report per partition what the load found and did."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from conformance.private_copy import private_copy
from impl.config import LogConfig
from impl.file_records import BatchScan
from impl.log_manager import LogManager
from impl.storage import OsStorage


def load_dirs(dirs: list[str], config: LogConfig) -> dict:
    work = tempfile.mkdtemp(prefix="klc-load-")
    try:
        copies, problems = [], []
        for i, d in enumerate(dirs):
            if not os.path.isdir(d):
                problems.append(f"{d}: not a directory")
                continue
            copy = os.path.join(work, f"dir{i}")
            problems += private_copy(d, copy)
            copies.append((d, copy))
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
    lines = []
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
    lines.append(
        f"loaded in {load['seconds']} s; log bytes read {load['log_bytes_read']}, index bytes read {load['index_bytes_read']}"
    )
    return lines
