"""Crash images: what a power loss leaves of a simulated storage (DESIGN.md "Storage faults").

:class:`~conformance.sim_storage.SimStorage` keeps, per file and per directory, the durable state and
a journal of the operations made since.  A :class:`Fault` names a family and its few parameters;
:func:`crash_image` decides, operation by operation, what reached the disk and renders the files:

* ``process`` — every operation persists (``kill -9``: the page cache survives);
* ``prefix`` — the first ``keep`` pending operations persist, in order (ALICE's across-syscall
  atomicity);
* ``reorder`` — every pending operation persists except those numbered in ``lose`` (ALICE's
  omit-one, generalised);
* ``torn`` — operations before ``op`` persist, ``op`` (a write) persists only its first ``cut``
  sectors (``unit`` 512) or pages (4096), the rest ``absent``, ``zero`` or ``junk``; later ones are
  lost (FoundationDB's ``AsyncFileNonDurable``);
* ``size_ahead`` — everything persists, but the bytes of write ``op`` read as zeros (delayed
  allocation: the length reached the disk, the data did not);
* ``metadata`` — file data persists (``data``) or not, and each directory operation (create, rename,
  unlink, mkdir) persists unless numbered in ``lose``, independently of the others.

Writes through a mapping (index files) are not operations of their own: the pages that differ from
what the journal explains become page-sized writes at the end of the journal, so every family can
keep or lose them too.  Parameters out of range are clamped, so a shrunk or hand-edited scenario
always names some image.  Corruption (:func:`corrupt`) is not a crash: it edits an image in place.
"""

from __future__ import annotations

import random

import attrs

from conformance.sim_storage import Create, Dir, Inode, MakeDir, Rename, SimStorage, Truncate, Unlink, Write
from model.file_records import iterate_file
from model.names import NameError_, offset_from_file_name

FAMILIES = ("process", "prefix", "reorder", "torn", "size_ahead", "metadata")
FILLS = ("absent", "zero", "junk")
UNITS = (512, 4096)
CORRUPTIONS = ("zero", "junk", "bitflip", "cut")


class FaultError(ValueError):
    """A fault description that names no image (bad family, unknown file…)."""


@attrs.frozen
class Fault:
    family: str = "process"
    keep: int = 0  # prefix
    lose: tuple[int, ...] = ()  # reorder, metadata
    op: int = 0  # torn, size_ahead
    unit: int = 512  # torn
    cut: int = 0  # torn
    fill: str = "absent"  # torn
    data: bool = True  # metadata
    seed: int = 0  # junk bytes

    def __attrs_post_init__(self):
        if self.family not in FAMILIES:
            raise FaultError(f"unknown crash family {self.family!r} (one of {', '.join(FAMILIES)})")
        if self.fill not in FILLS:
            raise FaultError(f"unknown fill {self.fill!r} (one of {', '.join(FILLS)})")
        if self.unit not in UNITS:
            raise FaultError(f"unit must be 512 or 4096, got {self.unit}")

    def to_json(self) -> dict:
        keys = {
            "process": (),
            "prefix": ("keep",),
            "reorder": ("lose",),
            "torn": ("op", "unit", "cut", "fill", "seed"),
            "size_ahead": ("op",),
            "metadata": ("lose", "data"),
        }[self.family]
        out: dict = {"family": self.family}
        for k in keys:
            v = getattr(self, k)
            out[k] = list(v) if isinstance(v, tuple) else v
        return out


@attrs.frozen
class CrashImage:
    files: dict  # path → bytes
    directories: tuple[str, ...]
    mtimes: dict  # path → ms
    pending: int  # operations that were pending at the crash
    persisted: frozenset  # their numbers that reached the disk whole

    def storage(self, clock=None) -> SimStorage:
        return SimStorage.from_image(self.files, self.directories, clock, self.mtimes)


def _replay(inode: Inode, ops) -> bytes:
    data = bytearray(inode.durable)
    for op in ops:
        _apply(data, op)
    return bytes(data)


def _apply(data: bytearray, op) -> None:
    if isinstance(op, Write):
        end = op.offset + len(op.data)
        if end > len(data):
            data.extend(bytes(end - len(data)))
        data[op.offset : end] = op.data
    elif isinstance(op, Truncate):
        if op.size < len(data):
            del data[op.size :]
        else:
            data.extend(bytes(op.size - len(data)))


def journal(storage: SimStorage, page: int = 4096) -> list[tuple[object, object]]:
    """The pending operations in order, then the dirty mapped pages as page writes."""
    ops = storage.pending_ops()
    inodes: dict[int, Inode] = {id(node): node for _, node in storage.inodes()}
    for inode in inodes.values():
        explained = _replay(inode, inode.pending)
        current = bytes(inode.data)
        if explained == current:
            continue
        for p in range(0, len(current), page):
            if current[p : p + page] != explained[p : p + page]:
                ops.append((inode, Write(p, current[p : p + page])))
    return ops


def _junk(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


def _decide(fault: Fault, ops) -> dict[int, object]:
    """op number → the operation as it reached the disk (absent: lost)."""
    n = len(ops)
    fam = fault.family
    if fam == "process":
        return {i: op for i, (_, op) in enumerate(ops)}
    if fam == "prefix":
        return {i: op for i, (_, op) in enumerate(ops) if i < fault.keep}
    if fam == "reorder":
        lose = set(fault.lose)
        return {i: op for i, (_, op) in enumerate(ops) if i not in lose}
    if fam == "metadata":
        lose = set(fault.lose)
        out = {}
        for i, (_, op) in enumerate(ops):
            is_data = isinstance(op, Write | Truncate)
            if (is_data and fault.data) or (not is_data and i not in lose):
                out[i] = op
        return out
    if n == 0:
        return {}
    k = min(max(fault.op, 0), n - 1)
    if fam == "size_ahead":
        out = {i: op for i, (_, op) in enumerate(ops)}
        if isinstance(out[k], Write):
            out[k] = Write(out[k].offset, bytes(len(out[k].data)))
        return out
    # torn
    out = {i: op for i, (_, op) in enumerate(ops) if i < k}
    op = ops[k][1]
    if not isinstance(op, Write):
        out[k] = op
        return out
    start, end = op.offset, op.offset + len(op.data)
    cuts = [start] + [b for b in range((start // fault.unit + 1) * fault.unit, end, fault.unit)] + [end]
    cut = cuts[min(max(fault.cut, 0), len(cuts) - 2)] - start  # never the whole write
    kept = op.data[:cut]
    if fault.fill == "absent":
        out[k] = Write(start, kept) if kept else None
    elif fault.fill == "zero":
        out[k] = Write(start, kept + bytes(len(op.data) - cut))
    else:
        out[k] = Write(start, kept + _junk(fault.seed, len(op.data) - cut))
    return out


def crash_image(storage: SimStorage, fault: Fault) -> CrashImage:
    """The files a power loss leaves, under ``fault``."""
    ops = journal(storage)
    kept = _decide(fault, ops)
    persisted = frozenset(i for i, op in kept.items() if op is ops[i][1])
    per_inode: dict[int, list] = {}
    per_dir: dict[int, list] = {}
    for i, (owner, _) in enumerate(ops):
        op = kept.get(i)
        if op is None:
            continue
        (per_dir if isinstance(owner, Dir) else per_inode).setdefault(id(owner), []).append(op)
    files, dirs, mtimes = {}, [], {}
    d_path: dict[int, str] = {}

    def entries_of(d: Dir) -> dict:
        out = dict(d.durable)
        for op in per_dir.get(id(d), []):
            if isinstance(op, Create | MakeDir):
                out[op.name] = op.node
            elif isinstance(op, Unlink):
                out.pop(op.name, None)
            elif isinstance(op, Rename):
                src_dir, src = op.src.rsplit("/", 1)
                dst_dir, dst = op.dst.rsplit("/", 1)
                moved = out.get(src) is op.node and src_dir in (d_path[id(d)], dst_dir)
                if src_dir == dst_dir:  # one atomic rename: only if its source is there
                    if moved:
                        out[dst] = out.pop(src)
                elif d_path[id(d)] == src_dir:  # across directories: each side on its own
                    if moved:
                        del out[src]
                else:
                    out[dst] = op.node
        return out

    def walk(d: Dir, prefix: str) -> None:
        d_path[id(d)] = prefix
        for name, node in sorted(entries_of(d).items()):
            path = f"{prefix}/{name}"
            if isinstance(node, Dir):
                dirs.append(path)
                walk(node, path)
            else:
                data = bytearray(node.durable)
                for op in per_inode.get(id(node), []):
                    _apply(data, op)
                files[path] = bytes(data)
                mtimes[path] = node.mtime_ms

    walk(storage.root, "")
    return CrashImage(files, tuple(dirs), mtimes, len(ops), persisted)


def corrupt(files: dict, path: str, offset: int, length: int, kind: str, seed: int = 0) -> dict:
    """``files`` with ``length`` bytes of ``path`` at ``offset`` (clamped into the file) zeroed,
    replaced by junk, or one bit flipped (``bitflip``: bit ``seed % 8`` of the byte at ``offset``),
    or the file cut short to its first ``offset`` bytes (``cut``: a lost tail, e.g. a copy cut off;
    the tail rules of §1.10 then apply to what is left)."""
    if kind not in CORRUPTIONS:
        raise FaultError(f"unknown corruption {kind!r} (one of {', '.join(CORRUPTIONS)})")
    if path not in files:
        raise FaultError(f"no file {path!r} to corrupt")
    data = bytearray(files[path])
    if not data:
        return dict(files)
    offset = min(max(offset, 0), len(data) - 1)
    length = min(max(length, 1), len(data) - offset)
    if kind == "cut":
        return {**files, path: bytes(data[:offset])}
    if kind == "zero":
        data[offset : offset + length] = bytes(length)
    elif kind == "junk":
        data[offset : offset + length] = _junk(seed, length)
    else:
        data[offset] ^= 1 << (seed % 8)
    return {**files, path: bytes(data)}


PRODUCER_STATE_DAMAGE = (
    "snapshot torn",
    "snapshot missing",
    "snapshot above the log end",
    "txnindex torn",
    "txnindex missing",
)


def producer_state_damage(live: dict[str, bytes], image: dict[str, bytes]) -> tuple[str, ...]:
    """What a crash image did to the producer-state files (snapshots and .txnindex, docs/producer-state.md), comparing it with
    the files as the process saw them at the crash: a snapshot or ``.txnindex`` whose bytes differ
    (torn) or that is gone (missing), and a snapshot above its partition's log end in the image —
    a load must delete it (rule 35).  Names from :data:`PRODUCER_STATE_DAMAGE`."""
    found = set()
    for path, data in live.items():
        kind = "snapshot" if path.endswith(".snapshot") else "txnindex" if path.endswith(".txnindex") else None
        if kind is None:
            continue
        if path not in image:
            found.add(f"{kind} missing")
        elif image[path] != data:
            found.add(f"{kind} torn")
    ends = _log_ends(image)
    for path in image:
        head, _, name = path.rpartition("/")
        offset = _file_offset(name) if name.endswith(".snapshot") else None
        if offset is not None and offset > ends.get(head, 0):
            found.add("snapshot above the log end")
    return tuple(k for k in PRODUCER_STATE_DAMAGE if k in found)


def _log_ends(image: dict[str, bytes]) -> dict[str, int]:
    """Per partition dir, what its recovery would make the log end: after the last valid batch of
    its ``.log`` files, or the base of the highest (empty) one."""
    ends: dict[str, int] = {}
    for path, data in image.items():
        head, _, name = path.rpartition("/")
        base = _file_offset(name) if name.endswith(".log") else None
        if base is not None:
            last = max((b.header().last_offset + 1 for b in iterate_file(data).batches), default=0)
            ends[head] = max(ends.get(head, 0), last, base)
    return ends


def _file_offset(name: str) -> int | None:
    """The offset a file's name gives (§2.1), None for a name that gives none."""
    try:
        return offset_from_file_name(name)
    except NameError_:
        return None
