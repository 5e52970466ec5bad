"""Peak memory and time of ``klc dump`` deep iteration on one zstd batch of millions of tiny records.

    python scripts/dump_memory.py [--records N] [--tree PATH] [--codec zstd|gzip|snappy|lz4]

Builds one v2 batch of N records (no key, no value, consecutive offsets) compressed with the codec,
writes it as a segment in a temporary directory, and runs ``klc dump`` on it in a child process —
``--deep-iteration``, then ``--json --print-data-log`` — with stdout to /dev/null.  Prints, per run,
the child's peak RSS in MB (its ``ru_maxrss``, one fresh child per run) and
its wall time in seconds.  ``--tree`` runs the code of another checkout (PYTHONPATH), for a
before/after comparison.  MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
MODES = (["--deep-iteration"], ["--json", "--print-data-log"])


def build_batch(n: int, codec: int) -> bytes:
    """One v2 batch of ``n`` records: attributes 0, timestamp delta 0, offset delta i, null key and
    value, no headers (§1.6), encoded here rather than through Record objects to build it fast."""
    from model.compression import compress
    from model.records import encode_batch_v2
    from model.varint import encode_varint

    null_tail = encode_varint(-1) * 2 + encode_varint(0)
    parts = []
    for i in range(n):
        body = b"\x00\x00" + encode_varint(i) + null_tail
        parts.append(encode_varint(len(body)) + body)
    payload = compress(codec, b"".join(parts))
    return encode_batch_v2(
        records_count=n, last_offset_delta=n - 1, codec=codec, payload=payload, base_timestamp=0, max_timestamp=0
    )


def write_batch(path: str, n: int, codec: int) -> None:
    with open(path, "wb") as f:
        f.write(build_batch(n, codec))


def run(tree: str, path: str, flags: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of one ``klc dump`` child, from its own rusage (``wait4``)."""
    env = dict(os.environ, PYTHONPATH=tree)
    cmd = [sys.executable, "-c", "from conformance.cli import main; main()", "dump", *flags, path]
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        child = subprocess.Popen(cmd, stdout=devnull, env=env, cwd=tree)  # -c puts the cwd first on sys.path
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"klc dump exited with {child.returncode}")
    return usage.ru_maxrss * 1024 / 1e6, seconds  # ru_maxrss: KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=4_000_000)
    ap.add_argument("--codec", choices=sorted(CODECS), default="zstd")
    ap.add_argument("--tree", default=ROOT, help="checkout whose code runs (default: this one)")
    ap.add_argument("--mode", choices=["deep", "json", "both"], default="both")
    args = ap.parse_args()
    modes = {"deep": MODES[:1], "json": MODES[1:], "both": MODES}[args.mode]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "00000000000000000000.log")
        # Built in a child of its own: a dump child's peak RSS starts at this process's RSS at
        # fork time (Linux keeps the pre-exec high-water mark), so this process stays small.
        build = (
            f"from scripts.dump_memory import write_batch; write_batch({path!r}, {args.records}, {CODECS[args.codec]})"
        )
        subprocess.run([sys.executable, "-c", build], env=dict(os.environ, PYTHONPATH=ROOT), check=True)
        print(f"{args.records} records, {args.codec} batch of {os.path.getsize(path)} bytes; code: {args.tree}")
        for flags in modes:
            mb, seconds = run(args.tree, path, flags)
            print(f"  klc dump {' '.join(flags)}: peak RSS {mb:.0f} MB, {seconds:.1f} s")


if __name__ == "__main__":
    main()
