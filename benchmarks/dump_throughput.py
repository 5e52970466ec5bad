"""`klc dump` throughput against the file size (issue #33: "klc dump throughput against the file size").

    python -m benchmarks.dump_throughput [--sizes-mib 1 8 64] [--repeat 3]

For segments of each size (16 KiB batches of 16 records, as a producer's), runs `klc dump FILE`
as users run it — a separate process, its output to /dev/null — in three modes: batch headers
(the default), `--deep-iteration` (every record decoded) and `--json --print-data-log`.  Reports
per mode and size the best wall time, MB/s and the peak anonymous RSS of the process (its own
memory; the pages of the mapped file it touched are page cache, and not counted); a dump that
scales with the file keeps its MB/s across sizes and its memory flat (it streams).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
MODES = {"headers": [], "deep": ["--deep-iteration"], "json+data": ["--json", "--print-data-log"]}


def _klc() -> str:
    return os.path.join(os.path.dirname(sys.executable), "klc")


def run_once(path: str, flags: list[str]) -> tuple[float, int]:
    """Wall seconds and peak anonymous RSS (KiB, sampled every 5 ms) of one ``klc dump`` of ``path``:
    the dump's own memory, not the pages of the mapped file it touched (page cache, reclaimable)."""
    started = time.perf_counter()
    anon = 0
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen([_klc(), "dump", *flags, path], stdout=sink, stderr=subprocess.PIPE)
        while proc.poll() is None:
            anon = max(anon, _rss_anon(proc.pid))
            time.sleep(0.005)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"klc dump {' '.join(flags)} {path} failed:\n{proc.stderr.read().decode()[-2000:]}")
    proc.stderr.close()
    return seconds, anon


def _rss_anon(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("RssAnon:")), 0)
    except OSError:  # the process ended between the poll and the read
        return 0


def _write_segment(path: str, nbytes: int) -> None:
    """The segment, built in a process of its own: a child forked from a parent that held it would
    start with the parent's pages, and its peak RSS would count them."""
    code = (
        "import sys; from benchmarks.segments import build_segment; "
        "open(sys.argv[1], 'wb').write(build_segment('dump', int(sys.argv[2]), 16 * 1024, 16).data)"
    )
    subprocess.run([sys.executable, "-c", code, path, str(nbytes)], check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dump_throughput")
    parser.add_argument("--sizes-mib", type=float, nargs="+", default=[1, 8, 64])
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the best is reported")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="klc-bench-dump-")
    try:
        print("| mode | MiB | best s | MB/s | peak anonymous RSS MiB |")
        print("|---|---|---|---|---|")
        for mib in args.sizes_mib:
            path = os.path.join(work, f"{0:020d}.log")
            _write_segment(path, int(mib * MIB))
            size = os.path.getsize(path)
            for mode, flags in MODES.items():
                runs = [run_once(path, flags) for _ in range(args.repeat)]
                best = min(r[0] for r in runs)
                anon = max(r[1] for r in runs)
                print(f"| {mode} | {size / MIB:.0f} | {best:.2f} | {size / 1e6 / best:.1f} | {anon / 1024:.0f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
