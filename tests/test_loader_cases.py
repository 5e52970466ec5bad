"""The loader on hand-made disk images (spec §5.2–§5.6, §6.2): model (a pure function of the image)
and impl (on the simulated backend holding the same image) must leave the same logs and files."""

from __future__ import annotations

import struct
import types

import pytest

from conformance import faults
from conformance import scenario as sc
from conformance.runner import Session
from conformance.sim_storage import SimStorage
from impl.config import LogConfig
from impl.log_manager import LogManager
from model.config import Config
from model.log_manager import load as model_load
from model.records import build_batch_v2

T0 = 1_700_000_000_000


def seg(base: int, batches: int = 2, per: int = 3) -> bytes:
    out, offset = b"", base
    for _ in range(batches):
        out += build_batch_v2(
            offset, [(T0 + offset + i, b"k", b"v" * 20) for i in range(per)], partition_leader_epoch=0
        )
        offset += per
    return out


def time_entry(ts: int, rel: int) -> bytes:
    return struct.pack(">qi", ts, rel)


def clean_partition(p: str, bases=(0, 6, 12)) -> dict[str, bytes]:
    files = {}
    for b in bases:
        files[f"{p}/{b:020d}.log"] = seg(b)
        files[f"{p}/{b:020d}.index"] = b""
        files[f"{p}/{b:020d}.timeindex"] = time_entry(T0 + b + 5, 5)
    files[f"{p}/leader-epoch-checkpoint"] = b"0\n1\n0 0\n"
    return files


def both(image: dict[str, bytes], dirs=("/k/d0",), seen: dict | None = None, damaged=(), policy="kafka"):
    """Load ``image`` (paths under ``/k``) with both, through the runner: a scenario with a disk
    image and no steps, whose first open every property judges.  Returns impl's load results by
    partition and its files (paths under ``/k`` again).  ``seen`` (if given) receives the impl's
    storage stats of the load and the model's outcomes.  ``damaged``: the partitions the image
    damaged on purpose (judged as after a ``corrupt`` step)."""
    scenario = sc.Scenario(
        (), {"segment.index.bytes": 4096}, data_dirs=len(dirs), clock_start_ms=T0,
        image=sc.DiskImage({p.removeprefix("/k/"): data for p, data in image.items()}, damaged=tuple(damaged)),
        failure_policy=policy,
    )  # fmt: skip
    session = Session(scenario, ("model", "impl"))
    try:
        assert not session.verdict.violations, str(session.verdict.violations[0])
        impl = next(t for t in session.targets if t.name == "impl/sim")
        if seen is not None:
            stats = types.SimpleNamespace(
                **{k: impl.load_stats[k] for k in ("log_bytes_read", "producer_state_bytes_read")}
            )
            seen |= {"stats": stats, "model": {o.name: o for o in session.model.manager.outcomes}}
        return {load.name: load for load in impl.last_reports}, {f"/k/{p}": d for p, d in impl.files().items()}
    finally:
        session.close()


def test_clean_shutdown_trusts_everything():
    image = clean_partition("/k/d0/t-0") | {
        "/k/d0/.kafka_cleanshutdown": b"",
        "/k/d0/recovery-point-offset-checkpoint": b"0\n1\nt 0 18\n",
    }
    loads, files = both(image)
    assert loads["t-0"].report.recovered_segments == [] and "/k/d0/.kafka_cleanshutdown" not in files


def test_unclean_shutdown_recovers_from_the_recovery_point_and_drops_what_follows_a_torn_segment():
    image = clean_partition("/k/d0/t-0")
    image["/k/d0/t-0/00000000000000000006.log"] = seg(6)[:-7]  # torn tail in a middle segment
    image["/k/d0/recovery-point-offset-checkpoint"] = b"0\n1\nt 0 7\n"
    loads, files = both(image)
    report = loads["t-0"].report
    assert report.recovered_segments == [6] and report.removed_segments == [12] and report.truncated_bytes > 0
    assert "/k/d0/t-0/00000000000000000012.log.deleted" in files


def test_temp_files_swaps_and_orphans():
    image = clean_partition("/k/d0/t-0") | {"/k/d0/.kafka_cleanshutdown": b""}
    image["/k/d0/t-0/00000000000000000003.log.deleted"] = b"x"
    image["/k/d0/t-0/00000000000000000009.log.cleaned"] = b"x"
    image["/k/d0/t-0/00000000000000000012.log.swap"] = b"stale swap above a .cleaned"  # invalid: deleted
    image["/k/d0/t-0/00000000000000000042.index"] = b""  # orphan
    image["/k/d0/t-0/leader-epoch-checkpoint.deleted"] = b""
    image["/k/d0/t-0/x.checkpoint.deleted"] = b"kept"
    _, files = both(image)
    names = {p.rsplit("/", 1)[1] for p in files}
    assert not any(n.endswith((".cleaned", ".swap")) for n in names) and "00000000000000000042.index" not in names
    assert "x.checkpoint.deleted" in names and "00000000000000000003.log.deleted" not in names


def test_a_swap_replaces_the_segments_it_covers():
    image = clean_partition("/k/d0/t-0") | {"/k/d0/.kafka_cleanshutdown": b""}
    image["/k/d0/t-0/00000000000000000000.log.swap"] = seg(0, batches=4)  # covers offsets 0..11
    image["/k/d0/t-0/00000000000000000000.index.swap"] = b""
    loads, files = both(image)
    assert [s.base_offset for s in loads["t-0"].log.segments] == [0, 12]


def test_missing_offset_index_means_recovery_even_after_a_clean_shutdown():
    image = clean_partition("/k/d0/t-0") | {"/k/d0/.kafka_cleanshutdown": b""}
    del image["/k/d0/t-0/00000000000000000006.index"]
    loads, _ = both(image)
    assert loads["t-0"].report.recovered_segments == [6]


def test_log_end_below_the_log_start_offset_empties_the_log():
    image = clean_partition("/k/d0/t-0") | {"/k/d0/log-start-offset-checkpoint": b"0\n1\nt 0 50\n",
                                           "/k/d0/recovery-point-offset-checkpoint": b"0\n1\nt 0 18\n"}  # fmt: skip
    loads, _ = both(image)
    log = loads["t-0"].log
    assert [s.base_offset for s in log.segments] == [50] and log.log_end_offset == 50 == log.log_start_offset


@pytest.mark.parametrize("bad", ["/k/d0/t-0/abc.log", "/k/d0/weird/00000000000000000000.log"])
def test_a_bad_name_is_isolated(bad):
    image = clean_partition("/k/d0/t-0") | clean_partition("/k/d0/u-1") | {bad: b""}
    loads, _ = both(image, policy="isolate")
    bad_one = [n for n, load in loads.items() if load.error]
    assert len(bad_one) == 1 and bad.split("/")[3] == bad_one[0] and loads["u-1"].error is None
    assert bad.split("/")[3] in loads[bad_one[0]].error


def test_a_bad_file_name_fails_the_startup_after_every_load():
    """Kafka's policy (§6.2 step 7): the partition's load throws, the others still load, then the
    startup fails (the runner checks model and impl agree on it)."""
    image = clean_partition("/k/d0/t-0") | clean_partition("/k/d0/u-1") | {"/k/d0/t-0/abc.log": b""}
    loads, _ = both(image)
    assert "abc.log" in loads["t-0"].error and loads["u-1"].log is not None


def test_a_bad_directory_name_loads_nothing_of_its_dir():
    """Kafka parses a dir's partition names before it loads any (§2.3): the KafkaException leaves
    loadLogs with nothing of that dir or a later one loaded."""
    image = clean_partition("/k/d0/t-0") | clean_partition("/k/d1/u-1") | {"/k/d0/weird/00000000000000000000.log": b""}
    loads, _ = both(image, dirs=("/k/d0", "/k/d1"))
    assert "not in the form of topic-partition" in loads["weird"].error
    assert all(loads[n].log is None and "the startup failed at" in loads[n].error for n in ("t-0", "u-1"))


def test_malformed_recovery_checkpoint_recovers_everything():
    image = clean_partition("/k/d0/t-0") | {"/k/d0/recovery-point-offset-checkpoint": b"0\n2\nt 0 18\n"}
    loads, _ = both(image)
    assert loads["t-0"].report.recovered_segments == [0, 6, 12] and loads["t-0"].log.recovery_point == 0


def test_a_partition_that_failed_to_load_refuses_create():
    """§6.6: Kafka offlines the whole dir; we keep the others and refuse to create over the failed
    one (corpora/crash/create-over-a-partition-that-failed-to-load.json)."""
    from impl.log import LogError as ImplLogError
    from model.log import LogError as ModelLogError

    image = clean_partition("/k/d0/t-0") | clean_partition("/k/d0/u-1")
    image["/k/d0/t-0/leader-epoch-checkpoint"] = b"0\n2\n0 0\n"  # two entries announced, one there
    directories = ["/k/d0", "/k/d0/t-0", "/k/d0/u-1"]
    storage = SimStorage.from_image(image, directories=directories)
    impl = LogManager(storage, ["/k/d0"], LogConfig(segment_index_bytes=4096), lambda: T0)
    impl.startup()
    model = model_load(image, ["/k/d0"], Config.of({}), lambda: T0, lambda p, b: 0, set(directories))
    for manager, error in ((impl, ImplLogError), (model, ModelLogError)):
        with pytest.raises(error, match="KafkaStorageException.*t-0 failed to load.*leader-epoch-checkpoint"):
            manager.create_log("t", 0)
        assert manager.create_log("u", 1) is manager.log("u", 1)
    assert storage.image()["/k/d0/t-0/leader-epoch-checkpoint"] == b"0\n2\n0 0\n"


@pytest.mark.parametrize("damaged, leo", [(1, 18), (2, 12)])
def test_clean_load_next_offset_needs_a_batch_reaching_the_index(damaged, leo):
    """§4.5 rule 3: the base offset is not covered by the v2 CRC; if no batch of the active segment
    reaches the offset index's last offset (here its base), the log ends at the segment's base."""
    image = clean_partition("/k/d0/t-0") | {"/k/d0/.kafka_cleanshutdown": b""}
    data = bytearray(image["/k/d0/t-0/00000000000000000012.log"])
    position = 0
    for _ in range(damaged):
        data[position] = 0xD8  # a negative base offset
        position += 12 + struct.unpack_from(">i", data, position + 8)[0]
    image["/k/d0/t-0/00000000000000000012.log"] = bytes(data)
    loads, _ = both(image, damaged=["d0/t-0"])
    assert loads["t-0"].log.log_end_offset == leo


@pytest.mark.parametrize("torn", [False, True])
def test_a_segment_recovered_for_a_missing_index_is_scanned_once(torn):
    """§5.3 + §5.6: after an unclean shutdown, a segment above the recovery point whose ``.index``
    is missing is recovered twice by Kafka — by loadSegmentFiles, then by recoverLog.  impl scans
    it once and reports both recoveries; the second truncates nothing, so even when the first cut a
    torn tail, recovery goes on to the next segment (both sides keep segment 18)."""
    p = "/k/d0/t-0"
    image = {}
    for epoch, b in enumerate((0, 6, 12, 18)):
        data = b"".join(
            build_batch_v2(o, [(T0 + o + i, b"k", b"v" * 20) for i in range(3)], partition_leader_epoch=epoch)
            for o in (b, b + 3)
        )
        image[f"{p}/{b:020d}.log"] = data
        image[f"{p}/{b:020d}.index"] = b""
        image[f"{p}/{b:020d}.timeindex"] = time_entry(T0 + b + 5, 5)
    image[f"{p}/leader-epoch-checkpoint"] = b"0\n1\n0 0\n"
    image["/k/d0/recovery-point-offset-checkpoint"] = b"0\n1\nt 0 7\n"  # inside segment 6; no marker
    del image[f"{p}/00000000000000000012.index"]
    if torn:
        image[f"{p}/00000000000000000012.log"] = image[f"{p}/00000000000000000012.log"][:-7]
    seen = {}
    loads, files = both(image, seen=seen)
    report, outcome = loads["t-0"].report, seen["model"]["t-0"]
    assert report.recovered_segments == outcome.recovered == [12, 6, 12, 18]  # Kafka's recoveries
    assert report.scanned_segments == [12, 6, 18]  # what impl read
    assert [s.base_offset for s in loads["t-0"].log.segments] == [0, 6, 12, 18]
    # segment 12 was recovered first: its epoch 2 is assigned before segment 6's 1, which then is not
    assert loads["t-0"].log.epoch_cache.entries == [(0, 0), (2, 12), (3, 18)]
    # every byte impl read of a log: each scanned segment once, plus the active segment's tail
    # (readNextOffset); Kafka (the model's count) also reads segment 12 a second time
    size = {b: len(files[f"{p}/{b:020d}.log"]) for b in (6, 12, 18)}
    first_pass_12 = len(image[f"{p}/00000000000000000012.log"])
    assert (report.truncated_bytes > 0) == torn == (first_pass_12 > size[12])
    assert seen["stats"].log_bytes_read == first_pass_12 + size[6] + size[18] + size[18]  # (18: no index entry)
    assert outcome.log_bytes_read == seen["stats"].log_bytes_read + size[12]
    # the producer-state rebuild before recovering segment 12 reads the segments below it from the
    # log start, 0 included, below the recovery point (no snapshot: docs/producer-state.md, rule 17)
    below = sum(len(image[f"{p}/{b:020d}.log"]) for b in (0, 6))
    assert outcome.producer_state_bytes_read >= below and seen["stats"].producer_state_bytes_read >= below


@pytest.mark.parametrize("overflow", [False, True])
def test_recovery_rebuilds_indexes_without_reading_them(tmp_path, overflow):
    """Recovery (§4.6) resets both indexes and rebuilds them from the log, so impl never reads the old
    files: their slots are overwritten in place and the files trimmed to the rebuilt entries — no
    old slot survives.  A rebuild stopped by an offset overflow leaves both files as Kafka does — at
    full size, the entries written so far first — for the split that follows (§5.5) to replace."""
    from impl.segment import LogSegment, LogSegmentOffsetOverflow
    from impl.storage import OsStorage

    d = str(tmp_path)
    log = seg(0, batches=4)
    if overflow:
        log = seg(0, batches=2) + build_batch_v2(2**31 + 7, [(T0, b"k", b"v")])
    with open(f"{d}/{0:020d}.log", "wb") as f:
        f.write(log)
    old = {".index": b"".join(struct.pack(">ii", i + 1, 50 * i + 1) for i in range(10)),
           ".timeindex": b"".join(time_entry(T0 + i, i + 1) for i in range(10))}  # fmt: skip
    for suffix, data in old.items():
        with open(f"{d}/{0:020d}{suffix}", "wb") as f:
            f.write(data)
    storage = OsStorage()
    segment = LogSegment(storage, d, 0, LogConfig(index_interval_bytes=0, segment_index_bytes=4096), T0, existing=True)
    before = storage.stats.snapshot()
    if overflow:
        with pytest.raises(LogSegmentOffsetOverflow):
            segment.recover()
    else:
        assert segment.recover() == 0
    # not one slot of the old files read: only each index's last rebuilt entry, re-read by the trim
    assert storage.stats.index_bytes_read - before.index_bytes_read == (0 if overflow else 8 + 12)
    segment.close_handlers()
    storage.close_all()
    with open(f"{d}/{0:020d}.index", "rb") as f:
        index = f.read()
    with open(f"{d}/{0:020d}.timeindex", "rb") as f:
        stamps = f.read()
    # index.interval.bytes 0: one entry per batch after the first (the overflowing batch gets none)
    positions = [len(seg(0, batches=n)) for n in range(1, 2 if overflow else 4)]
    entries = b"".join(struct.pack(">ii", 3 * (i + 1) + 2, p) for i, p in enumerate(positions))
    if overflow:  # reset to full size, one entry written, then the old slots (Kafka's mmap state)
        assert len(index) == 4096 and index.startswith(entries) and index[8:80] == old[".index"][8:]
        return
    assert index == entries
    assert len(stamps) % 12 == 0 and all(stamps[i : i + 12] not in old[".timeindex"] for i in range(0, len(stamps), 12))


@pytest.mark.parametrize(
    "tail, position",
    [
        (struct.pack(">qi", 2**31 + 6, 30) + bytes([0, 0, 0, 0, 2]) + bytes(25), "byte 94"),  # v2, 42 bytes
        (struct.pack(">qi", 2**31 + 6, 5) + bytes(10), "byte 94"),  # size field 5 < 14 (§1.10 rule 4)
    ],
    ids=["short-v2-batch", "size-below-minimum"],
)
def test_a_split_over_a_malformed_tail_fails_the_partition_naming_the_position(tail, position):
    """An overflowed legacy segment whose framing goes on past its last valid batch with bytes the
    split cannot walk (§5.5: Kafka's batchesFrom iterator throws): model and impl both report the
    segment and the byte position, other partitions load, nothing raises (bad-input, isolated)."""
    from conformance import runner
    from conformance import scenario as sc

    legacy = faults.InjectLegacySegment(
        "old", 0, 0, None, (faults.LegacyMessage(0), faults.LegacyMessage(2**31 + 5)), 1, "none", False, T0
    )
    session = runner.Session(sc.Scenario(()), ("model", "impl"), faults=True)
    assert not session.step(sc.Create("t", 0, 0)) and not session.step(sc.Shutdown()) and not session.step(legacy)
    files, dirs, mtimes = session.source.image()
    files["d0/old-0/00000000000000000000.log"] += tail
    for t in session.targets:
        t.restore(files, dirs, mtimes)
    assert session.step(sc.Open()) == []
    for target, result in session.verdict.results[-1].items():
        loaded = {x["partition"]: x["error"] for x in result["loaded"]}
        assert loaded["t-0"] is None, target
        assert "d0/old-0/00000000000000000000.log" in loaded["old-0"] and position in loaded["old-0"], (target, loaded)


@pytest.mark.parametrize("damage", ["crc", "size"])
def test_a_clean_load_reads_the_active_tail_by_framing_alone(damage):
    """§4.5 rule 3, §1.10: readNextOffset at a clean load walks the active segment's tail with
    Kafka's batchesFrom iterator — a batch whose CRC fails counts towards the log end offset, a size
    field below 14 fails the partition's load naming the file and byte position."""
    from conformance import scenario as sc
    from conformance.runner import run

    batch = sc.BatchSpec((sc.Rec(1_700_000_000_000, "k", "v" * 30),))
    size = len(sc.append_bytes(sc.Append("t", 0, (batch,))))
    # a bit in the second batch's attributes (CRC-covered), or its size field zeroed
    corrupt = (
        faults.Corrupt(path="d0/t-0/00000000000000000000.log", offset=size + 21, kind="bitflip", seed=3)
        if damage == "crc"
        else faults.Corrupt(path="d0/t-0/00000000000000000000.log", offset=size + 8, length=4, kind="zero")
    )
    steps = (sc.Create("t", 0), sc.Append("t", 0, (batch, batch)), sc.Shutdown(), corrupt, sc.Open())
    steps += (sc.Append("t", 0, (batch,)),)
    verdict = run(sc.Scenario(steps, clock_start_ms=1_700_000_000_000))
    assert verdict.violations == []
    for target in ("model", "impl/sim"):
        (load,) = verdict.results[4][target]["loaded"]
        if damage == "crc":  # nothing recovered, and the damaged batch is below the log end
            assert load["error"] is None and load["recovered"] == []
            assert verdict.results[5][target] == {"first": 2, "last": 2}
        else:
            assert "00000000000000000000.log" in load["error"] and f"byte position {size}" in load["error"]
    if damage == "crc":
        assert verdict.results[4]["model"] == verdict.results[4]["impl/sim"]


def test_a_last_batch_below_the_base_is_no_overflow_and_the_load_fails():
    """§4.5 rule 4: hasOverflow needs the next offset above the segment's base.  A last batch whose
    base offset went below the segment's (damage outside the CRC) makes recovery throw the overflow
    (§4.6 step 3b), but the split refuses it (IllegalArgumentException, §5.5 step 1): the partition's
    load fails naming the segment, and nothing is split."""
    p = "/k/d0/t-0"
    image = clean_partition(p, bases=(0,))
    image[f"{p}/{10:020d}.log"] = seg(10, batches=1) + seg(3, batches=1)
    image[f"{p}/{10:020d}.index"] = b""
    loads, files = both(image)
    assert "IllegalArgumentException" in loads["t-0"].error and f"{10:020d}.log" in loads["t-0"].error
    assert not any(name.endswith((".deleted", ".swap", ".cleaned")) for name in files)


def test_a_split_below_the_base_leaves_the_new_segment_of_the_old_base_out_of_the_map():
    """§5.9 step 3: the split of segment 10 (batches at 10, 0 and past 2^31) makes new segments 0,
    10 and 2^32; replaceSegments takes the old segment out of the map by its base because that is
    not the smallest new base — the new segment 10 leaves with it, while its files are renamed into
    place.  The restarted recoverLog recovers new 0 and 2^32, not 10; the new segment 0 replaces
    the original 0."""
    p = "/k/d0/t-0"
    image = clean_partition(p, bases=(0,))
    image[f"{p}/{10:020d}.log"] = seg(10, batches=1) + seg(0, batches=1) + seg(2**32, batches=1)
    image[f"{p}/{10:020d}.index"] = b""
    seen: dict = {}
    loads, files = both(image, seen=seen)
    log = loads["t-0"].log
    assert [s.base_offset for s in log.segments] == [0, 2**32]
    assert seen["model"]["t-0"].recovered[-2:] == [0, 2**32]
    # the stray: new segment 10's files on disk, the original's renamed .deleted
    assert files[f"{p}/{10:020d}.log"] == seg(10, batches=1)
    assert f"{p}/{10:020d}.log.deleted" in files
    assert files[f"{p}/{0:020d}.log"] == seg(0, batches=1)


@pytest.mark.parametrize("size, loads", [(2**31 - 1, True), (2**31, False)])
def test_a_segment_past_int_max_fails_the_load_naming_it(tmp_path, size, loads):
    """FileRecords' constructor refuses a segment file longer than Int.MAX bytes (KafkaException),
    which fails the partition's load and so the startup; Int.MAX itself loads (checked on Kafka
    4.4.0).  On real files (sparse: no data written) through ``klc load``, and in the model through
    a memory map of the same file, so neither reads 2 GiB."""
    import mmap

    from click.testing import CliRunner

    from conformance.cli import main

    log = tmp_path / "d" / "t-0" / "00000000000000000000.log"
    log.parent.mkdir(parents=True)
    with open(log, "wb") as f:
        f.truncate(size)
    (tmp_path / "d" / ".kafka_cleanshutdown").touch()
    refusal = f"is larger than the maximum allowed segment size of {2**31 - 1}"
    result = CliRunner().invoke(main, ["load", str(tmp_path / "d")])
    if loads:
        assert result.exit_code == 0 and refusal not in result.output, result.output
    else:
        assert result.exit_code == 5 and f"00000000000000000000.log (2147483648) {refusal}" in result.output
    with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if loads:
            return  # the model would copy 2 GiB into memory: the refusal is what is checked here
        manager = model_load(
            {"/k/d0/t-0/00000000000000000000.log": data}, ["/k/d0"], Config.of({}), lambda: T0, lambda *a: 0
        )
    assert manager.startup_error is not None and refusal in manager.startup_error
    assert "/k/d0/t-0/00000000000000000000.log" in manager.startup_error
