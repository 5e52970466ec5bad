"""Parallel partition load (``num.recovery.threads.per.data.dir``, spec §6.2) on real directories:
the same dir loaded with 1 and with 4 threads gives the same load reports, logs and files; a power
loss in one worker still reaches the caller; backends not declared thread-safe stay sequential."""

from __future__ import annotations

import hashlib
import os
import threading

import pytest

from benchmarks import unclean
from conformance.sim_storage import SimStorage
from conformance.tracing import PowerLoss, TracingStorage
from impl.config import LogConfig
from impl.log_manager import LogManager
from impl.storage import OsStorage

# benchmarks collect garbage before every timed run (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("frozen_heap")

T0 = unclean.T0


def crashed_dir(root: str) -> None:
    """8 partitions an unclean shutdown left (torn active tails, a missing active ``.index``), plus
    two torn middle segments (the segments after them are deleted: the order of those deletions in
    the scheduler is compared too), a corrupt leader-epoch checkpoint and a directory whose name is no
    partition name."""
    unclean.write(unclean.build(partitions=8, segments=3, segment_bytes=48 * 1024, seed=3), root)
    d0 = os.path.join(root, "d0")
    with open(os.path.join(d0, "t-3", "leader-epoch-checkpoint"), "w") as f:
        f.write("0\n2\n0 0\n")  # two entries announced, one there: t-3 fails to load
    for partition in ("t-4", "t-6"):
        middle = sorted(n for n in os.listdir(os.path.join(d0, partition)) if n.endswith(".log"))[1]
        path = os.path.join(d0, partition, middle)
        os.truncate(path, os.path.getsize(path) - 100)
    os.makedirs(os.path.join(d0, "not-a-partition"))


def files_of(root: str) -> dict[str, tuple[int, str]]:
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            path = os.path.join(d, n)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = (os.path.getsize(path), hashlib.sha1(f.read()).hexdigest())
    return out


def load(root: str, threads: int, storage=None):
    """The isolate failure policy: the crashed dir holds a bad name and a failed partition, and
    every other partition's load is what is compared across thread counts."""
    storage = storage or OsStorage()
    config = LogConfig(num_recovery_threads_per_data_dir=threads)
    manager = LogManager(
        storage, [os.path.join(root, "d0")], config, lambda: T0, lambda _p, _b: 0, failure_policy="isolate"
    )
    return manager, manager.startup()


def outcome(root: str, manager: LogManager, loads) -> dict:
    strip = lambda text: text and text.replace(root, "ROOT")  # noqa: E731
    return {
        "loads": [
            (
                load.name,
                strip(load.error),
                load.log
                and (
                    load.log.log_start_offset,
                    load.log.log_end_offset,
                    load.log.recovery_point,
                    [(s.base_offset, s.size) for s in load.log.segments],
                    load.log.epoch_cache.entries,
                ),
                load.report
                and (
                    load.report.recovered_segments,
                    load.report.scanned_segments,
                    load.report.recovery_reasons,
                    load.report.truncated_bytes,
                    load.report.removed_segments,
                    [strip(p) for p in load.report.deleted_files],
                ),
            )
            for load in loads
        ],  # fmt: skip
        "logs": sorted(manager.logs),
        "failed": {tp: strip(why) for tp, why in manager.failed.items()},
        "pending": [strip(name) for name in manager.scheduler.pending()],
        "dirs": [(s.had_clean_shutdown, s.load_completed, s.offline) for s in manager.dirs.values()],
    }


def test_one_thread_and_four_threads_load_alike(tmp_path, monkeypatch):
    roots = [str(tmp_path / "one"), str(tmp_path / "four")]
    for root in roots:
        crashed_dir(root)
    assert files_of(roots[0]) == files_of(roots[1])
    import impl.loader

    workers = set()
    real_load = impl.loader.PartitionLoader.load

    def recording_load(self):
        workers.add(threading.current_thread().name)
        return real_load(self)

    monkeypatch.setattr(impl.loader.PartitionLoader, "load", recording_load)
    results = []
    for root, threads in zip(roots, (1, 4), strict=True):
        workers.clear()
        manager, loads = load(root, threads)
        results.append((outcome(root, manager, loads), files_of(root)))
        assert all(w.startswith("klc-recovery") for w in workers) == (threads > 1), workers
        manager.tick()  # nothing due yet (file.delete.delay.ms)
        assert manager.shutdown()
        results.append(files_of(root))
    (one, one_files), one_after, (four, four_files), four_after = results
    assert one == four
    assert one_files == four_files and one_after == four_after
    by_name = {entry[0]: entry for entry in one["loads"]}
    assert "leader-epoch-checkpoint" in by_name["t-3"][1] and ("t", 3) in one["failed"]
    assert "not-a-partition" in by_name["not-a-partition"][1]
    segments_t4, removed_t4 = by_name["t-4"][2][3], by_name["t-4"][3][4]
    assert len(segments_t4) == 2 and len(removed_t4) == 1 and removed_t4[0] > segments_t4[-1][0]  # after the torn one
    assert [name.split("/")[2] for name in one["pending"] if name.endswith(".log.deleted")] == ["t-4", "t-6"]
    assert by_name["t-2"][3][0] != by_name["t-2"][3][1]  # missing .index: recovered twice, scanned once
    assert [entry for entry in one["loads"] if entry[1]] == [by_name["not-a-partition"], by_name["t-3"]]


class LosesPowerAt(OsStorage):
    """The real backend, but the machine loses power when the loader opens a file of ``t-3``."""

    def open(self, path, create=False):
        if "/t-3/" in path:
            raise PowerLoss("open", path)
        return super().open(path, create)


@pytest.mark.parametrize("threads", [1, 4])
def test_a_power_loss_in_a_worker_reaches_the_caller(tmp_path, threads):
    root = str(tmp_path)
    unclean.write(unclean.build(partitions=8, segments=2, segment_bytes=32 * 1024), root)
    storage = LosesPowerAt()
    manager = LogManager(storage, [f"{root}/d0"], LogConfig(num_recovery_threads_per_data_dir=threads), lambda: T0)
    with pytest.raises(PowerLoss):
        manager.startup()
    assert sorted(manager.logs) == [("t", 0), ("t", 1), ("t", 2)]  # those before t-3, as with one thread
    for log in manager.logs.values():
        log.close_handlers()
    assert storage.close_all() == 0  # the logs loaded after t-3 were closed, not leaked


def test_backends_not_declared_thread_safe_load_with_one_thread():
    config = LogConfig(num_recovery_threads_per_data_dir=4)
    for storage, threads in ((OsStorage(), 4), (SimStorage(), 1), (TracingStorage(OsStorage()), 1)):
        assert LogManager(storage, ["/d0"], config, lambda: T0).recovery_threads() == threads
    assert LogManager(OsStorage(), ["/d0"], LogConfig(), lambda: T0).recovery_threads() == 1
