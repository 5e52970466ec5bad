"""A storage wrapper that records every mutating operation, in order, with its path.

Used by the runner for the protocol rules that no final state shows without a crash: checkpoint
files are only ever replaced by a rename of a fsynced temp file (§6.5), and the clean-shutdown marker
of a data dir is written only after every log of that dir was flushed and both checkpoints written
(§6.3 "order guarantee").  Works over either backend.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Op:
    name: str  # write, truncate, fsync, flush_map, create, rename, unlink, fsync_dir, make_dirs
    path: str
    target: str = ""  # rename destination


class TracingFile:
    def __init__(self, inner, trace: list[Op]):
        self._inner = inner
        self._trace = trace
        self.path = inner.path

    def __getattr__(self, name):
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


class TracingStorage:
    def __init__(self, inner):
        self._inner = inner
        self.trace: list[Op] = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def open(self, path, create=False):
        if create and not self._inner.exists(path):
            self.trace.append(Op("create", path))
        return TracingFile(self._inner.open(path, create), self.trace)

    def rename(self, src, dst):
        self.trace.append(Op("rename", src, dst))
        return self._inner.rename(src, dst)

    def unlink(self, path):
        self.trace.append(Op("unlink", path))
        return self._inner.unlink(path)

    def fsync_dir(self, path):
        self.trace.append(Op("fsync_dir", path))
        return self._inner.fsync_dir(path)

    def make_dirs(self, path):
        self.trace.append(Op("make_dirs", path))
        return self._inner.make_dirs(path)
