"""The storage protocol: every file and directory operation ``impl`` performs goes through it.

Two backends implement it: :class:`OsStorage` here (os + mmap, what users run) and the simulated
backend in ``conformance/`` that keeps durable and pending state for crash injection (DESIGN.md
"Storage faults").  Nothing else in ``impl/`` touches ``os``, ``open`` or ``mmap``.

Version 2 (the log): open/create a file, size, read, write at, append, truncate (grow zero-extends),
fsync, a writable mapping of the whole file (released with :meth:`StorageFile.unmap`, made durable
with :meth:`StorageFile.flush_map`), a read-only view, rename (replacing), unlink, list, exists,
is-dir, make dirs, fsync of a directory, and a file's modification time in milliseconds (read and
set; Kafka's time retention falls back to it, §4.8, and a split copies it, §5.5).  Also a listing
that says which entries are directories (``scan_dir``): one read of the directory, where
``list_dir`` and an ``is_dir`` per entry cost a stat each, so a load lists a partition once (§5.2).
Reads through :meth:`StorageFile.read` are counted in ``stats``; code that scans a view adds what it
scanned to ``log_bytes_read`` / ``index_bytes_read``, so benchmarks and tests can assert how many
bytes a load touched (DESIGN.md "Clean restart": target zero log bytes).

Threads: a backend whose class sets ``thread_safe = True`` may be used by several threads at once on
*different* files (the parallel partition load, ``num.recovery.threads.per.data.dir``, spec §6.2).
:class:`OsStorage` does: every call is a system call on its own descriptor or path, and the counters
in :class:`IoStats` are added under a lock.  The flag is looked up on the class, so a wrapper that
forwards attribute access (conformance's tracing storage, which counts operations to inject a crash
at the k-th) is single-threaded unless it declares the flag itself.
"""

from __future__ import annotations

import errno
import mmap
import os
import threading
import weakref
from typing import ClassVar, Protocol

import attrs


@attrs.define
class IoStats:
    """What a storage instance was asked to do (bytes read via read(), maps, opens, fsyncs)."""

    bytes_read: int = 0
    reads: int = 0
    opens: int = 0
    maps: int = 0
    fsyncs: int = 0
    log_bytes_read: int = 0
    index_bytes_read: int = 0
    producer_state_bytes_read: int = 0  # .log bytes the producer-state rebuild read (not in log_bytes_read)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False, eq=False)

    def add(self, name: str, n: int = 1) -> None:
        """Add ``n`` to counter ``name``; exact when several threads count at once (``+=`` on an
        attribute is a read, an add and a write, and a thread switch between them loses counts)."""
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def add_read(self, n: int) -> None:
        """One read of ``n`` bytes through :meth:`StorageFile.read`."""
        with self._lock:
            self.bytes_read += n
            self.reads += 1

    def snapshot(self) -> IoStats:
        with self._lock:
            return attrs.evolve(self)


class StorageFile(Protocol):
    path: str

    def size(self) -> int: ...
    def read(self, offset: int, n: int) -> bytes: ...
    def write_at(self, offset: int, data) -> None: ...
    def append(self, data) -> int: ...
    def truncate(self, size: int) -> None: ...
    def fsync(self) -> None: ...
    def map(self): ...
    def unmap(self, mapping) -> None: ...
    def flush_map(self, mapping) -> None: ...
    def view(self): ...
    def close(self) -> None: ...


class Storage(Protocol):
    stats: IoStats

    def open(self, path: str, create: bool = False) -> StorageFile: ...
    def exists(self, path: str) -> bool: ...
    # the first ``limit`` bytes of a small file read whole (open, read, close): it changes nothing,
    # so it is no crash point (FileNotFoundError when there is no such file)
    def read_small(self, path: str, limit: int) -> bytes: ...
    def list_dir(self, path: str) -> list[str]: ...
    def scan_dir(self, path: str) -> tuple[list[str], set[str]]: ...
    def make_dirs(self, path: str) -> None: ...
    def rename(self, src: str, dst: str) -> None: ...
    def unlink(self, path: str) -> None: ...
    def remove_dir(self, path: str) -> None: ...  # an empty directory (rmdir)
    def fsync_dir(self, path: str) -> None: ...
    def is_dir(self, path: str) -> bool: ...
    def mtime_ms(self, path: str) -> int: ...
    def set_mtime_ms(self, path: str, ms: int) -> None: ...


class _EmptyMap(bytearray):
    """Stand-in for the mapping of a zero-length file (mmap refuses length 0)."""

    def close(self) -> None:
        pass

    @property
    def closed(self) -> bool:
        return False


class OsFile:
    """A real file, opened read-write (or read-only), through os file descriptors."""

    def __init__(self, storage: OsStorage, path: str, create: bool, writable: bool = True):
        flags = (os.O_RDWR if writable else os.O_RDONLY) | (os.O_CREAT if create else 0)
        self.path = path
        self._storage = storage
        self._writable = writable
        self._fd = os.open(path, flags, 0o644)
        storage.stats.add("opens")
        storage._track(self)

    def size(self) -> int:
        """The file's length, by ``lseek`` to its end: one system call and no stat structure to
        build (a third of fstat's cost; the offset it moves is unused, every read and write here is
        positional).  A file that cannot seek (a FIFO) is sized by fstat, as it always was."""
        try:
            return os.lseek(self._fd, 0, os.SEEK_END)
        except OSError as e:
            if e.errno != errno.ESPIPE:
                raise
            return os.fstat(self._fd).st_size

    def read(self, offset: int, n: int) -> bytes:
        data = os.pread(self._fd, n, offset)
        self._storage.stats.add_read(len(data))
        return data

    def write_at(self, offset: int, data) -> None:
        view = memoryview(data)
        while view:
            written = os.pwrite(self._fd, view, offset)
            view = view[written:]
            offset += written

    def append(self, data) -> int:
        position = self.size()
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)

    def fsync(self) -> None:
        os.fsync(self._fd)
        self._storage.stats.add("fsyncs")

    def map(self):
        """A writable (if opened writable) shared mapping of the whole current file."""
        self._storage.stats.add("maps")
        length = self.size()
        if length == 0:
            return _EmptyMap()
        access = mmap.ACCESS_WRITE if self._writable else mmap.ACCESS_READ
        mapping = mmap.mmap(self._fd, length, access=access)
        self._storage._track(mapping)
        return mapping

    def unmap(self, mapping) -> None:
        mapping.close()

    def flush_map(self, mapping) -> None:
        """msync: the mapping's dirty pages reach the disk."""
        if isinstance(mapping, mmap.mmap) and not mapping.closed:
            mapping.flush()
            self._storage.stats.add("fsyncs")

    def view(self):
        """A read-only zero-copy view of the whole file (``b""`` when empty)."""
        self._storage.stats.add("maps")
        length = self.size()
        if length == 0:
            return b""
        mapping = mmap.mmap(self._fd, length, access=mmap.ACCESS_READ)
        self._storage._track(mapping)
        return mapping

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@attrs.define
class OsStorage:
    """The real backend; usable from several threads at once on different files (see the module
    docstring)."""

    thread_safe: ClassVar[bool] = True
    stats: IoStats = attrs.Factory(IoStats)
    read_only: bool = False
    _handles: weakref.WeakSet = attrs.field(factory=weakref.WeakSet, init=False, repr=False, eq=False)
    _handles_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False, eq=False)

    def _track(self, handle) -> None:
        with self._handles_lock:
            self._handles.add(handle)

    def close_all(self) -> int:
        """Close every file and mapping this storage opened that is still open (a process that
        abandons its logs — a crash in the tests — must not keep their descriptors)."""
        closed = 0
        with self._handles_lock:
            handles = list(self._handles)
        for handle in handles:
            try:
                if isinstance(handle, mmap.mmap):
                    if not handle.closed:
                        handle.close()
                        closed += 1
                elif handle._fd >= 0:
                    handle.close()
                    closed += 1
            except (BufferError, OSError):
                pass  # a mapping still exported to a live view: the view's owner closes it
        return closed

    def open(self, path: str, create: bool = False) -> OsFile:
        if self.read_only and create and not os.path.exists(path):
            raise PermissionError(f"read-only storage: cannot create {path}")
        return OsFile(self, path, create, writable=not self.read_only)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def read_small(self, path: str, limit: int) -> bytes:
        with open(path, "rb") as f:
            data = f.read(limit)
        self.stats.add_read(len(data))
        return data

    def list_dir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def scan_dir(self, path: str) -> tuple[list[str], set[str]]:
        """Every entry's name, sorted, and the set of those that are directories — from one
        ``os.scandir``, which has each entry's type from the directory read (a stat only for a
        symbolic link, followed as ``is_dir`` follows it, or where the file system gives no type)."""
        with os.scandir(path) as scan:
            entries = list(scan)
        names = [entry.name for entry in entries]
        names.sort()
        return names, {entry.name for entry in entries if entry.is_dir()}

    def make_dirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def remove_dir(self, path: str) -> None:
        os.rmdir(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def mtime_ms(self, path: str) -> int:
        return os.stat(path).st_mtime_ns // 1_000_000

    def set_mtime_ms(self, path: str, ms: int) -> None:
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))

    def fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            self.stats.add("fsyncs")
        finally:
            os.close(fd)
