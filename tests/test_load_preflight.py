"""`klc load` as a restart pre-flight: what the restart would discard and the exit status a script
can act on (docs/load.md, "Exit status"), on the real broker dirs of ../shared/real-data and
hand-damaged copies of them (copied first: the shared folder is never written)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.cli import main
from impl.file_records import BatchScan
from operator_tools import preflight

ITU = "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions"
KLC = os.path.join(os.path.dirname(sys.executable), "klc")


@pytest.fixture
def live(shared_dir, tmp_path) -> Path:
    """A private copy of the live `aec5bda1` dir, its preallocated indexes restored."""
    real = shared_dir / "real-data"
    dest = tmp_path / "live"
    subprocess.run(
        [sys.executable, str(real / "materialize_prealloc.py"), f"{ITU}/live-aec5bda1/kafka-data", "--out", str(dest)],
        cwd=real, check=True, capture_output=True,
    )  # fmt: skip
    return dest


def _load(*args, status: int) -> dict:
    result = CliRunner().invoke(main, ["load", "--json", *map(str, args)])
    assert result.exit_code == status, result.output
    return json.loads(result.output)


def _partition(report: dict, name: str) -> dict:
    return next(p for p in report["partitions"] if p["name"] == name)


def _set_hw(data: Path, topic: str, partition: int, hw: int) -> None:
    path = data / preflight.HW_CHECKPOINT
    lines = path.read_text().splitlines()
    body = [line for line in lines[2:] if line.split()[:2] != [topic, str(partition)]] + [f"{topic} {partition} {hw}"]
    path.write_text("\n".join(["0", str(len(body)), *body]) + "\n")


def _corrupt_batch(log: Path, index: int) -> tuple[int, int]:
    """Flip a byte inside the ``index``-th batch (its CRC then fails): (its base offset, position)."""
    data = bytearray(log.read_bytes())
    h = list(BatchScan(bytes(data)))[index]
    data[h.position + h.size - 1] ^= 0xFF
    log.write_bytes(bytes(data))
    return h.offset, h.position


def test_the_live_dir_loses_an_acknowledged_record(live):
    """`_schemas-0` of the live dir has a high watermark of 42 checkpointed and a log end of 41 on
    disk: a restart from these files loses an acknowledged record, and says so (exit 4)."""
    report = _load(live, status=preflight.ACKNOWLEDGED_LOST)
    schemas = _partition(report, "_schemas-0")["discarded"]
    assert (schemas["high_watermark"], _partition(report, "_schemas-0")["log_end_offset"]) == (42, 41)
    assert schemas["verdict"] == "acknowledged" and schemas["acknowledged_records_lost"] == 1
    others = [p["discarded"]["verdict"] for p in report["partitions"] if p["name"] != "_schemas-0"]
    assert others and set(others) == {"nothing"}
    assert report["restart"]["exit_status"] == 4 and report["restart"]["acknowledged_records_lost"] == 1
    text = CliRunner().invoke(main, ["load", str(live)]).output
    assert "ACKNOWLEDGED DATA LOST: log end 41 below the high watermark 42" in text


def test_the_clean_dir_restarts_losing_nothing(shared_dir):
    clean = shared_dir / "real-data" / ITU / "clean-2f57540f" / "kafka-data"
    report = _load(clean, status=preflight.NOTHING_LOST)
    assert report["restart"]["records_discarded"] == 0 and len(report["partitions"]) > 100


def test_a_cut_segment_below_the_high_watermark_is_acknowledged_loss(live):
    """A batch damaged by hand in `docker-connect-configs-0` (high watermark 10 = its log end):
    recovery truncates there, the records after it are counted, and they were acknowledged."""
    part = live / "docker-connect-configs-0"
    base, position = _corrupt_batch(part / "00000000000000000000.log", 2)
    shutil.rmtree(live / "_schemas-0")  # only this partition's verdict counts
    report = _load(live, status=preflight.ACKNOWLEDGED_LOST)
    p = _partition(report, "docker-connect-configs-0")
    d = p["discarded"]
    assert p["log_end_offset"] == base and d["high_watermark"] == 10
    assert d["truncated_records"] == 10 - base and d["offsets_lost"] == [base, 10]
    assert d["verdict"] == "acknowledged" and d["bytes_truncated"] == 1950 - position


def test_a_cut_above_the_high_watermark_is_discarded_but_not_acknowledged(live):
    part = live / "docker-connect-configs-0"
    base, _ = _corrupt_batch(part / "00000000000000000000.log", 2)
    _set_hw(live, "docker-connect-configs", 0, base)  # nothing past the damaged batch acknowledged
    shutil.rmtree(live / "_schemas-0")
    report = _load(live, status=preflight.UNACKNOWLEDGED_LOST)
    d = _partition(report, "docker-connect-configs-0")["discarded"]
    assert d["verdict"] == "unacknowledged" and d["truncated_records"] == 10 - base
    assert report["restart"]["acknowledged_records_lost"] == 0


def test_no_high_watermark_means_every_discarded_record_counts(live):
    part = live / "docker-connect-configs-0"
    _corrupt_batch(part / "00000000000000000000.log", 2)
    (live / preflight.HW_CHECKPOINT).unlink()
    report = _load(live, status=preflight.ACKNOWLEDGED_LOST)
    d = _partition(report, "docker-connect-configs-0")["discarded"]
    assert d["high_watermark"] is None and d["verdict"] == "acknowledged" and d["acknowledged_records_lost"] > 0


def test_a_partition_that_fails_its_load_means_the_broker_would_not_start(live):
    (live / "not_a_partition").mkdir()
    report = _load(live, status=preflight.WOULD_NOT_START)
    assert report["startup_error"] and report["restart"]["exit_status"] == 5


def test_a_file_not_copied_gives_no_clean_verdict(shared_dir, tmp_path):
    clean = tmp_path / "clean"
    shutil.copytree(shared_dir / "real-data" / ITU / "clean-2f57540f" / "kafka-data", clean)
    os.mkfifo(clean / "_schemas-0" / "stray.fifo")
    report = _load(clean, status=preflight.INCOMPLETE)
    assert _partition(report, "_schemas-0")["not_copied"] == ["stray.fifo"]


def test_truncated_records_are_counted_from_the_operators_files(tmp_path):
    """`framed_records` counts the batches that can be framed in what was cut, whatever their CRC."""
    from model.records import build_batch_v2

    raw = b"".join(build_batch_v2(o * 3, [(0, None, b"v")] * 3) for o in range(4))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw + bytes(40))  # zero padding frames nothing
    assert preflight.framed_records(str(path), 0) == (12, 12)
    one = len(build_batch_v2(0, [(0, None, b"v")] * 3))
    assert preflight.framed_records(str(path), 2 * one) == (6, 12)
    assert preflight.framed_records(str(path), len(raw)) == (0, None)


def test_a_full_tmpdir_is_said_as_such_with_no_verdict(live, tmp_path):
    """TMPDIR on a 1 MiB tmpfs and a bigger dir: the private copy does not fit; that is the host's
    fault — one line saying so, exit 2, nothing about the broker."""
    small = tmp_path / "small-tmp"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        with open(live / "_schemas-0" / "00000000000000000001.log", "wb") as f:
            f.write(os.urandom(2 << 20))  # data extents beyond 1 MiB
        done = subprocess.run(
            [KLC, "load", str(live)], capture_output=True, text=True, env={**os.environ, "TMPDIR": str(small)}
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert "did not fit in TMPDIR" in done.stderr and "no verdict about the broker" in done.stderr
        assert "STARTUP FAILS" not in done.stdout + done.stderr and "NOT LOADED" not in done.stdout + done.stderr
        assert os.listdir(small) == []  # and the partial copy is removed
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_usage_errors_are_one_line_with_status_2(tmp_path):
    for args in (
        ["load", "/nonexistent"],
        ["load"],
        ["dump", "--bogus", "x"],
        ["replay"],
        ["matrix", "--release", "x"],
    ):
        result = subprocess.run([KLC, *args], capture_output=True, text=True)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.splitlines()) == 1 and result.stdout == "", (args, result.stderr)


def test_a_load_error_names_the_file(tmp_path):
    """A transaction marker whose records do not decode (its CRC right): the partition's error
    names the segment, not only the byte position."""
    from model.records import encode_batch_v2

    data = tmp_path / "d"
    part = data / "__transaction_state-31"
    part.mkdir(parents=True)
    raw = encode_batch_v2(records_count=1, last_offset_delta=0, transactional=True, control=True, producer_id=5,
                          producer_epoch=0, payload=b"\x02\x00\x00\x00\x00\x00", base_timestamp=0, max_timestamp=0)  # fmt: skip
    (part / "00000000000000000000.log").write_bytes(raw)
    (data / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    report = _load(data, status=preflight.WOULD_NOT_START)
    error = _partition(report, "__transaction_state-31")["error"]
    assert error.startswith(f"{part}/00000000000000000000.log: byte position 0: InvalidRecordException"), error


def test_a_fifo_named_like_a_segment_is_never_opened(tmp_path):
    """The pre-flight reads the operator's segments; a FIFO among them would block a reader
    forever: it is not opened, and the report is incomplete (exit 1)."""
    part = tmp_path / "d" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"")
    os.mkfifo(part / "00000000000000000005.log")
    done = subprocess.run([KLC, "load", "--json", str(tmp_path / "d")], capture_output=True, text=True, timeout=120)
    assert done.returncode == preflight.INCOMPLETE, done.stderr
    assert json.loads(done.stdout)["partitions"][0]["discarded"]["deleted_segments"] == []


def _dir_with_a_deleted_partition(root: Path) -> str:
    """A data dir whose t-0 was deleted (asyncDelete: renamed -delete) and which the broker left
    before the deletion, with a `.lock` as a broker leaves it; t-1 stays."""
    from conformance import scenario as sc
    from conformance.targets.impl_target import ImplTarget

    steps = [
        {"op": "create"}, {"op": "create", "partition": 1},
        {"op": "append", "batches": [{"records": [{"timestamp": 1700000000000, "value": "v"}]}] * 2},
        {"op": "append", "partition": 1, "batches": [{"records": [{"timestamp": 1700000000000, "value": "v"}]}]},
        {"op": "delete_partition"},
    ]  # fmt: skip
    scenario = sc.Scenario.from_json({"format": "klc-scenario", "version": 1, "config": {}, "steps": steps})
    target = ImplTarget(scenario, backend="os", root=str(root))
    target.open()
    renamed = [target.apply(s) for s in scenario.steps][-1]["renamed"]
    target.halt()
    (root / "d0" / ".lock").write_bytes(b"")
    return renamed


def test_a_deleted_partitions_dir_is_reported_queued_not_served(tmp_path):
    """§2.3 rule 2, §6.2 step 6: the load finds t-0.<id>-delete, loads it without recovery and
    queues it for deletion; the report names it so and serves only t-1; the `.lock` is no partition."""
    renamed = _dir_with_a_deleted_partition(tmp_path)
    report = _load(tmp_path / "d0", status=0)
    deleted = _partition(report, renamed)
    assert (deleted["kind"], deleted["error"], deleted["topic"], deleted["partition"]) == ("delete", None, "t", 0)
    assert deleted["recovered_segments"] == [] and "segments" not in deleted  # never recovered, not served
    assert _partition(report, "t-1")["recovered_segments"] == [0]
    assert [p["name"] for p in report["partitions"]] == [renamed, "t-1"]
    text = CliRunner().invoke(main, ["load", str(tmp_path / "d0")]).output
    assert f"{renamed}: a deleted partition's directory (t-0): loaded without recovery and queued" in text


def _dir_with_future_and_stray_replicas(root: Path) -> tuple[str, str]:
    """A data dir left by a crash (no clean-shutdown marker) whose t-0 was then set aside as a
    stray replica and whose t-1 has a future replica beside it (a KIP-113 copy not yet promoted)."""
    from conformance import scenario as sc
    from conformance.targets.impl_target import ImplTarget

    steps = [
        {"op": "create"}, {"op": "create", "partition": 1},
        {"op": "append", "batches": [{"records": [{"timestamp": 1700000000000, "value": "v"}]}] * 2},
        {"op": "append", "partition": 1, "batches": [{"records": [{"timestamp": 1700000000000, "value": "v"}]}]},
    ]  # fmt: skip
    scenario = sc.Scenario.from_json({"format": "klc-scenario", "version": 1, "config": {}, "steps": steps})
    target = ImplTarget(scenario, backend="os", root=str(root))
    target.open()
    for s in scenario.steps:
        target.apply(s)
    target.halt()
    stray, future = f"t-0.{'a' * 32}-stray", f"t-1.{'b' * 32}-future"
    os.rename(root / "d0" / "t-0", root / "d0" / stray)
    shutil.copytree(root / "d0" / "t-1", root / "d0" / future)
    return stray, future


def test_future_and_stray_replicas_are_reported_loaded_not_served(tmp_path):
    """§2.3 rule 2, Kafka 4.4.0's LogManager.loadLog: a -stray dir is loaded whole (here recovered:
    the broker crashed) and held by nothing; a -future dir is loaded as its partition's future log,
    apart from the current t-1, which is served.  The report names each kind."""
    stray, future = _dir_with_future_and_stray_replicas(tmp_path)
    report = _load(tmp_path / "d0", status=0)
    s, f, current = _partition(report, stray), _partition(report, future), _partition(report, "t-1")
    assert (s["kind"], s["error"], s["topic"], s["partition"]) == ("stray", None, "t", 0)
    assert (f["kind"], f["error"], f["topic"], f["partition"]) == ("future", None, "t", 1)
    assert s["recovered_segments"] == [0] and "segments" not in s and "segments" not in f
    assert "kind" not in current and current["log_end_offset"] == 1
    text = CliRunner().invoke(main, ["load", str(tmp_path / "d0")]).output
    assert f"{stray}: a stray replica's directory (" in text and "recovered segment(s) 0" in text
    assert f"{future}: a future replica's directory (" in text


def test_a_dir_a_running_process_holds_is_loaded_with_no_verdict(live):
    """A broker up on the dir holds its .lock (a POSIX record lock, as Kafka's FileChannel.tryLock
    takes it), and Kafka refuses to start on a dir another process has locked: klc load reports the
    copy, names the holder, and answers status 5."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.lockf(f, fcntl.LOCK_EX); "
         "print('locked', flush=True); sys.stdin.read()", str(live / ".lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "locked\n"
        report = _load(live, status=preflight.WOULD_NOT_START)
        assert [d["held_by"] for d in report["dirs"]] == [holder.pid]
        text = CliRunner().invoke(main, ["load", str(live)])
        assert f"/.lock is held by process {holder.pid}" in text.output and text.exit_code == preflight.WOULD_NOT_START
    finally:
        holder.communicate("")
    report = _load(live, status=preflight.ACKNOWLEDGED_LOST)  # the lock let go: the verdict as before
    assert [d["held_by"] for d in report["dirs"]] == [None]


def test_the_lock_probe_answers_none_where_nobody_holds_a_lock(tmp_path):
    from operator_tools import dir_lock

    assert dir_lock.holder(str(tmp_path)) is None  # no .lock
    (tmp_path / ".lock").write_bytes(b"")
    assert dir_lock.holder(str(tmp_path)) is None  # a crash's leftover
    (tmp_path / ".lock").unlink()
    (tmp_path / ".lock").mkdir()
    assert dir_lock.holder(str(tmp_path)) is None  # not a regular file
    assert dir_lock.holder(str(tmp_path / "missing")) is None
