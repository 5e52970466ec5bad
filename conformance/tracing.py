"""A storage wrapper that records every mutating operation, in order, with its path, and can
make the k-th operation fail (:meth:`TracingStorage.arm`): a power loss (:class:`PowerLoss`, which
unwinds everything — no ``except Exception`` in impl may survive it) or an I/O error (EIO, ENOSPC).
Operations counted: every mutating one, and every open of an existing file (where a read would
first fail), except those of the files in :data:`UNCOUNTED`.

Used by the runner for the protocol rules that no final state shows without a crash: checkpoint
files are only ever replaced by a rename of a fsynced temp file (§6.5), and the clean-shutdown marker
of a data dir is written only after every log of that dir was flushed and both checkpoints written
(§6.3 "order guarantee").  Works over either backend.
"""

from __future__ import annotations

import attrs

from model.names import LOCK_FILE


# Files whose operations are traced but not counted: LogManager's dir lock (``.lock``), made at
# every startup and deleted at every shutdown.  No load reads it, so a crash or an I/O error cut
# there shows nothing; counted, it would move every crash point of a load by one.
UNCOUNTED = ("/" + LOCK_FILE,)


@attrs.frozen
class Op:
    name: str  # write, truncate, fsync, flush_map, create, rename, unlink, fsync_dir, make_dirs
    path: str
    target: str = ""  # rename destination


class PowerLoss(BaseException):
    """The machine lost power at this storage operation: the process is gone."""


class TracingFile:
    def __init__(self, inner, trace, storage: TracingStorage):
        self._inner = inner
        self._trace = _Recorder(storage)
        self.path = inner.path

    def __getattr__(self, name):
        if name == "_inner":  # not set yet: an instance a copy is building
            raise AttributeError(name)
        return getattr(self._inner, name)

    def write_at(self, offset, data):
        self._trace.append(Op("write", self.path))
        return self._inner.write_at(offset, data)

    def append(self, data):
        self._trace.append(Op("write", self.path))
        return self._inner.append(data)

    def truncate(self, size):
        self._trace.append(Op("truncate", self.path))
        return self._inner.truncate(size)

    def fsync(self):
        self._trace.append(Op("fsync", self.path))
        return self._inner.fsync()

    def flush_map(self, mapping):
        self._trace.append(Op("flush_map", self.path))
        return self._inner.flush_map(mapping)


class _Recorder:
    def __init__(self, storage: TracingStorage):
        self.append = storage._record


class TracingStorage:
    def __init__(self, inner, trace: list[Op] | None = None):
        self._inner = inner
        self.trace: list[Op] = [] if trace is None else trace
        self._armed: tuple[int, object] | None = None
        self.ops = 0  # operations counted since the last arm()
        self.counted: list[str] | None = None  # a list: every counted operation's name, in order

    def __getattr__(self, name):
        if name == "_inner":  # not set yet: an instance a copy is building
            raise AttributeError(name)
        return getattr(self._inner, name)

    def arm(self, at: int | None, failure=PowerLoss) -> None:
        """Make operation number ``at`` (from now, counting from 0) raise ``failure()`` instead of
        happening; ``None`` disarms."""
        self.ops = 0
        self._armed = None if at is None else (at, failure)

    def _count(self, what: str, path: str) -> None:
        if path.endswith(UNCOUNTED):
            return
        if self._armed is not None and self.ops == self._armed[0]:
            failure = self._armed[1]
            self._armed = None
            raise failure(what, path)
        if self.counted is not None:
            self.counted.append(what)
        self.ops += 1

    def _record(self, op: Op) -> None:
        self._count(op.name, op.path)
        self.trace.append(op)

    def open(self, path, create=False):
        if create and not self._inner.exists(path):
            self._record(Op("create", path))
        else:
            self._count("open", path)
        return TracingFile(self._inner.open(path, create), self.trace, self)

    def rename(self, src, dst):
        self._record(Op("rename", src, dst))
        return self._inner.rename(src, dst)

    def unlink(self, path):
        self._record(Op("unlink", path))
        return self._inner.unlink(path)

    def remove_dir(self, path):
        self._record(Op("remove_dir", path))
        return self._inner.remove_dir(path)

    def fsync_dir(self, path):
        self._record(Op("fsync_dir", path))
        return self._inner.fsync_dir(path)

    def make_dirs(self, path):
        if not self._inner.exists(path):
            self._record(Op("make_dirs", path))
        return self._inner.make_dirs(path)
