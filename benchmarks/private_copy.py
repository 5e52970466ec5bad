"""What `klc load`'s private copy costs against what the data costs (issue: operator tools at scale).

    python -m benchmarks.private_copy [--partitions N]

Builds a data dir as a broker leaves it — per partition one small `.log`, a preallocated
10 MiB `.index` holding a few entries and a 10 MiB `.timeindex` never written (Kafka preallocates `segment.index.bytes`) —
copies it the way `klc load` does (operator_tools/private_copy.py), and reports, within the run:

* disk: bytes allocated by the copy / bytes allocated by the source (1.0: it costs what the data costs);
* time: the copy / reading every file's data extents once (the floor: a copy must read them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from operator_tools.private_copy import _data_extents, private_copy

MIB = 1 << 20


def build(root: str, partitions: int) -> None:
    for p in range(partitions):
        d = os.path.join(root, "d0", f"t-{p}")
        os.makedirs(d)
        with open(os.path.join(d, f"{0:020d}.log"), "wb") as f:
            f.write(os.urandom(4096 + 37 * p % 4096))
        for suffix, entries in ((".index", b"\x01" * 8 * 3), (".timeindex", b"")):  # a time index never written
            with open(os.path.join(d, f"{0:020d}{suffix}"), "wb") as f:
                f.truncate(10 * MIB)
                f.write(entries)


def allocated(root: str) -> int:
    return sum(os.lstat(os.path.join(dp, n)).st_blocks * 512 for dp, _, names in os.walk(root) for n in names)


def read_extents(root: str) -> None:
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                for start, end in _data_extents(f.fileno(), size):
                    f.seek(start)
                    f.read(end - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.private_copy")
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="klc-bench-copy-")
    try:
        src = os.path.join(work, "src")
        build(src, args.partitions)
        floor, copy = [], []
        for i in range(args.repeat):
            t = time.perf_counter()
            read_extents(src)
            floor.append(time.perf_counter() - t)
            dst = os.path.join(work, f"copy{i}")
            t = time.perf_counter()
            problems = private_copy(src, dst)
            copy.append(time.perf_counter() - t)
            assert not problems, problems
        apparent = sum(os.path.getsize(os.path.join(dp, n)) for dp, _, ns in os.walk(src) for n in ns)
        print(
            f"{args.partitions} partitions, {apparent / 1e6:.0f} MB apparent, {allocated(src) / 1e6:.2f} MB allocated"
        )
        print(f"disk: copy / source allocated = {allocated(dst) / allocated(src):.2f}")
        print(f"time: copy / reading the data extents = {min(copy) / min(floor):.2f} (best of {args.repeat})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
