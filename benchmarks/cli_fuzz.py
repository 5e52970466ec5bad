"""A fuzzer of the operator CLI: ``klc dump`` and ``klc load`` on damaged files and broker dirs.

    python -m benchmarks.cli_fuzz [--inputs 100000] [--seed 1] [--workers 2] [--out report.json]
    python -m benchmarks.cli_fuzz --replay INDEX [--seed 1]      # one input again, output shown

Every input is built from its ``(seed, index)`` alone, so a finding replays.  Inputs start from the
real broker files in ``../shared/real-data`` (every kind a log dir holds) and from files built here
(compression bombs of every codec, sparse files of GiBs, FIFOs, directories, dangling and looping
symlinks), then are damaged (bytes flipped, zeroed, cut, grown, spliced from another file), given a
name (the right kind, a ``.deleted``/``.swap``/``.cleaned`` suffix, spaces, newlines, a leading
dash) and a set of options (valid, and combinations that are usage errors).  ``load`` inputs are
data dirs of one to three partitions copied from the real ones with some of their files damaged.

Each input runs ``klc`` in a worker process, in-process (so 100,000 fit in an hour), with its
output counted and capped (past ``OUTPUT_CAP`` the reader goes away, as ``klc dump | head`` does)
and a time limit.  What counts as a finding:

* ``exception`` — anything but an exit status escaping the command: an unexpected traceback;
* ``hang`` — no exit within ``TIME_LIMIT_S`` seconds;
* ``status`` — an exit status the command's docs do not list;
* ``unnamed`` — a failing ``dump`` whose stderr names neither the file nor its directory;
* ``descriptors`` / ``mappings`` — open files or memory mappings the command left behind;
* ``modified`` — an input file or dir changed (both commands promise to modify nothing);
* ``tmpdir`` — something left in TMPDIR (``klc load``'s private copy).

Peak RSS is the worker's high-water mark (``ru_maxrss``); the report names the inputs that raised
it most above the worker's floor.  The figures of a run go in the closing note and docs/dump.md.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import io
import json
import multiprocessing
import multiprocessing.connection
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
import zlib

REAL_DATA = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "real-data"))
OUTPUT_CAP = 4 << 20  # characters of output before the reader goes away
TIME_LIMIT_S = 60.0
GIB = 1 << 30
DUMP_STATUSES = {0, 1, 2}  # docs/dump.md: 0 data reported (valid or not), 1 I/O or kind, 2 usage
LOAD_STATUSES = {0, 1, 2, 3, 4, 5}  # docs/load.md
LOAD_SHARE = 0.08  # a load costs ~20 dumps: this keeps it near a third of the time

# How an input is made, each with its weight and why.
SOURCES = (
    ("real file", 70, "bytes a real broker wrote: every kind a log dir holds"),
    ("bomb", 6, "a batch that decompresses far past the 256 MiB batch limit, per codec"),
    ("sparse", 3, "GiBs of zeros after real bytes (a preallocating file system, a damaged disk)"),
    ("special", 4, "a FIFO, a directory, a dangling or looping symlink, an empty file"),
    ("random", 17, "bytes with no structure at all"),
)
DAMAGE = (("none", 15), ("flip", 30), ("zero", 10), ("cut", 15), ("grow", 10), ("splice", 10), ("ints", 10))
KINDS = (
    "00000000000000000000.log", "00000000000000000042.index", "00000000000000000042.timeindex",
    "00000000000000000042.txnindex", "00000000000000000042.snapshot", "recovery-point-offset-checkpoint",
    "leader-epoch-checkpoint", "partition.metadata", "meta.properties", "quorum-state", "x.records",
    "00000000000000000000-0000000001.checkpoint", "log-start-offset-checkpoint",
)  # fmt: skip
DUMP_FLAGS = (
    "--deep-iteration", "--print-data-log", "--json", "--index-sanity-check", "--verify-index-only",
    "--as-records", "--skip-record-metadata", "--offsets-decoder", "--transaction-log-decoder",
    "--cluster-metadata-decoder",
)  # fmt: skip


class Hang(BaseException):
    """The time limit passed (a BaseException: the command must not be able to catch it)."""


class Sink(io.TextIOBase):
    """Output counted, capped and thrown away: past the cap the reader goes away (BrokenPipeError)."""

    def __init__(self, cap: int, keep: int = 0):
        self.cap, self.keep, self.written, self.kept = cap, keep, 0, []
        self._null = None

    def write(self, s) -> int:
        if isinstance(s, (bytes, bytearray)):  # click writes bytes where it finds no encoding
            s = bytes(s).decode("utf-8", "replace")
        self.written += len(s)
        if self.keep and sum(map(len, self.kept)) < self.keep:
            self.kept.append(s)
        if self.written > self.cap:
            raise BrokenPipeError(32, "Broken pipe")
        return len(s)

    def fileno(self) -> int:  # dump dup2()s /dev/null onto it when its reader goes away
        if self._null is None:
            self._null = os.open(os.devnull, os.O_WRONLY)
        return self._null

    def close_null(self) -> None:
        if self._null is not None:
            os.close(self._null)
            self._null = None

    @property
    def text(self) -> str:
        return "".join(self.kept)


# ---------------------------------------------------------------- inputs


def real_files() -> list[str]:
    """Every regular file of the real broker data, sorted (the index of a choice is stable)."""
    found = []
    for dirpath, dirs, names in os.walk(REAL_DATA):
        dirs.sort()
        found += [os.path.join(dirpath, n) for n in sorted(names) if not n.endswith((".md", ".py", ".json"))]
    return [p for p in found if os.path.isfile(p) and os.path.getsize(p) < (8 << 20)]


def real_partitions() -> list[str]:
    """Every partition dir of the real broker data dirs."""
    return sorted({os.path.dirname(p) for p in real_files() if p.endswith(".log") and "-" in os.path.basename(os.path.dirname(p))})


def _weighted(rng: random.Random, table) -> str:
    return rng.choices([row[0] for row in table], weights=[row[1] for row in table])[0]


def damage(rng: random.Random, data: bytes, other: bytes) -> bytes:
    """``data`` after one damage drawn from DAMAGE; ``other``, another file to splice from."""
    how = _weighted(rng, DAMAGE)
    buf = bytearray(data)
    if how == "none" or (not buf and how in ("flip", "zero", "ints")):
        return bytes(buf)
    if how == "flip":
        for _ in range(rng.choice((1, 1, 2, 8))):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    elif how == "zero":
        at = rng.randrange(len(buf))
        buf[at : at + rng.choice((1, 4, 61, 4096))] = bytes(min(len(buf) - at, 4096))
    elif how == "cut":
        del buf[rng.randrange(len(buf) + 1) :]
    elif how == "grow":
        buf += rng.randbytes(rng.choice((1, 9, 17, 61, 1000)))
    elif how == "splice":
        at = rng.randrange(len(buf) + 1)
        buf[at:] = other[rng.randrange(len(other) + 1) :]
    else:  # a boundary integer over four bytes: lengths, counts, offsets, sizes
        at = rng.randrange(len(buf))
        value = rng.choice((0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 61, 16 << 20))
        buf[at : at + 4] = value.to_bytes(4, "big")[: len(buf) - at]
    return bytes(buf)


def bomb(codec: int, claimed_mib: int) -> bytes:
    """One v2 batch holding one record of ``claimed_mib`` MiB of zeros, compressed by ``codec``."""
    from model.records import encode_batch_v2
    from model.varint import encode_varint

    n = claimed_mib << 20
    head = b"\x00\x00" + encode_varint(0) + encode_varint(-1) + encode_varint(n)
    body_len = len(head) + n + 1
    zeros = bytes(1 << 20)  # one MiB, repeated: the bomb is never held whole
    pieces = [encode_varint(body_len) + head, *[zeros] * claimed_mib, encode_varint(0)]
    payload = compress_pieces(codec, pieces)
    return encode_batch_v2(
        records_count=1, last_offset_delta=0, codec=codec, payload=payload, base_timestamp=0, max_timestamp=0
    )


def compress_pieces(codec: int, pieces) -> bytes:
    """``pieces`` compressed as one stream in Kafka's framing for ``codec``, never held whole."""
    import cramjam
    import lz4.frame
    import zstandard

    from model.compression import XERIAL_BLOCK, XERIAL_HEADER

    if codec == 1:  # gzip readers take concatenated members: one member per distinct piece
        members: dict[bytes, bytes] = {}
        for p in pieces:
            if p not in members:
                c = zlib.compressobj(6, zlib.DEFLATED, 31)
                members[p] = c.compress(p) + c.flush()
        return b"".join(members[p] for p in pieces)
    if codec == 2:
        out = bytearray(XERIAL_HEADER)
        for p in pieces:
            for i in range(0, len(p), XERIAL_BLOCK):
                block = bytes(cramjam.snappy.compress_raw(p[i : i + XERIAL_BLOCK]))
                out += len(block).to_bytes(4, "big") + block
        return bytes(out)
    if codec == 3:
        c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
        return c.begin() + b"".join(c.compress(p) for p in pieces) + c.flush()
    c = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return b"".join(c.compress(p) for p in pieces) + c.flush()


BOMB_MIB = {1: 1024, 2: 320, 3: 1024, 4: 1024}  # snappy's framing caps its ratio near 20: kept small
_BOMBS: dict[int, bytes] = {}


def build_bombs() -> None:
    """Built once, before the workers fork (they share the bytes)."""
    for codec, mib in BOMB_MIB.items():
        if codec not in _BOMBS:
            _BOMBS[codec] = bomb(codec, mib)


def cached_bomb(codec: int) -> bytes:
    build_bombs()
    return _BOMBS[codec]


def odd_name(rng: random.Random, kind: str) -> str:
    """The kind's name, often with a rename suffix, sometimes with characters a shell trips on."""
    name = kind + rng.choice(("", "", "", ".deleted", ".swap", ".cleaned"))
    return rng.choice((name, name, name, name, "a b " + name, "line\nbreak" + name, "-" + name, "ünï-" + name))


def make_file(rng: random.Random, where: str, files: list[str]) -> str:
    """One dump input under ``where``: its path (a file, or a special file)."""
    kind = rng.choice(KINDS)
    path = os.path.join(where, odd_name(rng, kind))
    source = _weighted(rng, SOURCES)
    if source == "special":
        return special(rng, path)
    if source == "bomb":
        data = cached_bomb(rng.choice((1, 2, 3, 4)))
    elif source == "random":
        data = rng.randbytes(rng.choice((0, 1, 12, 17, 61, 100, 4096)))
    else:
        with open(rng.choice(files), "rb") as f:
            data = f.read()
    with open(rng.choice(files), "rb") as f:
        other = f.read(1 << 16)
    with open(path, "wb") as f:
        f.write(damage(rng, data, other))
        if source == "sparse":
            f.truncate(f.tell() + rng.choice((1, 2, 4)) * GIB + rng.randrange(64))
    return path


def special(rng: random.Random, path: str) -> str:
    how = rng.choice(("fifo", "dir", "dangling", "loop", "empty", "devnull"))
    if how == "fifo":
        os.mkfifo(path)
    elif how == "dir":
        os.mkdir(path)
        open(os.path.join(path, "00000000000000000000.log"), "wb").close()
    elif how == "dangling":
        os.symlink(path + ".nowhere", path)
    elif how == "loop":
        os.symlink(path, path)
    elif how == "devnull":
        os.symlink(os.devnull, path)
    else:
        open(path, "wb").close()
    return path


def dump_args(rng: random.Random, path: str) -> list[str]:
    flags = rng.sample(DUMP_FLAGS, rng.choice((0, 0, 1, 1, 2, 3)))
    if rng.random() < 0.1:
        flags += ["--max-bytes", str(rng.choice((0, 1, 61, 4096, 2**63)))]
    if rng.random() < 0.1:
        flags += ["--key-decoder", rng.choice(("hex", "long", "int", "string"))]
    return ["dump", *flags, "--", path] if rng.random() < 0.5 else ["dump", *flags, path]


def make_dir(rng: random.Random, where: str, partitions: list[str], files: list[str]) -> str:
    """A data dir of one to three real partitions, their checkpoints, some files damaged."""
    data = os.path.join(where, "data")
    os.makedirs(data)
    for src in rng.sample(partitions, rng.choice((1, 1, 2, 3))):
        if os.path.exists(os.path.join(data, os.path.basename(src))):
            continue  # the same partition of two real brokers: one is enough
        shutil.copytree(src, os.path.join(data, os.path.basename(src)))
        parent = os.path.dirname(src)
        for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "replication-offset-checkpoint", ".kafka_cleanshutdown", "meta.properties"):
            if os.path.exists(os.path.join(parent, name)) and not os.path.exists(os.path.join(data, name)):
                shutil.copy(os.path.join(parent, name), os.path.join(data, name))
    every = sorted(os.path.join(d, n) for d, _, names in os.walk(data) for n in names)
    for victim in rng.sample(every, min(len(every), rng.choice((1, 1, 2, 4)))):
        damage_in_place(rng, victim, files)
    return data


def damage_in_place(rng: random.Random, path: str, files: list[str]) -> None:
    how = rng.random()
    if how < 0.1:
        os.remove(path)
        return
    if how < 0.15:
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) + GIB)  # sparse
        return
    with open(path, "rb") as f:
        data = f.read()
    with open(rng.choice(files), "rb") as f:
        other = f.read(1 << 16)
    with open(path, "wb") as f:
        f.write(damage(rng, data, other))


def make_input(seed: int, index: int, where: str, files, partitions) -> list[str]:
    """The ``klc`` arguments of input ``index``, its files made under ``where``."""
    rng = random.Random(f"{seed}:{index}")
    if rng.random() < LOAD_SHARE:
        data = make_dir(rng, where, partitions, files)
        return ["load", *(["--json"] if rng.random() < 0.5 else []), data]
    paths = [make_file(rng, _own_dir(where, i), files) for i in range(rng.choice((1, 1, 1, 2)))]
    args = dump_args(rng, paths[0])
    return args + paths[1:]


def _own_dir(where: str, i: int) -> str:
    """The folder of an input's ``i``-th file: two files may draw the same name."""
    if i == 0:
        return where
    os.makedirs(os.path.join(where, str(i)), exist_ok=True)
    return os.path.join(where, str(i))


# ---------------------------------------------------------------- running one


def fingerprint(root: str) -> dict:
    """What the command must not change: every entry's kind, size and the hash of its first MiB."""
    seen = {}
    for dirpath, dirs, names in os.walk(root):
        for name in sorted(dirs + names):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            digest = ""
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    digest = hashlib.sha1(f.read(1 << 20)).hexdigest()
            seen[os.path.relpath(path, root)] = (st.st_mode, st.st_size if not os.path.isdir(path) else 0, digest)
    return seen


def held(roots: tuple[str, ...]) -> tuple[int, int]:
    """(descriptors, mappings) this process holds on files under ``roots`` (the input and TMPDIR):
    after a command, any is a leak (a deleted file's entry names its old path)."""
    fds = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            fds += os.readlink(f"/proc/self/fd/{fd}").startswith(roots)
    with open("/proc/self/maps") as f:
        maps = sum(1 for line in f if line.rstrip("\n").split(None, 5)[5:] and line.split(None, 5)[5].startswith(roots))
    return fds, maps


def _on_alarm(_signum, _frame):
    raise Hang()


def run_klc(args: list[str]) -> tuple[int | None, str, Sink, Sink]:
    """(exit status or None, what escaped, stdout sink, stderr sink) of one in-process ``klc``."""
    from conformance.cli import main

    out, err = Sink(OUTPUT_CAP), Sink(1 << 20, keep=8192)
    status, escaped = None, ""
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main.main(args, prog_name="klc")
        status = 0
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Hang:
        escaped = "hang"
    except BaseException:  # the finding itself: any traceback escaping klc
        escaped = traceback.format_exc(limit=-3)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        out.close_null()
        err.close_null()
    return status, escaped, out, err


def judge(index: int, args: list[str], where: str, tmpdir: str) -> dict:
    """Run input ``index`` and return its record: status, findings, resources."""
    before = fingerprint(where)
    start = time.perf_counter()
    status, escaped, out, err = run_klc(args)
    seconds = time.perf_counter() - start
    gc.collect()
    findings = []
    if escaped == "hang":
        findings.append(("hang", f"no exit in {TIME_LIMIT_S:.0f} s"))
    elif escaped:
        findings.append(("exception", escaped.strip().splitlines()[-1]))
    elif status not in (LOAD_STATUSES if args[0] == "load" else DUMP_STATUSES):
        findings.append(("status", f"exit {status}"))
    elif args[0] == "dump" and status == 1 and not _names_a_file(err.text, args):
        findings.append(("unnamed", err.text.strip().splitlines()[-1] if err.text.strip() else "no stderr"))
    fds, maps = held((where, tmpdir))
    if fds:
        findings.append(("descriptors", f"{fds} left open"))
    if maps:
        findings.append(("mappings", f"{maps} left mapped"))
    if fingerprint(where) != before:
        findings.append(("modified", "an input changed"))
    if os.listdir(tmpdir):
        findings.append(("tmpdir", f"{len(os.listdir(tmpdir))} entries left in TMPDIR"))
    return {
        "index": index, "args": args[:-1] + [os.path.basename(args[-1])], "status": status,
        "seconds": round(seconds, 4), "out_chars": out.written, "findings": findings,
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }  # fmt: skip


def _names_a_file(stderr: str, args: list[str]) -> bool:
    paths = [a for a in args[1:] if os.path.sep in a]
    return any(p in stderr or os.path.basename(p) in stderr or os.path.dirname(p) in stderr for p in paths)


# ---------------------------------------------------------------- workers and the report

MEMORY_LIMIT = 4 << 30  # address space of a worker: past it, an allocation fails (MemoryError) and says where


def worker(conn, seed: int, tmp_root: str) -> None:
    """Run the inputs the parent sends, one at a time, and send back each one's record."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    tmpdir = tempfile.mkdtemp(prefix="tmpdir-", dir=tmp_root)
    os.environ["TMPDIR"] = tempfile.tempdir = tmpdir
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the run
    files, partitions = real_files(), real_partitions()
    import conformance.cli  # noqa: F401  what every input imports, imported before the first
    import operator_tools.load_report  # noqa: F401

    gc.freeze()  # the collection after each input then looks at that input's objects only
    while (index := conn.recv()) is not None:
        conn.send(run_one(seed, index, tmp_root, tmpdir, files, partitions))


def run_one(seed: int, index: int, tmp_root: str, tmpdir: str, files, partitions) -> dict:
    where = tempfile.mkdtemp(prefix=f"in-{index}-", dir=tmp_root)
    try:
        args = make_input(seed, index, where, files, partitions)
        floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        record = judge(index, args, where, tmpdir)
        record["rss_rise_mib"] = round(record["rss_mib"] - floor, 1)
        return record
    finally:
        shutil.rmtree(where, ignore_errors=True)
        for name in os.listdir(tmpdir):
            shutil.rmtree(os.path.join(tmpdir, name), ignore_errors=True)


class Worker:
    """A worker process, the input it runs and since when; replaced when it dies or is stopped."""

    def __init__(self, ctx, seed: int, tmp_root: str):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=worker, args=(child, seed, tmp_root), daemon=True)
        self.process.start()
        child.close()
        self.index, self.since, self.done = None, 0.0, 0

    def give(self, index: int) -> None:
        self.conn.send(index)
        self.index, self.since = index, time.monotonic()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _lost(index: int, why: str) -> dict:
    """The record of an input whose worker died or never answered."""
    return {"index": index, "args": ["?"], "status": None, "seconds": None, "out_chars": 0,
            "findings": [(why.split(":")[0], why)], "rss_mib": 0.0, "rss_rise_mib": 0.0}  # fmt: skip


class _Kept(list):
    """The records, each also written as a JSON line as it comes (``--out``'s ``.jsonl``), so that a
    run stopped half-way keeps what it judged."""

    def __init__(self, path: str | None):
        super().__init__()
        self.file = open(path, "w", encoding="utf-8") if path else None  # noqa: SIM115  closed by fuzz

    def append(self, record: dict) -> None:
        super().append(record)
        if self.file:
            self.file.write(json.dumps(record) + "\n")
            self.file.flush()


def fuzz(inputs: int, seed: int, workers: int, start: int = 0, jsonl: str | None = None) -> dict:
    build_bombs()  # before the workers fork: they share the bytes
    tmp_root = tempfile.mkdtemp(prefix="klc-fuzz-")
    ctx = multiprocessing.get_context("fork")
    began, records = time.perf_counter(), _Kept(jsonl)
    todo = iter(range(start, start + inputs))
    pool = [Worker(ctx, seed, tmp_root) for _ in range(workers)]
    try:
        for w in pool:
            _next(w, todo)
        while any(w.index is not None for w in pool):
            _collect(pool, ctx, seed, tmp_root, todo, records)
    finally:
        for w in pool:
            w.stop()
        shutil.rmtree(tmp_root, ignore_errors=True)
        if records.file:
            records.file.close()
    return summarise(records, time.perf_counter() - began, seed)


def _next(w: Worker, todo) -> None:
    index = next(todo, None)
    if index is not None:
        w.give(index)
    else:
        w.index = None


def _received(w: Worker) -> dict | None:
    """The worker's record, or None when it died instead (its end of the pipe closed)."""
    try:
        return w.conn.recv()
    except (EOFError, OSError):
        w.process.join(5)
        return None


def _collect(pool: list[Worker], ctx, seed: int, tmp_root: str, todo, records: list) -> None:
    """Wait for a record, a dead worker or a hung one; account for it and hand out the next input."""
    busy = [w for w in pool if w.index is not None]
    multiprocessing.connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=5)
    for i, w in enumerate(pool):
        if w.index is None:
            continue
        if w.conn.poll() and (record := _received(w)) is not None:
            records.append(record)
            w.done += 1
        elif not w.process.is_alive():
            records.append(_lost(w.index, f"died: exit {w.process.exitcode} (a signal if negative: the OOM killer sends 9)"))
        elif time.monotonic() - w.since > TIME_LIMIT_S + 60:
            records.append(_lost(w.index, "hang: the worker stopped answering"))
        else:
            continue
        if not w.process.is_alive() or w.done >= 500 or records[-1]["findings"]:
            w.stop()  # a fresh worker: one input's leak or damage cannot hide the next one's
            pool[i] = w = Worker(ctx, seed, tmp_root)
        _next(w, todo)
        if len(records) % 5000 == 0:
            print(f"{len(records)} inputs, {sum(bool(r['findings']) for r in records)} with findings", file=sys.stderr)


def summarise(records: list[dict], seconds: float, seed: int) -> dict:
    findings: dict[str, list] = {}
    for r in records:
        for kind, what in r["findings"]:
            findings.setdefault(kind, []).append({"index": r["index"], "what": what, "args": r["args"]})
    by_command = {}
    for r in records:
        c = by_command.setdefault(r["args"][0], {"inputs": 0, "statuses": {}})
        c["inputs"] += 1
        c["statuses"][str(r["status"])] = c["statuses"].get(str(r["status"]), 0) + 1
    return {
        "seed": seed, "inputs": len(records), "seconds": round(seconds, 1), "by_command": by_command,
        "findings": {k: {"count": len(v), "first": v[:10]} for k, v in sorted(findings.items())},
        "peak_rss_mib": round(max((r["rss_mib"] for r in records), default=0), 1),
        "largest_rss_rises": sorted(records, key=lambda r: -r["rss_rise_mib"])[:5],
        "slowest": sorted(records, key=lambda r: -(r["seconds"] or 0))[:5],  # a lost input has no time
        "output_capped": sum(r["out_chars"] > OUTPUT_CAP for r in records),
    }  # fmt: skip


def replay(seed: int, index: int) -> None:
    """Input ``index`` again, in this process, its output shown."""
    files, partitions = real_files(), real_partitions()
    where = tempfile.mkdtemp(prefix=f"in-{index}-")
    args = make_input(seed, index, where, files, partitions)
    print("klc " + " ".join(map(repr, args)), file=sys.stderr)
    from conformance.cli import main

    try:
        main.main(args, prog_name="klc")
    finally:
        shutil.rmtree(where, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cli_fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="inputs to run (default 100,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="index of the first input")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", help="write the report here as JSON (default: stdout), and each record to OUT + l (JSON lines)")
    parser.add_argument("--replay", type=int, metavar="INDEX", help="run one input in this process, output shown")
    args = parser.parse_args(argv)
    if not os.path.isdir(REAL_DATA):
        parser.error(f"no real broker data at {REAL_DATA} (the shared folder beside the checkout)")
    if args.replay is not None:
        replay(args.seed, args.replay)
        return 0
    report = fuzz(args.inputs, args.seed, args.workers, args.start, args.out and args.out + "l")
    text = json.dumps(report, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text if not args.out else _headline(report))
    return 1 if report["findings"] else 0


def _headline(report: dict) -> str:
    found = ", ".join(f"{k} {v['count']}" for k, v in report["findings"].items()) or "none"
    return f"{report['inputs']} inputs in {report['seconds']} s, findings: {found}, peak RSS {report['peak_rss_mib']} MiB"


if __name__ == "__main__":
    sys.exit(main())
