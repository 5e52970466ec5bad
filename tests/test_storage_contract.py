"""The storage protocol, one contract for both backends (the real one on a temp dir, the simulated
one in memory), plus the simulated backend's crash bookkeeping (DESIGN.md "Storage faults")."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.sim_storage import Create, Rename, SimStorage, Truncate, Unlink, Write
from impl.storage import OsStorage


@pytest.fixture(params=["os", "sim"])
def backend(request, tmp_path):
    if request.param == "os":
        return OsStorage(), str(tmp_path)
    storage = SimStorage(clock=lambda: 1234)
    storage.make_dirs("/data")
    return storage, "/data"


def test_files(backend):
    s, root = backend
    with pytest.raises(FileNotFoundError):
        s.open(f"{root}/missing")
    f = s.open(f"{root}/a", create=True)
    assert f.append(b"hello") == 0 and f.size() == 5
    f.write_at(8, b"xy")  # past the end: the gap reads as zeros
    assert f.read(0, 100) == b"hello\0\0\0xy"
    f.truncate(3)
    assert f.read(0, 100) == b"hel" and f.read(10, 5) == b""
    f.truncate(6)
    assert f.read(0, 6) == b"hel\0\0\0"
    m = f.map()
    struct.pack_into(">h", m, 0, 0x4142)
    assert f.read(0, 2) == b"AB"
    f.flush_map(m)
    f.unmap(m)
    f.truncate(16)
    m = f.map()
    assert len(m) == 16 and bytes(m[:2]) == b"AB"
    f.unmap(m)
    assert bytes(f.view()[:3]) == b"ABl"
    f.fsync()
    f.close()
    assert s.stats.bytes_read > 0 and s.stats.fsyncs >= 1


def test_directories(backend):
    s, root = backend
    s.make_dirs(f"{root}/p/q")
    s.make_dirs(f"{root}/p/q")  # exist_ok
    s.open(f"{root}/p/f1", create=True).close()
    s.open(f"{root}/p/f2", create=True).close()
    assert s.list_dir(f"{root}/p") == ["f1", "f2", "q"]
    assert s.is_dir(f"{root}/p/q") and not s.is_dir(f"{root}/p/f1") and s.exists(f"{root}/p/f1")
    s.rename(f"{root}/p/f1", f"{root}/p/f2")  # replaces
    assert s.list_dir(f"{root}/p") == ["f2", "q"]
    with pytest.raises(FileNotFoundError):
        s.rename(f"{root}/p/f1", f"{root}/p/f3")
    assert s.scan_dir(f"{root}/p") == (["f2", "q"], {"q"})  # one read, each entry's kind with it
    s.open(f"{root}/p/f2").write_at(0, b"marker")
    assert s.read_small(f"{root}/p/f2", 3) == b"mar" and s.read_small(f"{root}/p/f2", 100) == b"marker"
    with pytest.raises(FileNotFoundError):
        s.read_small(f"{root}/p/nope", 10)
    with pytest.raises(IsADirectoryError):
        s.read_small(f"{root}/p/q", 10)
    s.unlink(f"{root}/p/f2")
    with pytest.raises(FileNotFoundError):
        s.unlink(f"{root}/p/f2")
    with pytest.raises(FileNotFoundError):
        s.list_dir(f"{root}/nope")
    with pytest.raises(FileNotFoundError):
        s.scan_dir(f"{root}/nope")
    s.fsync_dir(f"{root}/p")
    s.open(f"{root}/t", create=True).close()
    s.set_mtime_ms(f"{root}/t", 1_600_000_000_123)
    assert s.mtime_ms(f"{root}/t") == 1_600_000_000_123


def test_read_only_refuses_changes():
    s = SimStorage.from_image({"/d/a": b"x"})
    ro = SimStorage.from_image({"/d/a": b"x"})
    ro.read_only = True
    with pytest.raises(PermissionError, match="/d/b"):
        ro.open("/d/b", create=True)
    with pytest.raises(PermissionError):
        ro.open("/d/a").write_at(0, b"y")
    with pytest.raises(PermissionError):
        ro.unlink("/d/a")
    assert ro.image() == s.image() == {"/d/a": b"x"}


def test_crash_bookkeeping():
    s = SimStorage()
    s.make_dirs("/d")
    s.fsync_dir("/")
    f = s.open("/d/a", create=True)
    f.write_at(0, b"abc")
    f.truncate(2)
    assert s.pending_summary()["/d/a"] == [Write(0, b"abc"), Truncate(2)]
    assert s.pending_summary()["/d"] == [Create("a")]
    assert s.durable_image() == {}  # neither the data nor the directory entry is durable yet
    f.fsync()
    assert "/d/a" not in s.pending_summary() and s.durable_image() == {}
    s.fsync_dir("/d")
    assert s.durable_image() == {"/d/a": b"ab"}
    s.rename("/d/a", "/d/b")
    f.write_at(2, b"z")  # the renamed file keeps its identity and its pending write
    assert s.pending_summary()["/d"] == [Rename("/d/a", "/d/b")]
    assert s.durable_image() == {"/d/a": b"ab"} and s.image() == {"/d/b": b"abz"}
    s.unlink("/d/b")
    assert s.pending_summary()["/d"][-1] == Unlink("b")
    m = s.open("/d/c", create=True)
    m.truncate(8192)
    m.fsync()
    mm = m.map()
    mm[5000] = 1  # a write through the mapping is not an operation: it shows as a dirty page
    assert m.dirty_pages() == [1]


def test_from_image_and_materialise(tmp_path):
    s = SimStorage.from_image({"/x/y/z": b"123", "/x/w": b""}, directories=["/x/empty"])
    assert s.durable_image() == s.image() and s.pending_summary() == {}
    s.materialise(str(tmp_path))
    assert (tmp_path / "x/y/z").read_bytes() == b"123" and (tmp_path / "x/empty").is_dir()


ops = st.lists(
    st.tuples(
        st.sampled_from(["write", "truncate", "rename", "unlink", "create"]),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 40),
        st.binary(max_size=20),
    ),
    max_size=25,
)


@given(ops)
def test_both_backends_agree_on_any_operation_sequence(tmp_path_factory, sequence):
    root = str(tmp_path_factory.mktemp("agree"))
    real, sim = OsStorage(), SimStorage()
    sim.make_dirs("/r")
    outcomes = []
    for storage, base in ((real, root), (sim, "/r")):
        seen = []
        for op, x, y, n, data in sequence:
            try:
                if op == "create":
                    storage.open(f"{base}/{x}", create=True).close()
                elif op == "write":
                    f = storage.open(f"{base}/{x}")
                    f.write_at(n, data)
                    f.close()
                elif op == "truncate":
                    f = storage.open(f"{base}/{x}")
                    f.truncate(n)
                    f.close()
                elif op == "rename":
                    storage.rename(f"{base}/{x}", f"{base}/{y}")
                else:
                    storage.unlink(f"{base}/{x}")
                seen.append("ok")
            except FileNotFoundError:
                seen.append("missing")
        files = {}
        for name in storage.list_dir(base):
            f = storage.open(f"{base}/{name}")
            files[name] = f.read(0, f.size())
            f.close()
        outcomes.append((seen, files))
    assert outcomes[0] == outcomes[1]


def test_scan_dir_follows_links_as_is_dir_does(tmp_path):
    """A symbolic link to a directory is a directory to scan_dir as to is_dir; a dangling one and a
    FIFO are not (the loader lists them as files, as Kafka's listing does)."""
    import os

    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "d", tmp_path / "to-d")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    os.mkfifo(tmp_path / "fifo")
    s = OsStorage()
    names, dirs = s.scan_dir(str(tmp_path))
    assert names == s.list_dir(str(tmp_path)) == ["d", "dangling", "fifo", "to-d"]
    assert dirs == {n for n in names if s.is_dir(f"{tmp_path}/{n}")} == {"d", "to-d"}


def test_size_of_a_file_that_cannot_seek(tmp_path):
    """OsFile.size seeks to the end; a FIFO, which cannot seek, is sized by fstat as before (0)."""
    import os

    os.mkfifo(tmp_path / "fifo")
    f = OsStorage().open(str(tmp_path / "fifo"))
    try:
        assert f.size() == 0
    finally:
        f.close()
