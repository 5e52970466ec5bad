"""A clean start's cost (issue #34 item 3): one listing per partition, no stat of a segment's files,
no needless rewrite of the leader-epoch checkpoint — and the clean-start benchmark's own checks."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from benchmarks import clean_start
from impl.config import LogConfig
from impl.index import LazyIndex
from impl.log_manager import LogManager
from impl.names import parse_java_number
from impl.storage import OsStorage

# benchmarks collect garbage before every timed run (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("frozen_heap")


class CountingStorage:
    """OsStorage, with each call of the directory and existence questions counted per path."""

    thread_safe = True

    def __init__(self):
        self.inner = OsStorage()
        self.stats = self.inner.stats
        self.calls: Counter = Counter()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _count(self, what, path):
        self.calls[(what, os.path.basename(path))] += 1

    def exists(self, path):
        self._count("exists", path)
        return self.inner.exists(path)

    def is_dir(self, path):
        self._count("is_dir", path)
        return self.inner.is_dir(path)

    def list_dir(self, path):
        self._count("list", path)
        return self.inner.list_dir(path)

    def scan_dir(self, path):
        self._count("list", path)
        return self.inner.scan_dir(path)


@pytest.fixture
def layout(tmp_path):
    return clean_start.build(str(tmp_path), partitions=2, segments=6)


def _start(layout, storage):
    manager = LogManager(storage, [layout.data_dir], LogConfig(segment_index_bytes=4096), lambda: clean_start.T0)
    loads = manager.startup()
    return manager, loads


def test_a_clean_start_lists_each_partition_once_and_stats_no_segment_file(layout):
    storage = CountingStorage()
    manager, loads = _start(layout, storage)
    try:
        clean_start.check(layout, storage, loads)
        lists = {name: n for (what, name), n in storage.calls.items() if what == "list"}
        assert lists == {"d0": 1, "t-0": 1, "t-1": 1}
        segment_files = {
            (what, name): n
            for (what, name), n in storage.calls.items()
            if what != "list" and name.endswith((".log", ".index", ".timeindex", ".txnindex"))
        }
        # only each partition's active segment's indexes, materialised to be resized (§5.7)
        assert segment_files == {("exists", "00000000000000000020.index"): 2,
                                 ("exists", "00000000000000000020.timeindex"): 2}  # fmt: skip
    finally:
        clean_start.release(manager, storage.inner)


def test_a_clean_start_leaves_the_epoch_checkpoint_as_it_was(layout):
    """§5.2 step 9 takes out the first entry and puts it back unchanged: Kafka schedules a rewrite
    of the same bytes; after a clean shutdown they are durable, so none is made."""
    storage = OsStorage()
    epochs = os.path.join(layout.data_dir, "t-0", "leader-epoch-checkpoint")
    before = os.stat(epochs).st_ino
    manager, loads = _start(layout, storage)
    clean_start.release(manager, storage)
    assert os.stat(epochs).st_ino == before  # not replaced by a rename
    assert storage.stats.fsyncs == 1  # the data dir's, after the marker's deletion


def test_an_unclean_start_rewrites_the_epoch_checkpoint_as_kafka_does(layout):
    """After a crash the bytes may sit in a rename not yet durable: the rewrite makes them so."""
    os.unlink(os.path.join(layout.data_dir, ".kafka_cleanshutdown"))
    epochs = os.path.join(layout.data_dir, "t-0", "leader-epoch-checkpoint")
    before = os.stat(epochs).st_ino
    storage = OsStorage()
    manager, loads = _start(layout, storage)
    clean_start.release(manager, storage)
    assert all(load.error is None for load in loads)
    assert os.stat(epochs).st_ino != before
    with open(epochs, "rb") as f:
        assert f.read() == clean_start.EPOCHS


def test_a_changed_entry_is_written_on_a_clean_start_too(layout):
    """A log start offset above the first entry's start moves that entry (§5.2 step 9): written."""
    with open(os.path.join(layout.data_dir, "log-start-offset-checkpoint"), "w") as f:
        f.write("0\n1\nt 0 5\n")
    storage = OsStorage()
    manager, loads = _start(layout, storage)
    clean_start.release(manager, storage)
    with open(os.path.join(layout.data_dir, "t-0", "leader-epoch-checkpoint"), "rb") as f:
        assert f.read() == b"0\n1\n0 5\n"


def test_a_lazy_index_never_used_has_no_lock_and_closes_without_one(tmp_path):
    lazy = LazyIndex.offset_index(OsStorage(), str(tmp_path / "0.index"), 0, 4096)
    lazy.close_handler()
    lazy.close()
    assert lazy._own_lock is None and not lazy.is_materialised
    assert lazy.get().entries == 0 and lazy._own_lock is not None
    assert lazy._lock is lazy._lock  # made once
    lazy.close()


@pytest.mark.parametrize(
    "text,bits,value",
    [("00000000000000000042", 64, 42), ("9223372036854775807", 64, 2**63 - 1), ("9223372036854775808", 64, None),
     ("-9223372036854775808", 64, -(2**63)), ("-9223372036854775809", 64, None), ("2147483648", 32, None),
     ("+7", 32, 7), ("٣", 32, 3), ("1" * 50, 64, None), ("0" * 60 + "7", 64, 7), ("", 64, None), ("-", 64, None)],
)  # fmt: skip
def test_parse_java_number_fast_path_keeps_javas_answers(text, bits, value):
    assert parse_java_number(text, bits) == value


def test_the_benchmark_runs_on_a_tiny_dir_with_its_checks():
    r = clean_start.run(partitions=2, segments=5, repeat=1)
    assert r["segments"] == 5 and r["load_over_floor"] > 0
    assert r["listings"] == 3  # the data dir and each partition's, once
    assert r["opens_per_segment"] >= 1  # every .log opened (and a few checkpoints)
    assert "clean start: 2 partitions, 5 segments" in "\n".join(clean_start.render(r))


def test_the_benchmark_check_refuses_a_load_that_did_less(layout):
    storage = OsStorage()
    manager, loads = _start(layout, storage)
    try:
        wrong = clean_start.Layout(layout.data_dir, 2, (4, 3), layout.active_tail_bytes, layout.active_indexes)
        with pytest.raises(RuntimeError, match="segments"):
            clean_start.check(wrong, storage, loads)
        storage.stats.add("log_bytes_read", 1)
        with pytest.raises(RuntimeError, match="log bytes read"):
            clean_start.check(layout, storage, loads)
    finally:
        clean_start.release(manager, storage)
