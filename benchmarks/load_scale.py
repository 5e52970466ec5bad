"""`klc load` at a broker's scale (issue #33 items 1-2): time, peak RSS, bytes written, descriptors.

    python -m benchmarks.load_scale [--partitions N] [--nofile 1024] [--clean]

Builds a data dir as a broker leaves it: one partition written by impl (a few segments, a crash
without shutdown, so preallocated 10 MiB indexes and recovery points behind the log end; with
``--clean`` a graceful shutdown) hard-linked into N partition dirs, with the checkpoints naming all
of them.  Then runs the load `klc load` runs (operator_tools.load_report.load_dirs) in a child process
whose descriptor limit is ``--nofile``, and reports, within the run:

* partitions loaded / asked, and the partitions NOT LOADED (a descriptor limit must cost none);
* time of the load against its floor (listing every partition dir and reading each `.log` once),
  and of the private copy against its own (creating every file and writing its data extents);
* peak RSS of the child; bytes the child wrote (`/proc/self/io` write_bytes): the private copy's,
  which must cost what the data costs (not the indexes' apparent 20 MiB per partition), and the
  load's own (rebuilt indexes, snapshots, checkpoints);
* the most descriptors the child held open at once (sampled).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from operator_tools.private_copy import _data_extents, private_copy

TEMPLATE_TOPIC = "template"
LINKS_PER_FILE = 50_000


def _template(root: str, clean: bool, segments: int) -> str:
    """One partition dir as impl leaves it (``segments`` segments of 20 batches); returns the data
    dir holding it."""
    from impl.config import LogConfig
    from impl.log_manager import LogManager
    from impl.storage import OsStorage
    from model.records import build_batch_v2

    data = os.path.join(root, "template")
    storage = OsStorage()
    config = LogConfig(segment_bytes=32 * 1024, index_interval_bytes=512)
    manager = LogManager(storage, [data], config, lambda: 1_700_000_000_000)
    manager.startup()
    log = manager.create_log(TEMPLATE_TOPIC, 0)
    for i in range(20 * segments - 1):
        ts = 1_700_000_000_000 + i
        log.append(build_batch_v2(0, [(ts, None, os.urandom(400)), (ts, None, os.urandom(400))]))
    manager.checkpoint_recovery_points()
    if clean:
        manager.shutdown()
    else:
        log.flush(log.log_end_offset // 2)
        manager.checkpoint_recovery_points()
        storage.close_all()  # a crash: no marker, indexes as preallocated
    return data


def build(root: str, partitions: int, clean: bool, segments: int = 1) -> str:
    """A data dir of ``partitions`` partitions (hard links to one template partition's files)."""
    template = _template(os.path.join(root, "t"), clean, segments)
    source = os.path.join(template, f"{TEMPLATE_TOPIC}-0")
    names = os.listdir(source)
    data = os.path.join(root, "data")
    os.makedirs(data)
    lines = {}
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        with open(os.path.join(template, name)) as f:
            lines[name] = f.read().splitlines()[2:]
    for p in range(partitions):
        d = os.path.join(data, f"topic{p // 1000}-{p % 1000}")
        os.mkdir(d)
        if p % LINKS_PER_FILE == 0 and p:  # a file system caps an inode's links (ext4: 65,000)
            source = os.path.join(root, "t", f"copy{p}")
            private_copy(os.path.join(template, f"{TEMPLATE_TOPIC}-0"), source)
        for name in names:
            os.link(os.path.join(source, name), os.path.join(d, name))
    for name, entries in lines.items():
        offset = entries[0].split()[2] if entries else "0"
        with open(os.path.join(data, name), "w") as f:
            f.write(f"0\n{partitions}\n")
            f.writelines(f"topic{p // 1000} {p % 1000} {offset}\n" for p in range(partitions))
    if clean:
        open(os.path.join(data, ".kafka_cleanshutdown"), "w").close()
    return data


def floor_seconds(data: str) -> float:
    """Listing every partition dir and reading each `.log` once: what any load must do at least."""
    started = time.perf_counter()
    for entry in os.scandir(data):
        if entry.is_dir():
            for name in os.listdir(entry.path):
                if name.endswith(".log"):
                    with open(os.path.join(entry.path, name), "rb") as f:
                        while f.read(1 << 20):
                            pass
    return time.perf_counter() - started


def child(data: str, nofile: int) -> None:
    """The load, under a descriptor limit; prints one JSON line of what it measured."""
    import threading

    from operator_tools.load_report import load_dirs
    from impl.config import LogConfig
    from impl.log_manager import LogManager

    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    copied = {}
    startup = LogManager.startup

    def startup_after_the_copy(manager):  # the bytes written so far are the private copy's
        copied["write_bytes"] = _written()
        return startup(manager)

    LogManager.startup = startup_after_the_copy
    most = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            most[0] = max(most[0], len(os.listdir("/proc/self/fd")))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    report = load_dirs([data], LogConfig())
    seconds = time.perf_counter() - started
    done.set()
    not_loaded = [p["error"] for p in report["partitions"] if p["error"]]
    print(
        json.dumps(
            {
                "seconds": seconds,
                "load_seconds": report["load"]["seconds"],
                "partitions": len(report["partitions"]),
                "not_loaded": len(not_loaded),
                "first_error": not_loaded[0] if not_loaded else None,
                "write_bytes": _written(),
                "copy_write_bytes": copied["write_bytes"],
                "max_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "most_descriptors": most[0],
            }
        )
    )


def _written() -> int:
    """Bytes this process has caused to be written to storage so far."""
    with open("/proc/self/io") as f:
        return int(dict(line.split(": ") for line in f.read().splitlines())["write_bytes"])


def copy_floor_seconds(data: str, dst: str) -> float:
    """Creating every file of a copy and writing its data extents, nothing else (no modification
    times, no checks): what any copy of the dir must do at least."""
    started = time.perf_counter()
    for dirpath, _dirs, names in os.walk(data):
        target = os.path.join(dst, os.path.relpath(dirpath, data))
        os.makedirs(target, exist_ok=True)
        for name in names:
            fin = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            fout = os.open(os.path.join(target, name), os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fin).st_size
                for start, end in _data_extents(fin, size):
                    os.copy_file_range(fin, fout, end - start, start, start)
                os.ftruncate(fout, size)
            finally:
                os.close(fin)
                os.close(fout)
    seconds = time.perf_counter() - started
    shutil.rmtree(dst)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load_scale")
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--nofile", type=int, default=1024, help="the load's descriptor limit (ulimit -n)")
    parser.add_argument("--clean", action="store_true", help="a graceful shutdown before (default: a crash)")
    parser.add_argument("--segments", type=int, default=1, help="segments per partition (20 batches each)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.nofile)
    work = tempfile.mkdtemp(prefix="klc-bench-scale-")
    try:
        data = build(work, args.partitions, args.clean, args.segments)
        floor = min(floor_seconds(data) for _ in range(2))
        copy_floor = copy_floor_seconds(data, os.path.join(work, "floor-copy"))
        cmd = [sys.executable, "-m", "benchmarks.load_scale", "--child", data, "--nofile", str(args.nofile)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            sys.exit(f"the load failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
        r = json.loads(out.stdout.splitlines()[-1])
        data_bytes = sum(
            os.lstat(os.path.join(data, d, n)).st_blocks * 512
            for d in os.listdir(data)
            if os.path.isdir(os.path.join(data, d))
            for n in os.listdir(os.path.join(data, d))
        )
        kind = "clean" if args.clean else "crashed"
        print(f"{args.partitions} partitions ({kind}), descriptor limit {args.nofile}")
        print(
            f"  loaded: {r['partitions'] - r['not_loaded']} of {r['partitions']}"
            + (f"; first error: {r['first_error']}" if r["not_loaded"] else "")
        )
        load, copy = r["load_seconds"], r["seconds"] - r["load_seconds"]
        print(
            f"  the load (impl's LogManager.startup): {load:.2f} s = {load / floor:.1f} x its floor ({floor:.2f} s: list the dir, read every .log)"
        )
        print(
            f"  the private copy: {copy:.2f} s = {copy / copy_floor:.1f} x its floor ({copy_floor:.2f} s: create every file, write its data)"
        )
        print(f"  peak RSS: {r['max_rss_kib'] / 1024:.0f} MiB; most descriptors open: {r['most_descriptors']}")
        print(
            f"  bytes written: the copy {r['copy_write_bytes'] / 1e6:.1f} MB = "
            f"{r['copy_write_bytes'] / data_bytes:.2f} x the data's allocated bytes; "
            f"the load {(r['write_bytes'] - r['copy_write_bytes']) / 1e6:.1f} MB"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
