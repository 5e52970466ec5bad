"""The simulated storage backend: in-memory files and directories behind the storage protocol of
:mod:`impl.storage`, keeping what crash injection needs (DESIGN.md "Storage faults").

Per file: the current content, the *durable* content (as of the last fsync or msync) and the
operations since then (:class:`Write`, :class:`Truncate`; writes through a mapping are not
individual operations, :meth:`SimFile.dirty_pages` compares content with the durable copy).  Per
directory: the durable entries (as of the last fsync of that directory) and the metadata operations
since then (:class:`Create`, :class:`Rename`, :class:`Unlink`, :class:`MakeDir`).  A file keeps its
identity (an :class:`Inode`) across renames, so a renamed file carries its durable content and its
pending writes along.  Every pending operation is also entered, in order, in the storage's
``journal``; :mod:`conformance.crash_images` turns the journal into crash images.
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import posixpath
from collections.abc import Callable

import attrs

from model.names import LOCK_FILE

from impl.storage import IoStats


@attrs.frozen
class Write:
    offset: int
    data: bytes


@attrs.frozen
class Truncate:
    size: int


@attrs.frozen
class Create:
    name: str
    node: object = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Rename:
    src: str
    dst: str
    node: object = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Unlink:
    name: str


@attrs.frozen
class MakeDir:
    name: str
    node: object = attrs.field(default=None, eq=False, repr=False)


_ids = itertools.count(1)


# Files made and removed durably at once, never journaled: LogManager's dir lock, which holds
# nothing a load reads.  Journaled, its creation at every startup would renumber the pending
# operations every crash image of a load is cut from (conformance.crash_images; the tracing
# wrapper does not count its operations either: conformance.tracing.UNCOUNTED).
UNJOURNALED = frozenset({LOCK_FILE})


@attrs.define(eq=False)
class Inode:
    data: bytearray = attrs.Factory(bytearray)
    durable: bytes = b""
    pending: list = attrs.Factory(list)
    mtime_ms: int = 0
    ident: int = attrs.Factory(lambda: next(_ids))

    def resize(self, size: int) -> None:
        """Change the length; a buffer exported to a mapping is replaced, not resized (the old
        mapping goes stale, as after a real remap)."""
        try:
            if size < len(self.data):
                del self.data[size:]
            else:
                self.data.extend(bytes(size - len(self.data)))
        except BufferError:
            fresh = bytearray(self.data[:size])
            fresh.extend(bytes(size - len(fresh)))
            self.data = fresh


@attrs.define(eq=False)
class Dir:
    entries: dict = attrs.Factory(dict)  # name → Inode | Dir
    durable: dict = attrs.Factory(dict)  # name → Inode | Dir as of the last fsync_dir
    pending: list = attrs.Factory(list)


@functools.lru_cache(maxsize=4096)
def _parts(path: str) -> tuple[str, ...]:
    """The components of ``path``, normalised as an absolute path (a simulated broker names the
    same few hundred paths over and over: cached)."""
    return tuple(p for p in _norm(path).split("/") if p)


@functools.lru_cache(maxsize=4096)
def _norm(path: str) -> str:
    return posixpath.normpath("/" + path) if not path.startswith("/") else posixpath.normpath(path)


class SimFile:
    def __init__(self, storage: SimStorage, path: str, inode: Inode):
        self.path = path
        self._storage = storage
        self._inode = inode
        self._closed = False
        storage.stats.opens += 1

    def _mutate(self) -> Inode:
        self._storage._check_writable(self.path)
        self._inode.mtime_ms = self._storage.clock()
        return self._inode

    def size(self) -> int:
        return len(self._inode.data)

    def read(self, offset: int, n: int) -> bytes:
        data = bytes(self._inode.data[offset : offset + n])
        self._storage.stats.bytes_read += len(data)
        self._storage.stats.reads += 1
        return data

    def write_at(self, offset: int, data) -> None:
        inode = self._mutate()
        data = bytes(data)
        if not data:  # pwrite of nothing changes nothing, not even the length
            return
        end = offset + len(data)
        if end > len(inode.data):
            inode.resize(end)
        inode.data[offset:end] = data
        self._storage._note(inode, Write(offset, data))

    def append(self, data) -> int:
        position = self.size()
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        inode = self._mutate()
        inode.resize(size)
        self._storage._note(inode, Truncate(size))

    def fsync(self) -> None:
        self._inode.durable = bytes(self._inode.data)
        self._inode.pending.clear()
        self._storage.stats.fsyncs += 1

    def map(self):
        self._storage.stats.maps += 1
        return memoryview(self._inode.data)

    def unmap(self, mapping) -> None:
        mapping.release()

    def flush_map(self, mapping) -> None:
        self.fsync()

    def view(self):
        self._storage.stats.maps += 1
        return bytes(self._inode.data)

    def dirty_pages(self, page: int = 4096) -> list[int]:
        """Page numbers whose current content differs from the durable content."""
        a, b = self._inode.data, self._inode.durable
        pages = (max(len(a), len(b)) + page - 1) // page
        return [p for p in range(pages) if a[p * page : (p + 1) * page] != b[p * page : (p + 1) * page]]

    def close(self) -> None:
        self._closed = True


class SimStorage:
    """The simulated backend.  ``clock`` gives "now" in milliseconds for modification times."""

    def __init__(self, clock: Callable[[], int] | None = None, read_only: bool = False):
        self.stats = IoStats()
        self.clock = clock or (lambda: 0)
        self.read_only = read_only
        self.root = Dir()
        self.journal: list[tuple[Inode | Dir, object]] = []  # (owner, pending op), in the order made

    def _note(self, owner, op) -> None:
        owner.pending.append(op)
        self.journal.append((owner, op))
        if len(self.journal) > 4096 and len(self.journal) % 4096 == 0:
            self.compact_journal()

    def compact_journal(self) -> None:
        """Drop the entries made durable since (an fsync empties its owner's pending list)."""
        live = {id(op) for owner, _ in self.journal for op in owner.pending}
        self.journal = [(owner, op) for owner, op in self.journal if id(op) in live]

    def pending_ops(self) -> list[tuple[Inode | Dir, object]]:
        """The operations not yet durable, in the order they were made."""
        self.compact_journal()
        return list(self.journal)

    # --- lookup -------------------------------------------------------------------------------

    def _check_writable(self, path: str) -> None:
        if self.read_only:
            raise PermissionError(f"read-only storage: cannot modify {path}")

    def _walk(self, path: str) -> tuple[Dir, str]:
        """(parent directory, name) of ``path``; the parent must exist."""
        path = _norm(path)
        if path == "/":
            raise IsADirectoryError(path)
        parent, name = posixpath.split(path)
        node = self._node(parent)
        if not isinstance(node, Dir):
            raise NotADirectoryError(parent)
        return node, name

    def _node(self, path: str):
        node = self.root
        for part in _parts(path):
            if not isinstance(node, Dir):
                raise NotADirectoryError(path)
            if part not in node.entries:
                raise FileNotFoundError(path)
            node = node.entries[part]
        return node

    # --- the protocol ---------------------------------------------------------------------------

    def open(self, path: str, create: bool = False) -> SimFile:
        parent, name = self._walk(path)
        node = parent.entries.get(name)
        if node is None:
            if not create:
                raise FileNotFoundError(path)
            self._check_writable(path)
            node = Inode(mtime_ms=self.clock())
            parent.entries[name] = node
            if name in UNJOURNALED:
                parent.durable[name] = node
            else:
                self._note(parent, Create(name, node))
        if isinstance(node, Dir):
            raise IsADirectoryError(path)
        return SimFile(self, _norm(path), node)

    def read_small(self, path: str, limit: int) -> bytes:
        node = self._node(path)
        if isinstance(node, Dir):
            raise IsADirectoryError(path)
        data = bytes(node.data[:limit])
        self.stats.bytes_read += len(data)
        self.stats.reads += 1
        return data

    def exists(self, path: str) -> bool:
        try:
            self._node(path)
            return True
        except (FileNotFoundError, NotADirectoryError):
            return False

    def is_dir(self, path: str) -> bool:
        try:
            return isinstance(self._node(path), Dir)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def list_dir(self, path: str) -> list[str]:
        node = self._node(path)
        if not isinstance(node, Dir):
            raise NotADirectoryError(path)
        return sorted(node.entries)

    def scan_dir(self, path: str) -> tuple[list[str], set[str]]:
        node = self._node(path)
        if not isinstance(node, Dir):
            raise NotADirectoryError(path)
        return sorted(node.entries), {name for name, child in node.entries.items() if isinstance(child, Dir)}

    def make_dirs(self, path: str) -> None:
        node = self.root
        for part in [p for p in _norm(path).split("/") if p]:
            child = node.entries.get(part)
            if child is None:
                self._check_writable(path)
                child = node.entries[part] = Dir()
                self._note(node, MakeDir(part, child))
            elif not isinstance(child, Dir):
                raise FileExistsError(path)
            node = child

    def rename(self, src: str, dst: str) -> None:
        sp, sn = self._walk(src)
        dp, dn = self._walk(dst)
        if sn not in sp.entries:
            raise FileNotFoundError(src)
        self._check_writable(src)
        if isinstance(dp.entries.get(dn), Dir):
            raise IsADirectoryError(dst)
        node = dp.entries[dn] = sp.entries.pop(sn)
        op = Rename(_norm(src), _norm(dst), node)
        self._note(sp, op)
        if dp is not sp:
            self._note(dp, op)

    def unlink(self, path: str) -> None:
        parent, name = self._walk(path)
        if name not in parent.entries:
            raise FileNotFoundError(path)
        if isinstance(parent.entries[name], Dir):
            raise IsADirectoryError(path)
        self._check_writable(path)
        del parent.entries[name]
        if name in UNJOURNALED:
            parent.durable.pop(name, None)
        else:
            self._note(parent, Unlink(name))

    def remove_dir(self, path: str) -> None:
        """rmdir: an empty directory goes (OSError ENOTEMPTY otherwise)."""
        parent, name = self._walk(path)
        node = parent.entries.get(name)
        if node is None:
            raise FileNotFoundError(path)
        if not isinstance(node, Dir):
            raise NotADirectoryError(path)
        if node.entries:
            raise OSError(errno.ENOTEMPTY, "Directory not empty", path)
        self._check_writable(path)
        del parent.entries[name]
        self._note(parent, Unlink(name))

    def fsync_dir(self, path: str) -> None:
        node = self._node(path)
        if not isinstance(node, Dir):
            raise NotADirectoryError(path)
        node.durable = dict(node.entries)
        node.pending.clear()
        self.stats.fsyncs += 1

    def mtime_ms(self, path: str) -> int:
        node = self._node(path)
        return node.mtime_ms if isinstance(node, Inode) else 0

    def set_mtime_ms(self, path: str, ms: int) -> None:
        node = self._node(path)
        self._check_writable(path)
        if isinstance(node, Inode):
            node.mtime_ms = ms

    # --- images ----------------------------------------------------------------------------------

    def inodes(self) -> list[tuple[str, Inode]]:
        """(name, inode) of every file, by its current and its durable names, depth first: a file
        renamed since the last directory sync comes twice."""
        out: list[tuple[str, Inode]] = []

        def walk(d: Dir) -> None:
            for entries in (d.entries, d.durable):
                for name, node in entries.items():
                    if isinstance(node, Dir):
                        walk(node)
                    else:
                        out.append((name, node))

        walk(self.root)
        return out

    def _files(self, durable: bool) -> dict[str, bytes]:
        out: dict[str, bytes] = {}

        def walk(d: Dir, prefix: str) -> None:
            for name, node in sorted((d.durable if durable else d.entries).items()):
                path = f"{prefix}/{name}"
                if isinstance(node, Dir):
                    walk(node, path)
                else:
                    out[path] = node.durable if durable else bytes(node.data)

        walk(self.root, "")
        return out

    def image(self) -> dict[str, bytes]:
        """Every file's current content (what a process restart without power loss sees)."""
        return self._files(durable=False)

    def durable_image(self) -> dict[str, bytes]:
        """What a power loss right now leaves if no pending operation had reached the disk."""
        return self._files(durable=True)

    def mtimes(self) -> dict[str, int]:
        out = {}

        def walk(d: Dir, prefix: str) -> None:
            for name, node in d.entries.items():
                if isinstance(node, Dir):
                    walk(node, f"{prefix}/{name}")
                else:
                    out[f"{prefix}/{name}"] = node.mtime_ms

        walk(self.root, "")
        return out

    def directories(self) -> list[str]:
        out = []

        def walk(d: Dir, prefix: str) -> None:
            for name, node in sorted(d.entries.items()):
                if isinstance(node, Dir):
                    out.append(f"{prefix}/{name}")
                    walk(node, f"{prefix}/{name}")

        walk(self.root, "")
        return out

    def pending_summary(self) -> dict[str, list]:
        """Not-yet-durable operations per file and per directory (for reports and crash images)."""
        out: dict[str, list] = {}

        def walk(d: Dir, prefix: str) -> None:
            if d.pending:
                out[prefix or "/"] = list(d.pending)
            for name, node in sorted(d.entries.items()):
                if isinstance(node, Dir):
                    walk(node, f"{prefix}/{name}")
                elif node.pending or bytes(node.data) != node.durable:
                    out[f"{prefix}/{name}"] = list(node.pending) or ["mapped writes"]

        walk(self.root, "")
        return out

    @classmethod
    def from_image(cls, image: dict[str, bytes], directories=(), clock=None, mtimes=None) -> SimStorage:
        """A storage holding ``image`` with everything durable (``mtimes``: path → ms)."""
        storage = cls(clock=clock)
        for d in directories:
            storage.make_dirs(d)
        for path, data in image.items():
            storage.make_dirs(posixpath.dirname(_norm(path)))
            f = storage.open(path, create=True)
            f.write_at(0, data)
            f.fsync()
            if mtimes and path in mtimes:
                f._inode.mtime_ms = mtimes[path]

        def settle(d: Dir) -> None:
            d.durable = dict(d.entries)
            d.pending.clear()
            for node in d.entries.values():
                if isinstance(node, Dir):
                    settle(node)

        settle(storage.root)
        storage.journal.clear()
        return storage

    def materialise(self, root_dir: str) -> None:
        """Write the current files (and directories) under a real directory."""
        for d in self.directories():
            os.makedirs(root_dir + d, exist_ok=True)
        for path, data in self.image().items():
            os.makedirs(os.path.dirname(root_dir + path), exist_ok=True)
            with open(root_dir + path, "wb") as f:
                f.write(data)
