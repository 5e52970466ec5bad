"""A private copy of a data dir, so ``klc load`` can run the real loader (which deletes, renames,
truncates and resizes, like Kafka's) without touching the operator's files.

What a copy costs is what the data costs: only the data extents of each file are copied
(SEEK_DATA / SEEK_HOLE), so a preallocated 10 MiB index that holds a few entries — or none, an
all-zero index being one hole — costs its written bytes, on disk and in time.  Where the file
system has no SEEK_DATA the file is copied whole.  Modification times are kept on every path (time
retention falls back to them, spec §4.8).

Kafka opens what a name points to (``java.io.File`` follows symbolic links), so a symlinked
partition dir or segment is copied as what it points to.  Anything else that is not a regular file
or a directory (a FIFO, a socket, a device, a dangling or looping link) is reported, never
skipped in silence.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat

CHUNK = 1 << 20


def _data_extents(fd: int, size: int):
    """(start, end) of every data extent of the file, holes left out.  Raises OSError when the
    file system cannot tell (EINVAL, EOPNOTSUPP): the caller then copies the whole file."""
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:  # no data after pos: the rest is one hole
                return
            raise
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, min(end, size)
        pos = end


def copy_file(src: str, dst: str) -> int:
    """Copy ``src`` to ``dst`` sparsely, keeping its modification time; returns the bytes copied."""
    copied = 0
    fin = os.open(src, os.O_RDONLY)
    try:
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            st = os.fstat(fin)
            try:
                extents = list(_data_extents(fin, st.st_size))
            except OSError:
                extents = [(0, st.st_size)]
            for start, end in extents:
                copied += _copy_range(fin, fout, start, end)
            os.ftruncate(fout, st.st_size)
        finally:
            os.close(fout)
    finally:
        os.close(fin)
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
    return copied


def _copy_range(fin: int, fout: int, start: int, end: int) -> int:
    """Bytes ``start``..``end`` of ``fin`` to the same place in ``fout``, in the kernel where it can
    (copy_file_range), else through a buffer; stops early if the file shrank under us (what is
    there is what is copied)."""
    pos = start
    while pos < end:
        try:
            n = os.copy_file_range(fin, fout, min(end - pos, CHUNK), pos, pos)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            chunk = os.pread(fin, min(end - pos, CHUNK), pos)
            n = len(chunk)
            if n:
                os.pwrite(fout, chunk, pos)
        if n == 0:
            break
        pos += n
    return pos - start


def private_copy(src: str, dst: str) -> list[str]:
    """Copy the tree ``src`` to ``dst``; returns problems (unreadable or special paths), empty
    when complete."""
    problems: list[str] = []
    seen: set[tuple[int, int]] = set()  # directories already copied: a symlink loop is reported once

    def on_error(e: OSError) -> None:
        problems.append(f"{e.filename}: {e.strerror}")

    for dirpath, dirs, filenames in os.walk(src, onerror=on_error, followlinks=True):
        st = os.stat(dirpath)
        if (st.st_dev, st.st_ino) in seen:
            problems.append(f"{dirpath}: a symbolic link loop (not copied again)")
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        target = os.path.join(dst, os.path.relpath(dirpath, src))
        os.makedirs(target, exist_ok=True)
        for name in filenames:
            problem = _copy_entry(os.path.join(dirpath, name), os.path.join(target, name))
            if problem:
                problems.append(problem)
    _copy_dir_times(src, dst)
    return problems


def _copy_entry(s: str, d: str) -> str | None:
    try:
        mode = os.stat(s).st_mode  # follows a link, as Kafka does
    except OSError as e:
        return f"{s}: {e.strerror} (a dangling link?)" if os.path.islink(s) else f"{s}: {e.strerror}"
    if not stat.S_ISREG(mode):
        return f"{s}: not a regular file ({_kind(mode)}): not copied, the load will not see it"
    try:
        copy_file(s, d)
    except OSError as e:
        return f"{s}: {e.strerror or e}"
    return None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):  # fmt: skip
        if test(mode):
            return name
    return "a special file"


def _copy_dir_times(src: str, dst: str) -> None:
    """Directories get their original modification times back (copying into them moved them)."""
    for dirpath, _dirs, _files in os.walk(dst, topdown=False):
        original = os.path.join(src, os.path.relpath(dirpath, dst))
        try:
            shutil.copystat(original, dirpath)
        except OSError:
            pass  # gone or unreadable since: already reported by the walk
