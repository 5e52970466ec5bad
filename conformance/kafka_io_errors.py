"""An I/O error inside Kafka's own I/O: the k-th of the JVM's file-system calls under the kafka
target's root fails with EIO or ENOSPC, as a failing disk makes it fail, and Kafka's error path
runs (``LogDirFailureChannel``, ``KafkaStorageException``, spec §6.6).

How.  For the one request, the JVM's threads are traced with ``ptrace(2)`` by :class:`Injector`
(strace cannot do it: its ``inject=…:when=N`` counts per system call and per thread, and the k-th
call of a step may come from any thread).  Every system call stops its thread; a call counts when it
would change a file or directory under the root, in the journal's vocabulary
(:mod:`conformance.kafka_io`): a create (``open``/``openat``/``creat`` with ``O_CREAT`` of a name that
does not exist), a write (``write``, ``pwrite64``, ``writev``, ``pwritev(2)``), a truncation
(``ftruncate``, ``fallocate``), an fsync of a file or a directory (``fsync``, ``fdatasync``), the
``msync`` of a mapped file, a rename, an unlink, a ``mkdir`` or ``rmdir``.  Call ``at_op`` (from 0)
is skipped — its number set to -1 at entry, so the kernel does nothing — and returns ``-errno``;
every other call runs untouched.  ``munmap`` is never failed (the kernel's own cannot be).  The
tracer detaches when the request has been answered.  Only x86-64 is decoded; elsewhere, and
without ptrace permission, :class:`~conformance.kafka_io.CaptureUnsupported`.

This is a process-level fault, not a power loss: what Kafka wrote before and after the failed call
stays in the page cache, so the disk as the request left it is the image the next load reads.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal
import threading
import time

import attrs

from conformance.kafka_io import CaptureError, CaptureUnsupported

ERRORS = {"EIO": errno.EIO, "ENOSPC": errno.ENOSPC}

_PTRACE_SYSCALL = 24
_PTRACE_GETREGS = 12
_PTRACE_SETREGS = 13
_PTRACE_DETACH = 17
_PTRACE_SEIZE = 0x4206
_PTRACE_INTERRUPT = 0x4207
_PTRACE_GETEVENTMSG = 0x4201
_PTRACE_GET_SYSCALL_INFO = 0x420E
_OPTIONS = 0x1 | 0x8  # PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE
_EVENT_CLONE = 3
_EVENT_STOP = 128
_WALL = 0x40000000
DETACH_TIMEOUT_S = 30.0
_INFO_ENTRY, _INFO_EXIT = 1, 2
_AT_FDCWD = -100
_AT_REMOVEDIR = 0x200
_O_CREAT = 0o100
_ORIG_RAX, _RAX = 15, 10  # in struct user_regs_struct

# x86-64 system call numbers → what the call does to the file system (None: nothing counted)
_FD_CALLS = {1: "write", 18: "write", 20: "write", 296: "write", 328: "write", 77: "truncate", 285: "truncate",
             74: "fsync", 75: "fsync"}  # fmt: skip
_OPEN_CALLS = {2: (None, 0, 1), 257: (0, 1, 2), 85: (None, 0, None)}  # open, openat, creat: dirfd, path, flags
_MSYNC = 26
_PATH_CALLS = {82: ("rename", (None, 0), (None, 1)), 264: ("rename", (0, 1), (2, 3)), 316: ("rename", (0, 1), (2, 3)),
               87: ("unlink", (None, 0)), 263: ("unlink", (0, 1)), 83: ("mkdir", (None, 0)),
               258: ("mkdir", (0, 1)), 84: ("rmdir", (None, 0))}  # fmt: skip


class _Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
        "fs_base gs_base ds es fs gs").split()]  # fmt: skip


class _SyscallInfo(ctypes.Structure):
    _fields_ = [("op", ctypes.c_uint8), ("pad", ctypes.c_uint8 * 3), ("arch", ctypes.c_uint32),
                ("ip", ctypes.c_uint64), ("sp", ctypes.c_uint64), ("nr", ctypes.c_uint64),
                ("args", ctypes.c_uint64 * 6), ("ret", ctypes.c_uint32)]  # fmt: skip


_libc = None


def _ptrace(request: int, tid: int, addr=0, data=0) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.ptrace.restype = ctypes.c_long
        _libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    r = _libc.ptrace(request, tid, addr, data)
    if r == -1:
        e = ctypes.get_errno()
        if e:
            raise OSError(e, os.strerror(e))
    return r


@attrs.define
class Failed:
    """What the injection did: the calls counted, and the one failed (None: the request made fewer
    than ``at_op`` + 1 counted calls, and ran whole)."""

    counted: int = 0
    call: str | None = None  # "fsync d0/t-0/00000000000000000000.log"
    offline: tuple[str, ...] | None = None  # the data dirs queued offline after the step (None: not asked)
    retried: bool = False  # the same call (kind and path) was made again after the failed one

    @property
    def data_dir(self) -> str | None:
        """The data dir the failed call was in (``d0``)."""
        return None if self.call is None else self.call.split(" ", 1)[1].split("/", 1)[0]


class Injector:
    """``ptrace`` on every thread of ``pid`` (threads started later too), in a thread of its own
    (ptrace answers only the thread that attached), from :meth:`start` to :meth:`stop`."""

    def __init__(self, pid: int, root: str, at_op: int, error: str):
        if platform.machine() != "x86_64":
            raise CaptureUnsupported(f"an I/O error inside Kafka's own calls: system calls are decoded on x86-64 only, not {platform.machine()}")
        self.pid, self.root, self.at_op, self.errno = pid, os.path.realpath(root), at_op, ERRORS[error]
        self.failed = Failed()
        self._tids: set[int] = set()  # the threads traced
        self._pending: set[int] = set()  # threads whose skipped call returns the error at its exit
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._problem: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="klc-io-error", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(30)
        if self._problem is not None:
            raise self._problem
        if not self._ready.is_set():
            raise CaptureError(f"an I/O error inside Kafka's own calls: could not attach to {self.pid} within 30 s")

    def stop(self) -> Failed:
        self._stopping.set()
        self._thread.join(DETACH_TIMEOUT_S + 10)
        if self._thread.is_alive():
            raise CaptureError(f"an I/O error inside Kafka's own calls: the tracer of {self.pid} did not detach")
        if self._problem is not None:
            raise self._problem
        return self.failed

    # --- the tracer's thread ----------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._attach()
        except PermissionError as e:
            self._problem = CaptureUnsupported(f"an I/O error inside Kafka's own calls: no ptrace permission on the JVM ({e})")
        except BaseException as e:  # the JVM gone, or a tracer already on it
            self._problem = CaptureError(f"an I/O error inside Kafka's own calls: attaching to {self.pid}: {e}")
        if self._problem is not None:
            try:
                self._detach_all()
            except CaptureError:
                pass
            self._ready.set()
            return
        self._ready.set()
        try:
            self._trace()
        except BaseException as e:
            self._problem = CaptureError(f"an I/O error inside Kafka's own calls: {type(e).__name__}: {e}")
        finally:
            try:
                self._detach_all()
            except CaptureError as e:
                self._problem = self._problem or e

    def _attach(self) -> None:
        """Seize every thread but the first (until no new one appears), then interrupt each to
        start tracing.  The first thread is the launcher's, which only waits for the JVM's main
        thread; and it is the process this one started, whose stops a ``waitpid`` of the process
        (``Popen.poll``, in another thread) would take and read as the JVM's death."""
        while True:
            tasks = (int(t) for t in os.listdir(f"/proc/{self.pid}/task"))
            new = [t for t in tasks if t not in self._tids and t != self.pid]
            if not new:
                break
            for tid in new:
                try:
                    _ptrace(_PTRACE_SEIZE, tid, 0, _OPTIONS)
                except ProcessLookupError:
                    continue  # the thread ended
                self._tids.add(tid)
                _ptrace(_PTRACE_INTERRUPT, tid)

    def _trace(self) -> None:
        idle = 0.0
        while not self._stopping.is_set() or self._pending:
            if not self._poll_all():
                idle = min(0.002, idle + 0.0001)
                time.sleep(idle)
            else:
                idle = 0.0

    def _poll_all(self) -> bool:
        seen = False
        for tid in list(self._tids):
            try:
                got, status = os.waitpid(tid, os.WNOHANG | _WALL)
            except ChildProcessError:
                self._tids.discard(tid)
                self._pending.discard(tid)
                continue
            if got == 0:
                continue
            seen = True
            self._on_stop(tid, status)
        return seen

    def _on_stop(self, tid: int, status: int) -> None:
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            self._tids.discard(tid)
            self._pending.discard(tid)
            return
        sig, event = os.WSTOPSIG(status), status >> 16
        deliver = 0
        if sig == signal.SIGTRAP | 0x80:
            self._on_syscall(tid)
        elif event == _EVENT_CLONE:
            child = ctypes.c_ulong()
            _ptrace(_PTRACE_GETEVENTMSG, tid, 0, ctypes.addressof(child))
            self._tids.add(child.value)
        elif event == _EVENT_STOP:
            pass  # an interrupt, or a new thread's first stop
        else:
            deliver = sig  # a signal for the JVM (its safepoints and null checks use SIGSEGV)
        self._resume(tid, _PTRACE_SYSCALL, deliver)

    def _resume(self, tid: int, request: int, sig: int = 0) -> None:
        try:
            _ptrace(request, tid, 0, sig)
        except ProcessLookupError:
            self._tids.discard(tid)

    def _on_syscall(self, tid: int) -> None:
        info = _SyscallInfo()
        _ptrace(_PTRACE_GET_SYSCALL_INFO, tid, ctypes.sizeof(info), ctypes.addressof(info))
        if info.op == _INFO_EXIT and tid in self._pending:
            self._set(tid, _RAX, -self.errno)
            self._pending.discard(tid)
        elif info.op == _INFO_ENTRY and not self._stopping.is_set():
            if self.failed.call is not None:  # after the failure: is it made again (a fallback, a retry)?
                self.failed.retried = self.failed.retried or self._effect(tid, info.nr, list(info.args)) == self.failed.call
                return
            what = self._effect(tid, info.nr, list(info.args))
            if what is None:
                return
            if self.failed.counted == self.at_op:
                self._set(tid, _ORIG_RAX, -1)  # the kernel skips a call numbered -1
                self._pending.add(tid)
                self.failed.call = what
            self.failed.counted += 1

    def _set(self, tid: int, field: int, value: int) -> None:
        regs = _Regs()
        _ptrace(_PTRACE_GETREGS, tid, 0, ctypes.addressof(regs))
        setattr(regs, _Regs._fields_[field][0], value & 0xFFFFFFFFFFFFFFFF)
        _ptrace(_PTRACE_SETREGS, tid, 0, ctypes.addressof(regs))

    # --- what a call does ---------------------------------------------------------------------

    def _effect(self, tid: int, nr: int, args: list[int]) -> str | None:
        """``"<kind> <path under the root>"`` for a call that changes the file system there."""
        if nr in _FD_CALLS:
            return self._named(_FD_CALLS[nr], self._fd_path(tid, args[0]))
        if nr == _MSYNC:
            return self._named("msync", self._mapped(args[0]))
        if nr in _OPEN_CALLS:
            dirfd, path, flags = _OPEN_CALLS[nr]
            if flags is not None and not args[flags] & _O_CREAT:
                return None
            full = self._path(tid, None if dirfd is None else args[dirfd], args[path])
            if full is None or os.path.lexists(full):
                return None  # an existing file opened: no create
            return self._named("create", full)
        if nr in _PATH_CALLS:
            kind, *paths = _PATH_CALLS[nr]
            fulls = [self._path(tid, None if d is None else args[d], args[p]) for d, p in paths]
            if kind == "unlink" and nr == 263 and args[2] & _AT_REMOVEDIR:
                kind = "rmdir"
            named = [self._named(kind, f) for f in fulls]
            return next((n for n in named if n is not None), None)
        return None

    def _named(self, kind: str, path: str | None) -> str | None:
        if path is None or not (path + "/").startswith(self.root + "/"):
            return None
        return f"{kind} {os.path.relpath(path, self.root)}"

    def _fd_path(self, tid: int, fd: int) -> str | None:
        try:
            return os.readlink(f"/proc/{tid}/fd/{ctypes.c_int(fd).value}")
        except OSError:
            return None

    def _mapped(self, address: int) -> str | None:
        with open(f"/proc/{self.pid}/maps") as f:
            for line in f:
                fields = line.split(maxsplit=5)
                start, end = (int(x, 16) for x in fields[0].split("-"))
                if start <= address < end and len(fields) == 6:
                    return fields[5].strip()
        return None

    def _path(self, tid: int, dirfd: int | None, address: int) -> str | None:
        name = self._string(tid, address)
        if name is None:
            return None
        if name.startswith("/"):
            return os.path.normpath(name)
        fd = _AT_FDCWD if dirfd is None else ctypes.c_int(dirfd).value
        try:
            base = os.readlink(f"/proc/{tid}/cwd" if fd == _AT_FDCWD else f"/proc/{tid}/fd/{fd}")
        except OSError:
            return None
        return os.path.normpath(os.path.join(base, name))

    def _string(self, tid: int, address: int) -> str | None:
        try:
            with open(f"/proc/{tid}/mem", "rb", buffering=0) as mem:
                mem.seek(address)
                raw = mem.read(4096)
        except OSError:
            return None
        return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")

    # --- letting go -----------------------------------------------------------------------------

    def _detach_all(self) -> None:
        """Every thread stopped (interrupted if running), then detached with its pending signal.
        A thread is never left traced: the kernel would release it from a system-call stop with
        that stop's code as a signal, killing the JVM (SIGTRAP|0x80).  A thread that does not stop
        (stuck in the kernel) leaves the JVM killed and the request a harness error."""
        waiting = set(self._tids)
        for tid in list(waiting):
            try:
                _ptrace(_PTRACE_INTERRUPT, tid)
            except OSError:
                pass  # gone: its exit is reaped below
        deadline = time.monotonic() + DETACH_TIMEOUT_S
        while waiting and time.monotonic() < deadline:
            progress = False
            for tid in list(waiting):
                try:
                    got, status = os.waitpid(tid, os.WNOHANG | _WALL)
                except ChildProcessError:
                    waiting.discard(tid)
                    continue
                if got == 0:
                    continue
                progress = True
                if not os.WIFSTOPPED(status):
                    waiting.discard(tid)  # exited
                    continue
                sig, event = os.WSTOPSIG(status), status >> 16
                if event == _EVENT_CLONE:  # a thread born now is traced too: let it go as well
                    child = ctypes.c_ulong()
                    _ptrace(_PTRACE_GETEVENTMSG, tid, 0, ctypes.addressof(child))
                    waiting.add(child.value)
                deliver = 0 if sig == signal.SIGTRAP | 0x80 or event else sig
                try:
                    _ptrace(_PTRACE_DETACH, tid, 0, deliver)
                except ProcessLookupError:
                    pass
                waiting.discard(tid)
            if not progress:
                time.sleep(0.0005)
        self._tids.clear()
        if waiting:
            states = ", ".join(f"{tid} {_state(tid)}" for tid in sorted(waiting))
            os.kill(self.pid, signal.SIGKILL)
            raise CaptureError(f"an I/O error inside Kafka's own calls: threads of {self.pid} never stopped to be let go ({states}); the JVM was killed")


def _state(tid: int) -> str:
    """A thread's state and where it waits in the kernel, for a message."""
    try:
        with open(f"/proc/{tid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{tid}/wchan") as f:
            return f"{state} in {f.read().strip() or '?'}"
    except OSError:
        return "gone"


def request_failing(pid: int, root: str, at_op: int, error: str, send):
    """``send()`` with the ``at_op``-th counted call of ``pid`` under ``root`` failing with
    ``error``: (the answer, :class:`Failed`)."""
    injector = Injector(pid, root, at_op, error)
    injector.start()
    try:
        answer = send()
    finally:
        failed = injector.stop()
    return answer, failed
