"""Kafka's own I/O as a crash journal (conformance.kafka_io): strace's lines into effects, effects
onto the simulated storage, and the bad inputs — no JVM here (tests/test_kafka_io_releases.py runs
Kafka under the tracer)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from conformance import crash_images, kafka_io
from conformance import sim_storage as sim
from conformance.crash_images import Fault, crash_image

ROOT = "/tmp/klc-kafka-x"


def x(text: str) -> str:
    """A string as strace -xx prints it."""
    return "".join(f"\\x{b:02x}" for b in text.encode())


def fd(n: int, path: str) -> str:
    return f"{n}<{x(path)}>"


def s(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return '"' + "".join(f"\\x{b:02x}" for b in data) + '"'


def lines_for_new_segment() -> list[str]:
    """A new segment as Kafka 2.8 makes it: created, appended twice (the position moves), fsynced;
    the checkpoint's temp file written, fsynced and renamed; no directory fsync; one more append."""
    seg = f"{ROOT}/d0/t-0/00000000000000000000.log"
    tmp, cp = f"{ROOT}/d0/recovery-point-offset-checkpoint.tmp", f"{ROOT}/d0/recovery-point-offset-checkpoint"
    entries, answer = s("0\n1\n"), s("{}\n")
    return [
        f'7 mkdir({s(ROOT + "/d0/t-0")}, 0777) = 0',
        f"7 openat(AT_FDCWD<{x('/w')}>, {s(seg)}, O_RDWR|O_CREAT, 0666) = {fd(30, seg)}",
        f"7 write({fd(30, seg)}, {s('abc')}, 3) = 3",
        f"7 write({fd(30, seg)}, {s('de')}, 2 <unfinished ...>",
        f"9 openat(AT_FDCWD<{x('/w')}>, {s('/etc/hosts')}, O_RDONLY) = {fd(5, '/etc/hosts')}",
        "7 <... write resumed>)              = 2",
        f"7 fsync({fd(30, seg)}) = 0",
        f"7 openat(AT_FDCWD<{x('/w')}>, {s(tmp)}, O_WRONLY|O_CREAT|O_TRUNC, 0666) = {fd(31, tmp)}",
        f"7 write({fd(31, tmp)}, {entries}, 4) = 4",
        f"7 fsync({fd(31, tmp)}) = 0",
        f"7 close({fd(31, tmp)}) = 0",
        f"7 rename({s(tmp)}, {s(cp)}) = 0",
        f"7 write({fd(30, seg)}, {s('fg')}, 2) = 2",
        f"7 write(1<{x('pipe:[1]')}>, {answer}, 3) = 3",
    ]


def translate(lines, existing=None) -> kafka_io.Translator:
    t = kafka_io.Translator(ROOT, existing or {"/": "dir", "/d0": "dir"})
    parser = kafka_io.Parser()
    for line in lines:
        call = parser.feed(line)
        if call is not None:
            t.feed(call)
    return t


def replayed(lines) -> sim.SimStorage:
    storage = sim.SimStorage.from_image({}, ["/d0"])
    t = translate(lines)
    replay = kafka_io.Replay(storage)
    for e in t.take():
        replay.apply(e)
    return storage


def test_strace_lines_become_the_journals_operations():
    t = translate(lines_for_new_segment())
    kinds = [type(e).__name__ for e in t.take()]
    assert kinds == [
        "MakeDir", "Create", "WriteAt", "WriteAt", "Fsync", "Create", "WriteAt", "Fsync", "Rename", "WriteAt"
    ]  # fmt: skip


def test_a_write_lands_where_the_files_position_is():
    storage = replayed(lines_for_new_segment())
    assert storage.image()["/d0/t-0/00000000000000000000.log"] == b"abcdefg"
    assert storage.image()["/d0/recovery-point-offset-checkpoint"] == b"0\n1\n"


def test_metadata_lost_takes_a_fsynced_file_whose_directory_was_never_fsynced():
    """KAFKA-3968's shape on a trace: the segment's data is fsynced, its directory entry is not."""
    storage = replayed(lines_for_new_segment())
    ops = crash_images.journal(storage)
    image = crash_image(storage, Fault("metadata", lose=tuple(range(len(ops)))))
    assert "/d0/t-0/00000000000000000000.log" not in image.files
    kept = crash_image(storage, Fault("process"))
    assert kept.files["/d0/t-0/00000000000000000000.log"] == b"abcdefg"


def test_every_family_names_an_image_of_a_captured_journal():
    storage = replayed(lines_for_new_segment())
    n = len(crash_images.journal(storage))
    assert n == 5  # mkdir, the segment's create, the temp file's create, the rename, the last append
    faults = [Fault("process"), Fault("prefix", keep=2), Fault("reorder", lose=(3,)), Fault("size_ahead", op=4)]
    faults += [Fault("torn", op=4, cut=0, fill="junk", seed=1), Fault("metadata", lose=(1,), data=False)]
    images = [crash_image(storage, f) for f in faults]
    assert all(i.pending == n for i in images)
    seg, cp = "/d0/t-0/00000000000000000000.log", "/d0/recovery-point-offset-checkpoint"
    assert images[0].files == {seg: b"abcdefg", cp: b"0\n1\n"}
    assert images[1].files == {seg: b"abcde"}  # the mkdir and the create kept; the fsynced data with them
    assert images[2].files == {seg: b"abcdefg", "/d0/recovery-point-offset-checkpoint.tmp": b"0\n1\n"}
    assert images[3].files[seg] == b"abcde\0\0"  # the length reached the disk, the data did not
    assert images[4].files[seg][:5] == b"abcde" and images[4].files[seg][5:] != b"fg"
    assert images[5].files == {cp: b"0\n1\n"}


def test_a_step_capture_replays_any_prefix_of_its_operations():
    storage = sim.SimStorage.from_image({}, ["/d0"])
    t = translate(lines_for_new_segment())
    replay = kafka_io.Replay(storage)
    for e in t.take():
        replay.apply(e)
    step = kafka_io.StepCapture(kafka_io._copy((sim.SimStorage.from_image({}, ["/d0"]), {})), replay.applied)
    assert step.operations == 10
    assert step.storage_at(0).image() == {}
    assert step.storage_at(3).image() == {"/d0/t-0/00000000000000000000.log": b"abc"}
    assert step.storage_at().image() == storage.image()
    with pytest.raises(IndexError):
        step.storage_at(11)


def test_mapped_pages_become_page_writes_at_msync():
    idx = f"{ROOT}/d0/t-0/00000000000000000000.index"
    lines = [
        f"7 openat(AT_FDCWD<{x('/w')}>, {s(idx)}, O_RDWR|O_CREAT, 0666) = {fd(32, idx)}",
        f"7 ftruncate({fd(32, idx)}, 8192) = 0",
        f"7 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_SHARED, {fd(32, idx)}, 0) = 0x7f0000000000",
        "7 msync(0x7f0000000000, 8192, MS_SYNC) = 0",
    ]
    t = translate(lines, {"/": "dir", "/d0": "dir", "/d0/t-0": "dir"})
    storage = sim.SimStorage.from_image({}, ["/d0/t-0"])
    replay = kafka_io.Replay(storage)
    seen = b"\1" * 8 + bytes(8184)  # one entry stored through the mapping
    token = t.final_paths()
    observed = {tok: seen for tok in token}
    for e in t.take():
        replay.apply(e, observed)
    writes = [e for e in replay.applied if isinstance(e, kafka_io.WriteAt)]
    assert [(w.offset, len(w.data)) for w in writes] == [(0, 4096)]  # the dirty page, not the clean one
    assert storage.open("/d0/t-0/00000000000000000000.index")._inode.durable == seen  # msync made it durable


def test_an_fd_closed_by_one_thread_and_reused_by_another_keeps_the_new_files_position():
    """The JVM's cleaner thread closes an abandoned channel's fd while a load thread opens a
    segment: the kernel frees the number as close begins, so the open can get it before close
    returns, and strace prints the close's end after the open's.  The fd is the new file's."""
    seg = f"{ROOT}/d0/t-0/00000000000000000000.log"
    lines = [
        f"33 close({fd(50, seg)} <unfinished ...>",
        f"44 openat(AT_FDCWD<{x('/w')}>, {s(seg)}, O_RDWR|O_CREAT, 0666) = {fd(50, seg)}",
        f"44 lseek({fd(50, seg)}, 3, SEEK_SET) = 3",
        "33 <... close resumed>)             = 0",
        f"21 write({fd(50, seg)}, {s('de')}, 2) = 2",
    ]
    existing = {"/": "dir", "/d0": "dir", "/d0/t-0": "dir", "/d0/t-0/00000000000000000000.log": "file"}
    writes = [e for e in translate(lines, existing).take() if isinstance(e, kafka_io.WriteAt)]
    assert [(w.offset, w.data) for w in writes] == [(3, b"de")]


def test_an_address_unmapped_by_one_thread_and_mapped_again_by_another_stays_mapped():
    """The same race on an mmap address: the cleaner's munmap frees it as it begins, a load
    thread's mmap gets it, and the later msync of the new mapping is the new index's."""
    idx = f"{ROOT}/d0/t-0/00000000000000000000.index"
    lines = [
        "23 munmap(0x7f0000000000, 4096 <unfinished ...>",
        f"44 openat(AT_FDCWD<{x('/w')}>, {s(idx)}, O_RDWR|O_CREAT, 0666) = {fd(51, idx)}",
        f"44 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, {fd(51, idx)}, 0) = 0x7f0000000000",
        "23 <... munmap resumed>)             = 0",
        "45 msync(0x7f0000000000, 4096, MS_SYNC) = 0",
    ]
    existing = {"/": "dir", "/d0": "dir", "/d0/t-0": "dir", "/d0/t-0/00000000000000000000.index": "file"}
    syncs = [e for e in translate(lines, existing).take() if isinstance(e, kafka_io.MapSync)]
    assert [s.durable for s in syncs] == [True]


@pytest.mark.parametrize(
    "line, named",
    [
        (f"7 link({s(ROOT + '/d0/a')}, {s(ROOT + '/d0/b')}) = 0", "link"),
        (f"7 rmdir({s(ROOT + '/d0/t-0')}) = 0", "rmdir"),
        (f"7 fallocate({fd(30, ROOT + '/d0/f')}, FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE, 0, 4096) = 0", "fallocate"),
        (f"7 renameat2(AT_FDCWD<{x('/w')}>, {s(ROOT + '/d0/f')}, AT_FDCWD<{x('/w')}>, {s(ROOT + '/d0/g')}, RENAME_EXCHANGE) = 0", "renameat2"),
        (f"7 rename({s(ROOT + '/d0/f')}, {s('/elsewhere/f')}) = 0", "rename"),
    ],
)
def test_an_effect_the_journal_cannot_express_is_unsupported_naming_it(line, named):
    existing = {"/": "dir", "/d0": "dir", "/d0/t-0": "dir", "/d0/t-0/0.log": "file", "/d0/a": "file", "/d0/f": "file"}
    with pytest.raises(kafka_io.UnknownEffect, match=named):
        translate([line], existing)


def test_a_partition_dir_renamed_and_removed_moves_its_files_in_the_journal():
    """LogManager.asyncDelete renames the partition dir ``-delete`` and fsyncs the data dir; the
    deletion task later unlinks its files and removes it (rmdir)."""
    old, new = f"{ROOT}/d0/t-0", f"{ROOT}/d0/t-0.abc-delete"
    seg = "00000000000000000000.log"
    lines = [
        f"7 write({fd(30, old + '/' + seg)}, {s('xy')}, 2) = 2",
        f"7 rename({s(old)}, {s(new)}) = 0",
        f"7 fsync({fd(31, ROOT + '/d0')}) = 0",
        f"7 write({fd(30, new + '/' + seg)}, {s('z')}, 1) = 1",
        f"7 unlink({s(new + '/' + seg)}) = 0",
        f"7 rmdir({s(new)}) = 0",
    ]
    existing = {"/": "dir", "/d0": "dir", "/d0/t-0": "dir", f"/d0/t-0/{seg}": "file"}
    t = translate(lines, existing)
    effects = t.take()
    assert [type(e).__name__ for e in effects] == [
        "Bind", "WriteAt", "Rename", "FsyncDir", "WriteAt", "Unlink", "RemoveDir"
    ]  # fmt: skip
    storage = sim.SimStorage.from_image({f"/d0/t-0/{seg}": b""}, ["/d0", "/d0/t-0"])
    replay = kafka_io.Replay(storage)
    for e in effects[:5]:
        replay.apply(e)
    assert storage.image() == {f"/d0/t-0.abc-delete/{seg}": b"xyz"}  # the write after the rename follows the file
    for e in effects[5:]:
        replay.apply(e)
    assert storage.image() == {} and "/d0/t-0.abc-delete" not in storage.directories()


def test_paths_outside_the_root_are_not_kafkas_data():
    t = translate([f"7 openat(AT_FDCWD<{x('/w')}>, {s('/tmp/other')}, O_RDWR|O_CREAT, 0666) = {fd(3, '/tmp/other')}"])
    assert t.take() == []


def test_strace_missing_is_unsupported(monkeypatch):
    monkeypatch.setenv("KLC_STRACE", "no-such-strace-here")
    with pytest.raises(kafka_io.CaptureUnsupported, match="needs strace"):
        kafka_io.strace_binary()


@pytest.mark.skipif(kafka_io.capture_problem() is not None, reason="strace or ptrace unavailable here")
def test_no_ptrace_permission_is_unsupported():
    """A process another tracer holds cannot be attached to (EPERM from ptrace), as in a container
    without the permission."""
    sleeper = subprocess.Popen(["sleep", "30"])
    holder = subprocess.Popen(["strace", "-qq", "-o", os.devnull, "-p", str(sleeper.pid)])
    try:
        deadline = time.monotonic() + 10
        while not kafka_io._all_traced(sleeper.pid, holder.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(kafka_io.CaptureUnsupported, match="ptrace"):
            kafka_io.Tracer(sleeper.pid)
    finally:
        holder.terminate()
        holder.wait()
        sleeper.kill()
        sleeper.wait()


def test_a_capture_that_misses_an_effect_says_where():
    storage = replayed(lines_for_new_segment())
    files = storage.image()
    files["/d0/t-0/00000000000000000000.log"] = b"abXde"
    assert "at byte 2" in kafka_io.first_difference(storage, files)
    assert kafka_io.first_difference(storage, storage.image()) is None


def test_the_parser_skips_calls_that_name_nothing_under_the_root():
    parser = kafka_io.Parser(ROOT)
    jar = f"7 lseek({fd(14, '/root/.m2/kafka.jar')}, 0, SEEK_CUR) = 4"
    mine = f"7 lseek({fd(30, ROOT + '/d0/t-0/0.log')}, 0, SEEK_CUR) = 4"
    other_root = f"7 lseek({fd(30, ROOT + 'y/d0/t-0/0.log')}, 0, SEEK_CUR) = 4"  # another target's root
    assert parser.feed(jar) is None and parser.feed(other_root) is None
    assert parser.feed(mine).name == "lseek"
    assert parser.feed("7 munmap(0x7f0000000000, 8192) = 0").name == "munmap"  # an address: kept
    assert parser.feed(f"7 write({fd(2, '/dev/pts/0')}, {s('log')}, 3) = 3") is None
    assert parser.feed(f"7 write(1<{x('pipe:[1]')}>, {s('{}')}, 2) = 2").name == "write"


def test_an_image_is_handed_to_restore_relative_to_the_root():
    storage = replayed(lines_for_new_segment())
    files, dirs, mtimes = kafka_io.image_for_restore(crash_image(storage, Fault("process")))
    assert set(files) == {"d0/t-0/00000000000000000000.log", "d0/recovery-point-offset-checkpoint"}
    assert dirs == ["d0", "d0/t-0"] and set(mtimes) == set(files)
