"""Kafka's own I/O as a crash journal: every file-system effect of the kafka target's JVM under its
root, in the vocabulary of the simulated backend (:mod:`conformance.sim_storage`), so that
:func:`conformance.crash_images.crash_image` and :func:`~conformance.crash_images.journal` crash
*Kafka's* writes, fsyncs and renames — not impl's (ALICE, OSDI '14: trace an application's system
calls, replay every legal persistence of them).

How it is captured.  ``strace -f -y -xx`` is attached (``ptrace``; every thread, and threads
started later) to the JVM the capturing targets of a classpath share (:func:`captured_jvm`: not the
process's shared JVM, whose other targets' requests it would see), and writes one line per system call of :data:`SYSCALLS` into a pipe this
process reads.  Why strace and not an agent on the JDK's file layer: it sees what reaches the kernel
whatever Java class made it (``FileChannelImpl``, ``RandomAccessFile``, ``Files``, ``File``,
``MappedByteBuffer``) on every Kafka generation alike, including the ``msync`` and ``munmap`` of the
memory-mapped indexes, and needs no change to the adapters.  A request ends where the JVM writes its
answer line to its stdout (fd 1), which the trace shows too.

:class:`Translator` turns the calls into :class:`Effect` s: ``openat`` with ``O_CREAT`` of a new
file (:class:`Create`), ``write``/``pwrite64``/``writev``/``pwritev`` at the offset the file's
position gives (``openat``, ``lseek``, earlier writes; :class:`WriteAt`), ``ftruncate`` and
``fallocate`` (:class:`Truncate`), ``fsync``/``fdatasync`` of a file (:class:`Fsync`) or of a
directory (:class:`FsyncDir`), ``rename``/``renameat(2)`` (:class:`Rename`), ``unlink(at)``
(:class:`Unlink`), ``mkdir(at)`` (:class:`MakeDir`), ``rmdir`` or ``unlinkat(AT_REMOVEDIR)`` of a
directory the journal holds empty (:class:`RemoveDir`; a rename of a directory moves what the journal
knows below it), and for a writable shared mapping of a file,
``msync`` (its pages, then :class:`Fsync`) and ``munmap`` (its pages) — :class:`MapSync`.  A
mapped store is no system call: the pages a mapping changed are found by comparing the file's bytes
with what the journal explains (``crash_images.journal`` does the same on the simulated backend);
the bytes are read when the request has ended, so a page stored after the file's last ``msync`` in
the same request is taken as written at that ``msync``.  Any other traced call that changes a file
under the root (``link``, ``symlink``, ``copy_file_range``, ``sendfile``, ``splice``,
``mremap`` of a mapped file, a ``fallocate`` mode other than plain allocation, ``truncate`` by
path) is :class:`UnknownEffect`, and the kafka target answers ``unsupported`` naming it.

:class:`Replay` applies the effects to a :class:`~conformance.sim_storage.SimStorage` through its own
methods (``open``, ``write_at``, ``truncate``, ``fsync``, ``rename``, ``unlink``, ``make_dirs``,
``remove_dir``, ``fsync_dir``); after each request the storage must hold the files on disk — byte for byte those
the request touched or mapped, by size the rest — else an effect was missed: ``unsupported``,
naming the file and the first byte that differs.

The API the runner calls (``conformance.targets.kafka.KafkaTarget``)::

    target = KafkaTarget(scenario, release="2.8.2", capture=True)   # or KLC_KAFKA_CAPTURE=1
    result, storage = target.capture(step)   # apply the step, Kafka's I/O captured
    # storage: a SimStorage holding every operation pending since the last durable point
    n = target.last_capture.operations       # Kafka's own operations inside the step
    at_k = target.last_capture.storage_at(k) # the storage after the first k of them (0 <= k <= n)
    image = crash_images.crash_image(at_k, fault)          # any family, power loss or process
    target.restore(*image_for_restore(image))              # Kafka's loader loads it at the next open
    files, dirs, mtimes = target.image_at(k, fault)        # for every target; k None: now, between steps

``target.apply(step)`` with capture on carries the journal forward without keeping the step's
storage as it began (``storage_at`` then refuses): cheaper, for the steps no crash falls inside.
``target.restore`` makes everything on disk durable again (a crash image is what the disk holds).
A storage's paths are absolute from the target's root (``/d0/t-0/00000000000000000000.log``);
:func:`image_for_restore` gives them relative to it, as ``Target.restore`` takes them.  The
storage is the target's own: crash images may be taken from it, never changed.  Capture off costs
nothing: no tracer, no copy, no check.
"""

from __future__ import annotations

import atexit
import collections
import copy
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time

import attrs

from conformance import sim_storage
from conformance.sim_storage import SimFile, SimStorage
from impl.storage import IoStats

# the calls traced: every one that can change a file, plus what positions and mappings need
SYSCALLS = (
    "open,openat,creat,write,pwrite64,writev,pwritev,pwritev2,ftruncate,truncate,fallocate,fsync,"
    "fdatasync,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,link,linkat,symlink,"
    "symlinkat,msync,munmap,mmap,mremap,lseek,close,copy_file_range,sendfile,splice"
)
STRING_LIMIT = 1 << 20  # bytes of a write's buffer strace prints; a longer write is unsupported
PAGE = 4096
ATTACH_TIMEOUT_S = 10.0
BOUNDARY_TIMEOUT_S = 30.0


class CaptureUnsupported(Exception):
    """The capture cannot run here (no strace, no ptrace permission) or saw an effect it cannot
    express: the step is not judged (the kafka target raises ``Unsupported``)."""


class UnknownEffect(CaptureUnsupported):
    """A traced call changed a file under the root in a way the journal has no operation for."""


class CaptureError(RuntimeError):
    """The tracer died or stopped reporting: a harness error, never a verdict."""


# --- effects: the journal's vocabulary ------------------------------------------------------------


@attrs.frozen
class Bind:
    """A file that existed before the capture saw it opened gets ``token`` (not an operation)."""

    token: int
    path: str


@attrs.frozen
class Create:
    token: int
    path: str


@attrs.frozen
class WriteAt:
    token: int
    offset: int
    data: bytes


@attrs.frozen
class PageWrite(WriteAt):
    """A page a mapping changed, as it reached the file (at an msync, a munmap or the crash point)."""


@attrs.frozen
class Truncate:
    token: int
    size: int


@attrs.frozen
class Fsync:
    token: int


@attrs.frozen
class FsyncDir:
    path: str


@attrs.frozen
class Rename:
    src: str
    dst: str


@attrs.frozen
class Unlink:
    path: str


@attrs.frozen
class MakeDir:
    path: str


@attrs.frozen
class RemoveDir:
    path: str


@attrs.frozen
class MapSync:
    """The dirty pages of ``token``'s mapping [start, start+length) reach the file (munmap), and
    with ``durable`` are synced (msync); ``length`` −1: the whole file (the crash point)."""

    token: int
    start: int
    length: int
    durable: bool


Effect = (
    Bind | Create | WriteAt | PageWrite | Truncate | Fsync | FsyncDir | Rename | Unlink | MakeDir | RemoveDir | MapSync
)


# --- strace's lines -------------------------------------------------------------------------------


@attrs.frozen
class Call:
    pid: int
    name: str
    args: tuple[str, ...]
    ret: str  # the text after " = " ("28", "31<...>", "-1 ENOENT (...)", "?")

    @property
    def failed(self) -> bool:
        return self.ret.startswith("-") or self.ret.startswith("?")

    def number(self) -> int:
        return int(self.ret.split("<", 1)[0].split()[0], 0)


_LINE = re.compile(r"^(\d+)\s+(.*)$")
_UNFINISHED = " <unfinished ...>"
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
# Calls that free their name (an fd number, an address range) as they begin: another thread can
# get the name back before the call returns, and strace prints its end after that thread's call
# (the JVM's cleaner thread closes and unmaps abandoned channels while a load opens new ones).
_RELEASING = ("close(", "munmap(")
_RELEASED = ""  # pending: the call was handed on at its start, its end is dropped


class Parser:
    """strace's output, line by line, into :class:`Call` s (an interrupted call is put together
    again from its ``<unfinished ...>`` and ``<... resumed>`` halves; one of :data:`_RELEASING`
    is handed on at its start, as succeeding: on Linux a close frees its fd even when it fails)."""

    def __init__(self, root: str | None = None):
        self.pending: dict[int, str] = {}
        self.needle = self.root_itself = None
        if root is not None:
            self.watch(root)

    def watch(self, root: str) -> None:
        """From now on a call naming no path under ``root`` is skipped unparsed (most of a JVM's
        calls: its jars, its anonymous memory, other targets' roots), unless its effect hangs on
        an address, or it is the answer on fd 1."""
        self.needle = _hex(root.rstrip("/") + "/")
        self.root_itself = _hex(root.rstrip("/")) + ">"

    def _wanted(self, text: str) -> bool:
        if self.needle is None or self.needle in text or self.root_itself in text:
            return True
        return text.startswith(("msync(", "munmap(", "mremap(", "write(1<"))

    def feed(self, line: str) -> Call | None:
        m = _LINE.match(line.rstrip("\n"))
        if m is None:
            return None
        pid, text = int(m[1]), m[2]
        if text.startswith(("+++", "---")):
            return None
        if text.endswith(_UNFINISHED):
            if not self._wanted(text):
                return None
            head = text[: -len(_UNFINISHED)]
            if head.startswith(_RELEASING):
                self.pending[pid] = _RELEASED
                return _call(pid, head + ") = 0")
            self.pending[pid] = head
            return None
        r = _RESUMED.match(text)
        if r is not None:
            head = self.pending.pop(pid, None)
            if not head:
                return None  # its start came before the tracer attached, or was handed on
            text = head + r[2]
        elif not self._wanted(text):
            return None
        return _call(pid, text)


def _hex(text: str) -> str:
    return "".join(f"\\x{b:02x}" for b in text.encode())


def _call(pid: int, text: str) -> Call | None:
    name_end = text.find("(")
    call, eq, ret = text.rpartition(" = ")
    call = call.rstrip()
    if name_end <= 0 or not eq or not call.endswith(")"):
        return None
    return Call(pid, text[:name_end], tuple(_split(call[name_end + 1 : -1])), ret.strip())


def _split(args: str) -> list[str]:
    """Top-level comma-separated arguments (strings are all hex escapes with -xx: no quotes or
    brackets inside them to confuse the nesting)."""
    out, depth, start, quoted = [], 0, 0, False
    for i, c in enumerate(args):
        if c == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
    if args.strip():
        out.append(args[start:].strip())
    return out


_HEX = re.compile(r"\\x([0-9a-fA-F]{2})")


def decode(text: str) -> bytes:
    """A string argument as strace -xx prints it: ``"\\x2f\\x74..."`` (maybe followed by ``...``)."""
    body = text.split('"', 2)[1] if text.startswith('"') else text
    return bytes(int(h, 16) for h in _HEX.findall(body))


def fd_path(arg: str) -> tuple[str, str | None]:
    """``31<\\x2f...>`` → ("31", "/..."): the fd and the path -y decoded (None for none)."""
    if "<" not in arg:
        return arg, None
    fd, rest = arg.split("<", 1)
    path = decode(rest[:-1]).decode("utf-8", "surrogateescape")
    return fd, path.removesuffix(" (deleted)")


def _int(arg: str) -> int:
    return int(arg.split("<", 1)[0], 0)


# --- the translation ---------------------------------------------------------------------------


@attrs.define
class _Fd:
    token: int
    pos: int
    append: bool = False


@attrs.define
class _Mapping:
    token: int
    start: int
    length: int
    offset: int


class Translator:
    """System calls into effects, for the files under ``root``.  ``existing``: every path under
    the root (absolute from it, e.g. ``/d0/t-0``) → "file" or "dir" as the capture begins;
    ``positions``: the open fds' positions (``/proc/PID/fdinfo``) and ``mappings`` the shared
    writable mappings (``/proc/PID/maps``: start, length, file offset, path) as the tracer attached."""

    def __init__(self, root: str, existing: dict[str, str], positions=None, mappings=()):
        self.root = root.rstrip("/")
        self.kinds = dict(existing)
        self.tokens: dict[str, int] = {}  # path → the token of the file now there
        self.next_token = 1
        self.fds: dict[int, _Fd] = {}
        self.positions = dict(positions or {})  # fd → position, for fds opened before the attach
        self.maps: dict[int, _Mapping] = {}
        self.mapped: set[int] = set()  # tokens ever mapped writable and shared
        self.effects: list = []
        self.calls: collections.Counter = collections.Counter()  # msyncs of mapped files, O_TRUNC opens
        self.attached(self.positions, mappings)

    def attached(self, positions: dict[int, int], mappings) -> None:
        """A tracer attached: the fds' positions and the mappings it did not see made."""
        self.positions.update(positions)
        for start, length, offset, path in mappings:
            rel = self._rel(path)
            if rel is not None and self.kinds.get(rel) == "file" and start not in self.maps:
                self._map(start, length, offset, self._token(rel))

    def take(self) -> list:
        effects, self.effects = self.effects, []
        return effects

    # --- names

    def _rel(self, path: str | None) -> str | None:
        if path is None:
            return None
        if path == self.root:
            return "/"
        if path.startswith(self.root + "/"):
            return path[len(self.root) :]
        return None

    def _token(self, rel: str) -> int:
        token = self.tokens.get(rel)
        if token is None:
            token = self.tokens[rel] = self._new()
            self.effects.append(Bind(token, rel))
        return token

    def _new(self) -> int:
        self.next_token += 1
        return self.next_token - 1

    def final_paths(self) -> dict[int, str]:
        return {t: p for p, t in self.tokens.items()}

    def reset(self, existing: dict[str, str]) -> None:
        """The root was rewritten behind the JVM's back (a restored image): old files are gone."""
        self.kinds = dict(existing)
        self.tokens = {}
        self.fds = {}
        self.positions = {}
        self.maps = {}
        self.mapped = set()
        self.effects = []

    # --- fds

    def _fd(self, arg: str) -> _Fd | None:
        """The open file an fd argument names, if it lies under the root (None otherwise)."""
        fd, path = fd_path(arg)
        rel = self._rel(path)
        if rel is None or not fd.lstrip("-").isdigit():
            return None
        n = int(fd)
        entry = self.fds.get(n)
        if entry is None:  # opened before the tracer attached: its file is where -y says
            if self.kinds.get(rel) != "file":
                return None
            entry = self.fds[n] = _Fd(self._token(rel), self.positions.pop(n, 0))
        return entry

    def _map(self, start: int, length: int, offset: int, token: int) -> None:
        self.maps[start] = _Mapping(token, start, length, offset)
        self.mapped.add(token)

    # --- calls

    def feed(self, call: Call) -> None:
        if call.failed:
            return
        handler = getattr(self, "_on_" + call.name, None)
        if handler is not None:
            handler(call)

    def _unknown(self, call: Call, what: str) -> None:
        raise UnknownEffect(f"kafka I/O capture: {call.name} {what} (the journal has no such operation)")

    def _touches_root(self, *args: str) -> str | None:
        for a in args:
            if "<" in a:
                rel = self._rel(fd_path(a)[1])
            elif a.startswith('"'):
                rel = self._rel(decode(a).decode("utf-8", "surrogateescape"))
            else:
                continue
            if rel is not None:
                return rel
        return None

    def _on_openat(self, call: Call) -> None:
        fd, path = fd_path(call.ret)
        self._opened(int(fd), self._rel(path), call.args[2] if len(call.args) > 2 else "")

    def _on_open(self, call: Call) -> None:
        fd, path = fd_path(call.ret)
        self._opened(int(fd), self._rel(path), call.args[1] if len(call.args) > 1 else "")

    def _on_creat(self, call: Call) -> None:
        fd, path = fd_path(call.ret)
        self._opened(int(fd), self._rel(path), "O_CREAT|O_TRUNC")

    def _opened(self, fd: int, rel: str | None, flags: str) -> None:
        self.positions.pop(fd, None)
        self.fds.pop(fd, None)
        if rel is None or self.kinds.get(rel) == "dir" or "O_DIRECTORY" in flags:
            return
        created = rel not in self.kinds
        if created:
            if "O_CREAT" not in flags:
                return
            token = self.tokens[rel] = self._new()
            self.kinds[rel] = "file"
            self.effects.append(Create(token, rel))
        token = self._token(rel)
        if "O_TRUNC" in flags and not created:  # a new file is empty: nothing to cut
            self.calls["O_TRUNC"] += 1
            self.effects.append(Truncate(token, 0))
        self.fds[fd] = _Fd(token, 0, "O_APPEND" in flags)

    def _on_close(self, call: Call) -> None:
        fd = fd_path(call.args[0])[0]
        if fd.isdigit():
            self.fds.pop(int(fd), None)
            self.positions.pop(int(fd), None)

    def _on_lseek(self, call: Call) -> None:
        f = self._fd(call.args[0])
        if f is not None:
            f.pos = call.number()

    def _write(self, call: Call, f: _Fd, data: bytes, offset: int | None) -> None:
        n = call.number()
        if n > len(data):
            raise UnknownEffect(f"kafka I/O capture: {call.name} of {n} bytes, more than the {STRING_LIMIT} the tracer prints")
        if f.append and offset is None:
            raise UnknownEffect(f"kafka I/O capture: {call.name} to a file opened O_APPEND")
        at = f.pos if offset is None else offset
        if n:
            self.effects.append(WriteAt(f.token, at, data[:n]))
        if offset is None:
            f.pos = at + n

    def _on_write(self, call: Call) -> None:
        f = self._fd(call.args[0])
        if f is not None:
            self._write(call, f, decode(call.args[1]), None)

    def _on_pwrite64(self, call: Call) -> None:
        f = self._fd(call.args[0])
        if f is not None:
            self._write(call, f, decode(call.args[1]), _int(call.args[3]))

    def _on_writev(self, call: Call) -> None:
        f = self._fd(call.args[0])
        if f is not None:
            self._write(call, f, _iov(call.args[1]), None)

    def _on_pwritev(self, call: Call) -> None:
        f = self._fd(call.args[0])
        if f is not None:
            self._write(call, f, _iov(call.args[1]), _int(call.args[3]))

    _on_pwritev2 = _on_pwritev

    def _on_ftruncate(self, call: Call) -> None:
        f = self._fd(call.args[0])
        if f is not None:
            self.effects.append(Truncate(f.token, _int(call.args[1])))

    def _on_fallocate(self, call: Call) -> None:
        f = self._fd(call.args[0])
        if f is None:
            return
        if call.args[1] != "0":
            self._unknown(call, f"mode {call.args[1]} on {self.final_paths().get(f.token)}")
        self.effects.append(_Grow(f.token, _int(call.args[2]) + _int(call.args[3])))

    def _on_fsync(self, call: Call) -> None:
        fd, path = fd_path(call.args[0])
        rel = self._rel(path)
        if rel is None:
            return
        if self.kinds.get(rel) == "dir":
            self.effects.append(FsyncDir(rel))
            return
        f = self._fd(call.args[0])
        if f is not None:
            self.effects.append(Fsync(f.token))

    _on_fdatasync = _on_fsync

    def _path_arg(self, dirfd: str | None, arg: str) -> str | None:
        path = decode(arg).decode("utf-8", "surrogateescape")
        if not path.startswith("/"):
            base = fd_path(dirfd)[1] if dirfd is not None else None
            if base is None:
                base = os.getcwd() if dirfd is None else None
            if base is None:
                return None
            path = os.path.join(base, path)
        return self._rel(os.path.normpath(path))

    def _rename(self, src: str | None, dst: str | None, call: Call) -> None:
        if src is None and dst is None:
            return
        if src is None or dst is None:
            self._unknown(call, f"across the root's edge ({src or dst})")
        kind = self.kinds.pop(src, None)
        if kind is None:
            return
        if kind == "dir":  # a partition dir renamed -delete (or -future promoted): its files move with it
            if dst in self.kinds:
                self._unknown(call, f"of the directory {src} over {dst}")
            self._move_under(src, dst)
        self.kinds[dst] = kind
        token = self.tokens.pop(src, None)
        if token is not None:
            self.tokens[dst] = token
        else:
            self.tokens.pop(dst, None)
        self.effects.append(Rename(src, dst))

    def _move_under(self, src: str, dst: str) -> None:
        """The paths below a renamed directory, in the kinds and the tokens, to their new names."""
        for table in (self.kinds, self.tokens):
            for path in [p for p in table if p.startswith(src + "/")]:
                table[dst + path[len(src) :]] = table.pop(path)

    def _on_rename(self, call: Call) -> None:
        self._rename(self._path_arg(None, call.args[0]), self._path_arg(None, call.args[1]), call)

    def _on_renameat(self, call: Call) -> None:
        if len(call.args) > 4 and call.args[4] not in ("0", ""):
            self._unknown(call, f"with flags {call.args[4]}")
        self._rename(self._path_arg(call.args[0], call.args[1]), self._path_arg(call.args[2], call.args[3]), call)

    _on_renameat2 = _on_renameat

    def _unlink(self, rel: str | None, call: Call, dir_flag: bool = False) -> None:
        if rel is None or rel not in self.kinds:
            return
        if dir_flag or self.kinds[rel] == "dir":
            self._rmdir(rel, call)
            return
        del self.kinds[rel]
        self.tokens.pop(rel, None)
        self.effects.append(Unlink(rel))

    def _on_unlink(self, call: Call) -> None:
        self._unlink(self._path_arg(None, call.args[0]), call)

    def _on_unlinkat(self, call: Call) -> None:
        self._unlink(self._path_arg(call.args[0], call.args[1]), call, "AT_REMOVEDIR" in call.args[2])

    def _on_rmdir(self, call: Call) -> None:
        rel = self._path_arg(None, call.args[0])
        if rel is not None and rel in self.kinds:
            self._rmdir(rel, call)

    def _rmdir(self, rel: str, call: Call) -> None:
        """An empty directory removed (a -delete dir's last step); one that still holds files as
        the journal knows them is an effect the capture missed."""
        if self.kinds[rel] != "dir" or any(p.startswith(rel + "/") for p in self.kinds):
            self._unknown(call, f"of {rel}, which the journal does not hold empty")
        del self.kinds[rel]
        self.effects.append(RemoveDir(rel))

    def _mkdir(self, rel: str | None) -> None:
        if rel is None or rel in self.kinds:
            return
        self.kinds[rel] = "dir"
        self.effects.append(MakeDir(rel))

    def _on_mkdir(self, call: Call) -> None:
        self._mkdir(self._path_arg(None, call.args[0]))

    def _on_mkdirat(self, call: Call) -> None:
        self._mkdir(self._path_arg(call.args[0], call.args[1]))

    def _on_mmap(self, call: Call) -> None:
        if "MAP_SHARED" not in call.args[3] or "PROT_WRITE" not in call.args[2]:
            return
        f = self._fd(call.args[4])
        if f is not None:
            self._map(call.number(), _int(call.args[1]), _int(call.args[5]), f.token)

    def _mapped_in(self, start: int, length: int) -> list[_Mapping]:
        return [m for m in self.maps.values() if m.start < start + length and start < m.start + m.length]

    def _on_msync(self, call: Call) -> None:
        start, length = _int(call.args[0]), _int(call.args[1])
        for m in self._mapped_in(start, length):
            self.calls["msync"] += 1
            self.effects.append(MapSync(m.token, m.offset, m.length, True))

    def _on_munmap(self, call: Call) -> None:
        start, length = _int(call.args[0]), _int(call.args[1])
        for m in self._mapped_in(start, length):
            self.effects.append(MapSync(m.token, m.offset, m.length, False))
            del self.maps[m.start]

    def _on_mremap(self, call: Call) -> None:
        if self._mapped_in(_int(call.args[0]), _int(call.args[1])):
            self._unknown(call, "of a mapped file")

    def _refuse_if_root(self, call: Call, *args: str) -> None:
        rel = self._touches_root(*args)
        if rel is not None:
            self._unknown(call, f"on {rel}")

    def _on_link(self, call: Call) -> None:
        self._refuse_if_root(call, *call.args)

    _on_linkat = _on_symlink = _on_symlinkat = _on_link

    def _on_truncate(self, call: Call) -> None:
        self._refuse_if_root(call, call.args[0])

    def _on_copy_file_range(self, call: Call) -> None:
        self._refuse_if_root(call, call.args[2])

    def _on_sendfile(self, call: Call) -> None:
        self._refuse_if_root(call, call.args[0])

    def _on_splice(self, call: Call) -> None:
        self._refuse_if_root(call, call.args[2])

    def crash_point(self) -> None:
        """The request has ended: every mapped file's pages as they are now."""
        for token in sorted(self.mapped):
            self.effects.append(MapSync(token, 0, -1, False))


@attrs.frozen
class _Grow:
    """fallocate mode 0: the file is at least ``size`` long (zeros), as a truncate that never cuts."""

    token: int
    size: int


def _iov(arg: str) -> bytes:
    return b"".join(decode(s) for s in re.findall(r'iov_base=("[^"]*")', arg))


# --- the replay --------------------------------------------------------------------------------


class Replay:
    """Effects onto a SimStorage, through its own methods.  ``observed``: token → the file's bytes
    when the request ended (for mapped pages).  Each applied operation is recorded, resolved
    (a mapping's pages as page writes), in ``applied``: what :meth:`StepCapture.storage_at` replays."""

    def __init__(self, storage: SimStorage, files: dict[int, SimFile] | None = None):
        self.storage = storage
        self.files = files if files is not None else {}
        self.applied: list = []

    def _file(self, token: int) -> SimFile | None:
        return self.files.get(token)

    def apply(self, effect, observed: dict[int, bytes] | None = None) -> None:
        s = self.storage
        if isinstance(effect, Bind):
            if s.exists(effect.path) and not s.is_dir(effect.path):
                self.files[effect.token] = s.open(effect.path)
            self.applied.append(effect)
            return
        if isinstance(effect, Create):
            s.make_dirs(os.path.dirname(effect.path))
            self.files[effect.token] = s.open(effect.path, create=True)
        elif isinstance(effect, MapSync):
            self._map_sync(effect, (observed or {}).get(effect.token))
            return
        elif isinstance(effect, (WriteAt, Truncate, _Grow, Fsync)):
            f = self._file(effect.token)
            if f is None:
                return  # a file of a previous image, gone with it
            if isinstance(effect, WriteAt):
                f.write_at(effect.offset, effect.data)
            elif isinstance(effect, Truncate):
                f.truncate(effect.size)
            elif isinstance(effect, _Grow):
                if effect.size > f.size():
                    f.truncate(effect.size)
                    effect = Truncate(effect.token, effect.size)
                else:
                    return
            else:
                f.fsync()
        elif isinstance(effect, FsyncDir):
            s.fsync_dir(effect.path)
        elif isinstance(effect, Rename):
            s.rename(effect.src, effect.dst)
        elif isinstance(effect, Unlink):
            s.unlink(effect.path)
        elif isinstance(effect, MakeDir):
            s.make_dirs(effect.path)
        elif isinstance(effect, RemoveDir):
            s.remove_dir(effect.path)
        self.applied.append(effect)

    def _map_sync(self, effect: MapSync, seen: bytes | None) -> None:
        f = self._file(effect.token)
        if f is None:
            return
        if seen is not None:
            size = f.size()
            end = min(len(seen), size if effect.length < 0 else min(size, effect.start + effect.length))
            for p in _dirty_pages(f._inode.data, seen, effect.start - effect.start % PAGE, end):
                op = PageWrite(effect.token, p, seen[p : min(p + PAGE, end)])
                f.write_at(p, op.data)
                self.applied.append(op)
        if effect.durable:
            f.fsync()
            self.applied.append(Fsync(effect.token))


CHUNK = 64 * PAGE


def _dirty_pages(current: bytearray, seen: bytes, start: int, end: int) -> list[int]:
    """The pages in [start, end) where ``current`` and ``seen`` differ: compared a chunk at a time
    (an index is 10 MiB of mostly zeros), page by page only inside a chunk that differs."""
    if start == 0 and end == len(current) == len(seen) and current == seen:
        return []
    out = []
    for c in range(start, end, CHUNK):
        d = min(c + CHUNK, end)
        if current[c:d] == seen[c:d]:
            continue
        out += [p for p in range(c, d, PAGE) if current[p : min(p + PAGE, d)] != seen[p : min(p + PAGE, d)]]
    return out


def operations(effects) -> int:
    """The effects that are operations (a crash can fall before or after each)."""
    return sum(1 for e in effects if not isinstance(e, Bind))


@attrs.define
class StepCapture:
    """Kafka's I/O during one step: the storage as the step began (every earlier pending operation
    still pending) and the step's operations, resolved.  ``storage_at(k)``: the storage after the
    first ``k`` operations (``k`` = :attr:`operations`: the step's end)."""

    before: tuple | None  # (SimStorage, token → SimFile) as the step began, copied; None: not kept
    applied: list = attrs.Factory(list)

    @property
    def operations(self) -> int:
        return operations(self.applied)

    def __len__(self) -> int:
        return self.operations

    def storage_at(self, k: int | None = None) -> SimStorage:
        if self.before is None:
            raise ValueError("the step was applied, not captured: KafkaTarget.capture(step) keeps its operations")
        n = self.operations
        k = n if k is None else k
        if not 0 <= k <= n:
            raise IndexError(f"the step has {n} operations of Kafka's own, not {k}")
        storage, files = _copy(self.before)
        replay = Replay(storage, files)
        done = 0
        for e in self.applied:
            if done == k and not isinstance(e, Bind):
                break
            replay.apply(e)
            done += not isinstance(e, Bind)
        return storage

    def summary(self) -> dict[str, int]:
        """Operations by kind (for reports and the benchmark)."""
        out: dict[str, int] = {}
        for e in self.applied:
            if not isinstance(e, Bind):
                out[type(e).__name__] = out.get(type(e).__name__, 0) + 1
        return out


def _copy(state: tuple[SimStorage, dict]) -> tuple[SimStorage, dict]:
    """A storage and its open files, copied together (the files then name the copy's inodes); the
    copy shares the clock and counts its own statistics."""
    storage = state[0]
    memo = {id(storage.stats): IoStats(), id(storage.clock): storage.clock}
    return copy.deepcopy(state, memo)


def image_for_restore(image) -> tuple[dict[str, bytes], list[str], dict[str, int]]:
    """A :class:`~conformance.crash_images.CrashImage` of a captured storage as ``Target.restore``
    takes it: paths relative to the target's root."""
    files = {p.lstrip("/"): d for p, d in image.files.items()}
    mtimes = {p.lstrip("/"): m for p, m in image.mtimes.items()}
    return files, [d.lstrip("/") for d in image.directories], mtimes


# --- the tracer --------------------------------------------------------------------------------


def strace_binary() -> str:
    tool = os.environ.get("KLC_STRACE", "strace")
    found = shutil.which(tool)
    if found is None:
        raise CaptureUnsupported(
            f"kafka I/O capture needs strace ({tool!r} is not on PATH): install strace, or run without capture"
        )
    return found


def capture_problem() -> str | None:
    """Why capture cannot run on this machine (None: it can): no strace, or ptrace refused (a
    container without the permission)."""
    try:
        tool = strace_binary()
    except CaptureUnsupported as e:
        return str(e)
    try:
        done = subprocess.run([tool, "-qq", "-o", os.devnull, "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"kafka I/O capture: strace does not run here ({e})"
    if done.returncode != 0:
        return f"kafka I/O capture: strace cannot trace here: {done.stderr.strip()[:200]}"
    return None


class Tracer:
    """``strace`` attached to one process (all its threads), its lines read by a thread into a
    queue; :meth:`until_answer` returns the calls up to the process's next answer line on fd 1."""

    def __init__(self, pid: int):
        self.pid = pid
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.parser = Parser()
        cmd = [strace_binary(), "-f", "-qq", "-y", "-xx", "-s", str(STRING_LIMIT), "-e", "trace=" + SYSCALLS]
        self.process = subprocess.Popen(
            [*cmd, "-o", "/dev/stdout", "-p", str(pid)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
        )
        self.errors: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_errors, daemon=True).start()
        self._wait_attached()

    def _pump(self) -> None:
        keep = os.environ.get("KLC_KAFKA_IO_TRACE")  # a file to keep strace's raw lines in
        kept = open(keep, "a") if keep else None
        try:
            for line in self.process.stdout:
                if kept is not None:
                    kept.write(line)
                self.lines.put(line)
        finally:
            if kept is not None:
                kept.close()
            self.lines.put(None)

    def _pump_errors(self) -> None:
        for line in self.process.stderr:
            self.errors.append(line.strip())

    def _wait_attached(self) -> None:
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process.wait()
                time.sleep(0.05)  # let the error pump read strace's last words
                why = " | ".join(self.errors[-3:]) or f"exit {self.process.returncode}"
                if "not permitted" in why.lower() or "ptrace" in why.lower():
                    raise CaptureUnsupported(f"kafka I/O capture: strace cannot attach to the JVM (no ptrace permission?): {why}")
                raise CaptureError(f"kafka I/O capture: strace exited before attaching: {why}")
            if _all_traced(self.pid, self.process.pid):
                return
            time.sleep(0.002)
        self.stop()
        raise CaptureError(f"kafka I/O capture: strace did not attach to {self.pid} within {ATTACH_TIMEOUT_S:.0f} s")

    def until_answer(self, sink) -> None:
        """Feed ``sink`` every call until the traced process wrote an answer line to its stdout."""
        deadline = time.monotonic() + BOUNDARY_TIMEOUT_S
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise CaptureError("kafka I/O capture: the trace never showed the JVM's answer") from None
            if line is None:
                raise CaptureError(f"kafka I/O capture: strace stopped ({' | '.join(self.errors[-3:])})")
            call = self.parser.feed(line)
            if call is None:
                continue
            if call.name == "write" and fd_path(call.args[0])[0] == "1":
                if decode(call.args[1]).endswith(b"\n"):
                    return
                continue
            sink(call)

    def drain(self, sink) -> None:
        """Calls already reported outside a request (a JVM's cleaner unmapping a buffer)."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                return
            call = self.parser.feed(line)
            if call is not None:
                sink(call)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # strace detaches from every thread
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _all_traced(pid: int, tracer: int) -> bool:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return False
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = f.read()
        except FileNotFoundError:
            continue
        m = re.search(r"^TracerPid:\s*(\d+)", status, re.M)
        if m is None or int(m[1]) != tracer:
            return False
    return True


def fd_positions(pid: int, root: str) -> dict[int, int]:
    """The positions of ``pid``'s open fds under ``root`` (``/proc/PID/fdinfo``)."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if not target.startswith(root + "/"):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                out[int(fd)] = int(re.search(r"^pos:\s*(\d+)", f.read(), re.M)[1])
        except (FileNotFoundError, TypeError):
            continue
    return out


def shared_mappings(pid: int, root: str) -> list[tuple[int, int, int, str]]:
    """``pid``'s writable shared mappings of files under ``root``: (start, length, offset, path)."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6 or parts[1][1] != "w" or parts[1][3] != "s":
                continue
            path = parts[5].strip().removesuffix(" (deleted)")
            if not path.startswith(root + "/"):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi - lo, int(parts[2], 16), path))
    return out


# --- the disk as it is ---------------------------------------------------------------------------


def scan(root: str, wanted=None) -> tuple[dict[str, bytes], list[str], dict[str, int]]:
    """Files (bytes), directories and modification times (ms) under ``root``, paths from it;
    with ``wanted`` (a set of paths) only those files' bytes are read (:func:`sizes` has the rest)."""
    files, dirs, mtimes = {}, [], {}
    for dirpath, dirnames, names in os.walk(root):
        rel = dirpath[len(root) :] or ""
        for d in dirnames:
            dirs.append(f"{rel}/{d}")
        for name in names:
            full, path = os.path.join(dirpath, name), f"{rel}/{name}"
            st = os.stat(full)
            mtimes[path] = st.st_mtime_ns // 1_000_000
            if wanted is None or path in wanted:
                with open(full, "rb") as f:
                    files[path] = f.read()
            else:
                files[path] = st.st_size
    return files, dirs, mtimes


def kinds(storage: SimStorage) -> dict[str, str]:
    """Every path of ``storage`` → "file" or "dir"."""
    out = {"/": "dir"}
    for d in storage.directories():
        out[d] = "dir"
    for p in storage.image():
        out[p] = "file"
    return out


def first_difference(storage: SimStorage, files: dict) -> str | None:
    """Where ``storage`` and the files on disk differ (a capture that missed an effect): ``files``
    maps a path to its bytes, or to its size where only that was read."""
    image = _current_files(storage)
    for path in sorted(set(image) | set(files)):
        if path not in image:
            return f"{path} is on disk but not in the captured journal"
        if path not in files:
            return f"{path} is in the captured journal but not on disk"
        a, b = image[path], files[path]
        if isinstance(b, int):
            if len(a) != b:
                return f"{path} is {b} bytes on disk, {len(a)} in the captured journal"
        elif a != b:
            at = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            return f"{path} differs from the captured journal at byte {at} (journal {len(a)} bytes, disk {len(b)})"
    return None


def _current_files(storage: SimStorage) -> dict[str, bytearray]:
    """Path → the content of every file now, uncopied."""
    out = {}
    stack = [("", storage.root)]
    while stack:
        prefix, d = stack.pop()
        for name, node in d.entries.items():
            if isinstance(node, sim_storage.Dir):
                stack.append((f"{prefix}/{name}", node))
            else:
                out[f"{prefix}/{name}"] = node.data
    return out


# --- one target's capture ----------------------------------------------------------------------


class IoCapture:
    """The running capture of one kafka target: its JVM traced, the storage every request's
    effects are replayed onto (what is pending since the last durable point), and the capture of
    the step being applied."""

    def __init__(self, root: str, clock):
        strace_binary()  # no strace: unsupported before anything runs
        self.root = os.path.realpath(root)
        self.clock = clock
        self.tracer: Tracer | None = None
        self.step: StepCapture | None = None
        self.last: StepCapture | None = None
        self.failing = None  # (at_op, error, Failed) while a step runs with one call failing
        self.reset()

    def reset(self) -> None:
        """Everything on disk is durable now (the capture begins, or an image was restored)."""
        files, dirs, mtimes = scan(self.root)
        self.storage = SimStorage.from_image(files, dirs, clock=self.clock, mtimes=mtimes)
        self.files: dict[int, SimFile] = {}
        if getattr(self, "translator", None) is None:
            self.translator = Translator(self.root, kinds(self.storage))
        else:
            self.translator.reset(kinds(self.storage))

    def _attach(self, pid: int) -> None:
        """The JVM's tracer (one per JVM, shared by the targets on it); a tracer this capture has
        not used yet tells it where the fds under its root stand and what is mapped."""
        tracer = _TRACERS.get(pid)
        if tracer is None or not tracer.alive():
            tracer = _TRACERS[pid] = Tracer(pid)
        if tracer is not self.tracer:
            self.translator.fds = {}
            self.translator.maps = {}
            self.translator.attached(fd_positions(pid, self.root), shared_mappings(pid, self.root))
            self.tracer = tracer
        tracer.parser.watch(self.root)

    def begin_step(self, points: bool = True) -> None:
        """A step begins; with ``points`` its storage is kept as it is now, for ``storage_at``."""
        self.step = StepCapture(_copy((self.storage, self.files)) if points else None)

    def end_step(self) -> StepCapture:
        self.last, self.step = self.step, None
        return self.last

    def arm(self, at_op: int, error: str) -> None:
        """The next requests, until :meth:`disarm`, run with the ``at_op``-th of Kafka's calls that
        change the file system under the root failing with ``error``
        (:mod:`conformance.kafka_io_errors`), counted across them."""
        from conformance.kafka_io_errors import Failed

        self.failing = (at_op, error, Failed())

    @property
    def failed(self):
        """What the armed failure did so far (:class:`conformance.kafka_io_errors.Failed`)."""
        return self.failing[2]

    def disarm(self):
        """What the armed failure did (:class:`conformance.kafka_io_errors.Failed`)."""
        failed, self.failing = self.failing[2], None
        return failed

    def request(self, pid: int, send):
        """``send()`` under the tracer; its effects replayed onto the storage.  A JVM that dies
        leaves the storage unknown (re-read from disk at the next request) and the error raised."""
        if self.failing is not None:
            return self._request_failing(pid, send)
        self._attach(pid)
        try:
            self.tracer.drain(self.translator.feed)
            answer = send()
            self.tracer.until_answer(self.translator.feed)
        except BaseException:
            self._detach(pid)
            raise
        return answer

    def _request_failing(self, pid: int, send):
        """``send()`` with one call failing (a process-level fault: the disk as the request leaves
        it is what the storage holds after it).  strace lets go first: a thread has one tracer."""
        from conformance import kafka_io_errors

        self._detach(pid)
        at_op, error, so_far = self.failing
        if so_far.call is not None:  # an earlier request of the step took the failure
            answer = send()
        else:
            answer, failed = kafka_io_errors.request_failing(pid, self.root, at_op - so_far.counted, error, send)
            so_far.counted += failed.counted
            so_far.call, so_far.retried = failed.call, failed.retried
        self.reset()
        return answer

    def _detach(self, pid: int) -> None:
        """The request failed: its trace cannot be trusted; the tracer goes, the disk is re-read."""
        _TRACERS.pop(pid, None)
        if self.tracer is not None:
            self.tracer.stop()
            self.tracer = None
        self.translator.take()
        self.reset()

    def settle(self) -> None:
        """After the request (and the target's modification-time stamps): replay and check."""
        self.translator.crash_point()
        effects = self.translator.take()
        paths = self.translator.final_paths()
        touched = {e.token for e in effects if isinstance(e, (Create, WriteAt, Truncate, _Grow, MapSync))}
        wanted = {paths[t] for t in touched if t in paths} | {e.dst for e in effects if isinstance(e, Rename)}
        files, _dirs, mtimes = scan(self.root, wanted)
        observed = {t: files[p] for t, p in paths.items() if isinstance(files.get(p), bytes)}
        replay = Replay(self.storage, self.files)
        try:
            for e in effects:
                replay.apply(e, observed)
        except OSError as e:  # the journal and its storage disagree on a name: never a guess
            self.reset()
            raise CaptureUnsupported(f"kafka I/O capture: replaying {type(e).__name__} {e}") from None
        if self.step is not None:
            self.step.applied.extend(replay.applied)
        for path, ms in mtimes.items():
            if self.storage.exists(path):
                self.storage.set_mtime_ms(path, ms)
        problem = first_difference(self.storage, files)
        if problem is not None:
            self.reset()
            raise CaptureUnsupported(f"kafka I/O capture: {problem}: an effect the capture does not see")

    def close(self) -> None:
        self.tracer = None  # the JVM's tracer stays for the JVM's other targets


_TRACERS: dict[int, Tracer] = {}  # JVM pid → the strace attached to it
_JVMS: dict[str, object] = {}  # classpath → the JVM captured targets share (kafka_jvm.Jvm)


def captured_jvm(classpath: str, start):
    """The JVM the capturing targets of ``classpath`` share (``start(classpath)`` makes one): not
    the process's shared JVM, whose other targets' requests a tracer would see and have to cut."""
    jvm = _JVMS.get(classpath)
    if jvm is None or not jvm.alive():
        jvm = _JVMS[classpath] = start(classpath)
    return jvm


@atexit.register
def _stop_tracers() -> None:
    for tracer in _TRACERS.values():
        tracer.stop()
    for jvm in _JVMS.values():
        jvm.stop()
