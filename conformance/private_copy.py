"""A private copy of a data dir, so ``klc load`` can run the real loader (which deletes, renames,
truncates and resizes, like Kafka's) without touching the operator's files.

Sparse-aware: only the data extents of each file are copied (SEEK_DATA / SEEK_HOLE), so a
preallocated 10 MiB index that holds a few entries costs a few bytes.  Modification times are kept
(time retention falls back to them).  Unreadable entries are reported, never silently skipped.
"""

from __future__ import annotations

import os
import shutil


class CopyError(OSError):
    pass


def _copy_file(src: str, dst: str) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fin.fileno(), pos, os.SEEK_DATA)
            except OSError:  # no data after pos (ENXIO) or no SEEK_DATA support: copy the rest plainly
                start = size if pos else 0
                if start == 0:
                    shutil.copyfileobj(fin, fout)
                    return
                break
            end = os.lseek(fin.fileno(), start, os.SEEK_HOLE)
            fin.seek(start)
            fout.seek(start)
            remaining = end - start
            while remaining:
                chunk = fin.read(min(remaining, 1 << 20))
                if not chunk:
                    break
                fout.write(chunk)
                remaining -= len(chunk)
            pos = end
        fout.truncate(size)
    shutil.copystat(src, dst)


def private_copy(src: str, dst: str) -> list[str]:
    """Copy the tree ``src`` to ``dst``; returns problems (unreadable paths), empty when complete."""
    problems = []
    for dirpath, _dirs, filenames in os.walk(src, onerror=lambda e: problems.append(f"{e.filename}: {e.strerror}")):
        rel = os.path.relpath(dirpath, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in filenames:
            s, d = os.path.join(dirpath, name), os.path.join(dst, rel, name)
            try:
                if os.path.islink(s) or not os.path.isfile(s):
                    continue
                _copy_file(s, d)
            except OSError as e:
                problems.append(f"{s}: {e.strerror or e}")
    return problems
