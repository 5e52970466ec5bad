"""Whether a running process holds a broker's data dir: Kafka's LogManager locks ``<dir>/.lock``
for as long as it runs (``FileChannel.tryLock``, a POSIX record lock on Linux), so a live broker's
dir is told from a crashed one's by asking the kernel who holds that lock (``fcntl F_GETLK``).
The file's presence says nothing: a crash leaves it, and Kafka before 3.8 never deletes it."""

from __future__ import annotations

import fcntl
import os
import stat
import struct

from impl.log_manager import LOCK

# struct flock on Linux (x86-64, arm64): l_type, l_whence, l_start, l_len, l_pid, padded to 32 bytes
_FLOCK = "hhqqi4x"


def holder(data_dir: str) -> int | None:
    """The pid of the process holding ``data_dir``'s lock, or None (no lock file, a file that is
    not a regular file, or nobody holding it).  The file is opened read-only and never locked."""
    try:
        fd = os.open(os.path.join(data_dir, LOCK), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        asked = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        l_type, _whence, _start, _len, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, asked))
        return None if l_type == fcntl.F_UNLCK else pid
    except OSError:
        return None
    finally:
        os.close(fd)
