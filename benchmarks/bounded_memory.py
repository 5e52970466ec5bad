"""Peak memory of ``klc dump`` and ``klc load`` on inputs built to blow memory up, against the
floor of the same run (``klc dump`` of a one-record ``.txnindex``: Python and klc imported).

    python -m benchmarks.bounded_memory [--txn-gib 2] [--record-mib 250] [--skip-record]

Cases, each one ``klc`` child with stdout to /dev/null (or to a pipe, for the first line):

* a sparse all-zero ``.txnindex`` of ``--txn-gib`` GiB (what a preallocating file system or a
  damaged disk leaves): ``klc dump --index-sanity-check``, ``klc load`` of a cleanly shut down dir
  whose one segment has it (the load's sanity check reads it whole), and the seconds until
  ``klc dump`` prints its first entry (the dump itself prints ~63 M lines per 2 GiB: not waited for);
* one record of ``--record-mib`` MiB of zeros in a zstd batch of a few KB:
  ``--print-data-log`` and ``--json --print-data-log``.

Peak RSS is each child's own ``ru_maxrss`` (``wait4``).  The bounds these show are documented in
docs/dump.md ("Bounded memory"): a ``.txnindex`` costs one read of ``impl.txn_index.READ_RECORDS``
records; a record is held whole (at most the 256 MiB one-record limit) with its decompression
buffer, and its text is written ``operator_tools.dump_decoders.PIECE`` bytes of input at a time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
KLC = os.path.join(os.path.dirname(sys.executable), "klc")


def _peak(args: list[str]) -> tuple[float, float, int]:
    """(peak RSS MiB, seconds, exit status) of one ``klc`` child."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        child = subprocess.Popen([KLC, *args], stdout=devnull, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
    child.stderr.close()
    return usage.ru_maxrss / 1024, time.perf_counter() - start, os.waitstatus_to_exitcode(status)


def _first_line_seconds(args: list[str]) -> float:
    start = time.perf_counter()
    child = subprocess.Popen([KLC, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    child.stdout.readline()
    child.stdout.readline()  # the header, then the first entry
    seconds = time.perf_counter() - start
    child.kill()
    child.wait()
    child.stdout.close()
    return seconds


def build_txn_dir(root: str, gib: float) -> str:
    """A cleanly shut down log dir: one partition, one empty segment with its indexes and a sparse
    all-zero ``.txnindex`` of ``gib`` GiB; returns the ``.txnindex`` path."""
    part = os.path.join(root, "data", "t-0")
    os.makedirs(part)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        with open(os.path.join(root, "data", name), "w") as f:
            f.write("0\n1\nt 0 0\n")
    open(os.path.join(root, "data", ".kafka_cleanshutdown"), "wb").close()
    for suffix in (".log", ".index", ".timeindex"):
        open(os.path.join(part, f"{0:020d}{suffix}"), "wb").close()
    txn = os.path.join(part, f"{0:020d}.txnindex")
    with open(txn, "wb") as f:
        f.truncate(int(gib * 1024 * MIB) // 34 * 34)
    return txn


def build_big_record(path: str, mib: float) -> int:
    """One v2 zstd batch holding one record of ``mib`` MiB of zeros; returns the file's size."""
    from model.compression import ZSTD, compress
    from model.records import encode_batch_v2
    from model.varint import encode_varint

    n = int(mib * MIB)
    body = b"\x00\x00" + encode_varint(0) + encode_varint(-1) + encode_varint(n) + bytes(n) + encode_varint(0)
    payload = compress(ZSTD, encode_varint(len(body)) + body)
    del body
    raw = encode_batch_v2(
        records_count=1, last_offset_delta=0, codec=ZSTD, payload=payload, base_timestamp=0, max_timestamp=0
    )
    with open(path, "wb") as f:
        f.write(raw)
    return len(raw)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bounded_memory", description=__doc__.split("\n")[0])
    p.add_argument("--txn-gib", type=float, default=2.0)
    p.add_argument("--record-mib", type=float, default=250.0)
    p.add_argument("--skip-record", action="store_true", help="only the .txnindex cases")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="klc-bench-mem-") as root:
        floor_file = os.path.join(root, f"{0:020d}.txnindex")
        with open(floor_file, "wb") as f:
            f.write(bytes(34))
        floor, _, _ = _peak(["dump", floor_file])
        rows = [("floor: klc dump of a one-record .txnindex", floor, None)]
        txn = build_txn_dir(root, args.txn_gib)
        size = f"{args.txn_gib:g} GiB sparse .txnindex"
        for label, cmd in (
            (f"dump --index-sanity-check, {size}", ["dump", "--index-sanity-check", txn]),
            (f"load, a clean dir whose segment has a {size}", ["load", os.path.join(root, "data")]),
        ):
            rss, seconds, status = _peak(cmd)
            rows.append((f"{label} ({seconds:.1f} s, exit {status})", rss, None))
        first = _first_line_seconds(["dump", txn])
        rows.append((f"dump, {size}: first entry printed after {first:.2f} s", None, None))
        if not args.skip_record:
            log = os.path.join(root, f"{0:020d}.log")
            raw = build_big_record(log, args.record_mib)
            for flags in (["--print-data-log"], ["--json", "--print-data-log"]):
                rss, seconds, status = _peak(["dump", *flags, log])
                label = f"dump {' '.join(flags)}, one {args.record_mib:g} MiB record in a {raw} B zstd batch"
                rows.append((f"{label} ({seconds:.1f} s, exit {status})", rss, args.record_mib))
    for label, rss, record in rows:
        if rss is None:
            print(label)
            continue
        over = f", {rss - floor:.0f} MiB over the floor" if rss != floor else ""
        per = f", {(rss - floor) / record:.2f} x the record" if record else ""
        print(f"{label}: peak RSS {rss:.0f} MiB ({rss / floor:.2f} x the floor{over}{per})")


if __name__ == "__main__":
    main()
