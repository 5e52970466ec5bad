"""The operator tools read Kafka's files only through the implementation's storage
(:class:`impl.storage.OsStorage`, opened read-only): one place that opens, maps and reads."""

from __future__ import annotations

import errno
import os
import stat

from impl.storage import OsStorage

_STORAGE = OsStorage(read_only=True)


def _open(path: str):
    """The file opened read-only; OSError unless it is a regular file (opening a FIFO would wait
    for a writer forever, a device is no Kafka file)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "not a regular file", path)
    return _STORAGE.open(path)


def view(path: str):
    """A read-only mapping of the whole file (``b""`` when empty); the caller closes a mapping.
    OSError as the file system says."""
    f = _open(path)
    try:
        return f.view()
    finally:
        f.close()  # the mapping outlives the descriptor


def read(path: str, limit: int) -> bytes:
    """The file's first ``limit`` bytes (all of it when shorter); OSError as the file system says."""
    f = _open(path)
    try:
        return f.read(0, min(f.size(), limit))
    finally:
        f.close()


def size(path: str) -> int:
    f = _open(path)
    try:
        return f.size()
    finally:
        f.close()
