"""``klc load`` on every broker data dir under ``../shared/real-data`` (preallocated indexes restored
into a copy as its README says): each partition's figures match what the files say — checkpoints,
segment files, the last batch of each log — the README's facts hold, the data dir is left unchanged,
and for the smaller dirs the model's loader (a pure function of the image) agrees.

Expectations come from the files (read here with the model's batch iterator and a plain checkpoint
parse) and from the README, never from the loader's own output."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.cli import main
from model.config import Config
from model.file_records import iterate_file
from model.log_manager import load as model_load

pytestmark = pytest.mark.realdata

ITU = "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions"
MSC = "mscaldas2012__kafka-connect-spooldir/kafka-data"


def _tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = hashlib.sha1(p.read_bytes()).hexdigest() + f":{p.stat().st_mtime_ns}"
    return out


def _checkpoint(path: Path) -> dict[tuple[str, int], int]:
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


@pytest.fixture(scope="module")
def data_dirs(shared_dir, tmp_path_factory) -> dict[str, Path]:
    real = shared_dir / "real-data"
    out = {"itu-clean": real / ITU / "clean-2f57540f" / "kafka-data"}
    for name, dataset in (("itu-live", f"{ITU}/live-aec5bda1/kafka-data"), ("msc", MSC)):
        dest = tmp_path_factory.mktemp(name) / "kafka-data"
        subprocess.run(
            [sys.executable, str(real / "materialize_prealloc.py"), dataset, "--out", str(dest)],
            cwd=real, check=True, capture_output=True,
        )  # fmt: skip
        out[name] = dest
    return out


def _expected(data_dir: Path) -> dict[str, dict]:
    """Per partition dir: what a broker's load must report, from the files themselves."""
    clean = (data_dir / ".kafka_cleanshutdown").exists()
    recovery_points = _checkpoint(data_dir / "recovery-point-offset-checkpoint")
    log_starts = _checkpoint(data_dir / "log-start-offset-checkpoint")
    out = {}
    for part in sorted(p for p in data_dir.iterdir() if p.is_dir()):
        topic, _, partition = part.name.rpartition("-")
        if topic == "__cluster_metadata":
            continue
        logs = sorted(part.glob("*.log"))
        segments = []
        for log in logs:
            data = log.read_bytes()
            it = iterate_file(data)
            segments.append((int(log.name[:20]), len(data), len(it.batches), it))
        last = segments[-1][3].batches if segments else ()
        leo = last[-1].header().last_offset + 1 if last else (segments[-1][0] if segments else 0)
        tp = (topic, int(partition))
        rp = leo if clean else min(recovery_points.get(tp, 0), leo)
        out[part.name] = {
            "topic": topic,
            "partition": int(partition),
            "log_end_offset": leo,
            "recovery_point": rp,
            "log_start_offset": max(log_starts.get(tp, 0), segments[0][0] if segments else 0),
            "segments": [{"base_offset": b, "size": n, "batches": k} for b, n, k, _ in segments],
        }
    return out


def _load(*dirs: Path, target: str = "impl", status: int = 0) -> dict:
    result = CliRunner().invoke(main, ["load", "--json", "--count-batches", "--target", target, *map(str, dirs)])
    assert result.exit_code == status, result.output
    return json.loads(result.output)


# the live dir's `_schemas-0` has a high watermark (42) above its log end (41): acknowledged data lost
STATUS = {"itu-clean": 0, "itu-live": 4, "msc": 0}


def _load_as_the_files_say(data_dir: Path, target: str, status: int) -> tuple[dict, bool]:
    """``klc load`` on ``target``: the dir left unchanged, every partition as its files say;
    the report, and whether the dir had a clean shutdown."""
    before = _tree_digest(data_dir)
    report = _load(data_dir, target=target, status=status)
    assert _tree_digest(data_dir) == before, f"klc load --target {target} modified the data dir"
    expected = _expected(data_dir)
    got = {p["name"]: p for p in report["partitions"]}
    assert set(got) == set(expected)
    for part, want in expected.items():
        assert got[part]["error"] is None, got[part]
        assert {k: got[part][k] for k in want} == want, part
        assert got[part]["truncated_bytes"] == 0  # these logs have no torn tail
    clean = (data_dir / ".kafka_cleanshutdown").exists()
    assert report["dirs"][0]["clean_shutdown"] is clean
    return report, clean


# msc's 56 partitions, the largest dir: nightly (the model's load of it was the gate's fifth-longest
# test, 10-12 s); the two itu dirs, a clean and a killed broker's, keep both loads in the gate
_LARGEST = pytest.param("msc", marks=pytest.mark.slow)


@pytest.mark.parametrize("name", ["itu-clean", "itu-live", _LARGEST])  # msc's Kafka load: 12-15 s
def test_kafkas_own_load_reports_what_the_files_say(data_dirs, name):
    """``klc load --target kafka``: Kafka 4.4.0's own loader on a private copy — what a broker of
    that release does with this dir on restart — reports what the files say, as impl's does."""
    report, clean = _load_as_the_files_say(data_dirs[name], "kafka", STATUS[name])
    assert report["kafka"] == "4.4.0"
    assert all(not p["recovered_segments"] for p in report["partitions"]) == clean


@pytest.mark.parametrize("name", ["itu-clean", "itu-live", "msc"])
def test_load_reports_what_the_files_say_and_leaves_the_dir_alone(data_dirs, name):
    report, clean = _load_as_the_files_say(data_dirs[name], "impl", STATUS[name])
    if clean:  # nothing recovered; of the logs only the active segments' tails after their last index entry
        assert all(not p["recovered_segments"] for p in report["partitions"])
        assert report["load"]["log_bytes_read"] <= sum(p["segments"][-1]["size"] for p in report["partitions"])


def test_the_readme_facts_about_recovery_points(data_dirs):
    """README: mscaldas2012 — recovery point < log end on 7 partitions (test10-0: 0 vs 8); the live
    ItumelengMogase snapshot — recovery points behind the log end."""
    msc = {p["name"]: p for p in _load(data_dirs["msc"])["partitions"]}
    behind = sorted(n for n, p in msc.items() if p["recovery_point"] < p["log_end_offset"])
    assert len(behind) == 7 and (msc["test10-0"]["recovery_point"], msc["test10-0"]["log_end_offset"]) == (0, 8)
    live = _load(data_dirs["itu-live"], status=STATUS["itu-live"])["partitions"]
    assert any(p["recovery_point"] < p["log_end_offset"] for p in live)
    assert all(p["recovered_segments"] for p in live), "after an unclean shutdown every active segment is recovered"


def _image(data_dir: Path) -> tuple[dict[str, bytes], set[str]]:
    files, dirs = {}, set()
    for dirpath, subdirs, names in os.walk(data_dir):
        rel = os.path.relpath(dirpath, data_dir)
        base = "d0" if rel == "." else f"d0/{rel}"
        dirs |= {f"{base}/{s}" for s in subdirs}
        for n in names:
            files[f"{base}/{n}"] = (Path(dirpath) / n).read_bytes()
    return files, dirs


@pytest.mark.parametrize("name", ["itu-clean", "itu-live", _LARGEST])
def test_the_model_loader_agrees(data_dirs, name):
    """The live snapshots were taken from running (or killed) brokers: the model predicts which
    segments a restart recovers, what it truncates, and the resulting offsets (§5.6, §6.2)."""
    image, dirs = _image(data_dirs[name])
    manager = model_load(image, ["d0"], Config.of(), lambda: 0, lambda p, b: 0, dirs)
    report = {p["name"]: p for p in _load(data_dirs[name], status=STATUS[name])["partitions"]}
    assert {o.name for o in manager.outcomes} == set(report)
    for outcome in manager.outcomes:
        got = report[outcome.name]
        assert (outcome.error, outcome.recovered, outcome.truncated_bytes) == (
            got["error"], got["recovered_segments"], got["truncated_bytes"],
        ), outcome.name  # fmt: skip
    for (topic, partition), pf in manager.partitions.items():
        got = report[f"{topic}-{partition}"]
        log = pf.log
        assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (
            got["log_start_offset"], got["log_end_offset"], got["recovery_point"],
        )  # fmt: skip
        assert [s.base_offset for s in log.segments] == [s["base_offset"] for s in got["segments"]]
        assert [list(e) for e in log.epochs] == got["leader_epochs"]


def test_a_bad_partition_dir_fails_the_startup_and_every_one_is_reported(tmp_path):
    """Kafka's startup ends at a name it cannot parse, before any load of that dir (§2.3, §6.2):
    the report says so, names every bad dir (an operator fixes them all before a restart) and the
    partitions that did not load, in the dirs the user named."""
    data = tmp_path / "data"
    for name in ("good-0", "not_a_partition", "also-bad-x"):
        (data / name).mkdir(parents=True)
    (data / "good-0" / "00000000000000000000.log").write_bytes(b"")
    report = _load(data, status=5)  # a startup that fails: the broker would not start
    assert "not in the form of topic-partition" in report["startup_error"]
    by_name = {p["name"]: p for p in report["partitions"]}
    assert "the startup failed at" in by_name["good-0"]["error"] and "log_end_offset" not in by_name["good-0"]
    assert str(data) in by_name["good-0"]["error"] and "klc-load-" not in by_name["good-0"]["error"]
    for bad in ("not_a_partition", "also-bad-x"):
        assert bad in by_name[bad]["error"] and "not in the form of topic-partition" in by_name[bad]["error"]
    assert sorted(os.listdir(data)) == ["also-bad-x", "good-0", "not_a_partition"]


def test_load_usage_errors(tmp_path):
    result = CliRunner().invoke(main, ["load", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "does not exist" in result.output and len(result.output.splitlines()) == 1
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["load", str(tmp_path / "empty")])
    assert result.exit_code == 1 and "empty: no partition directories" in result.output
    partition = tmp_path / "d" / "t-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000000.log").write_bytes(b"")
    result = CliRunner().invoke(main, ["load", str(partition)])
    assert result.exit_code == 1 and "a partition directory? give its parent" in result.output
    result = CliRunner().invoke(main, ["load", "--json", str(tmp_path / "d"), str(tmp_path / "d") + "/"])
    assert result.exit_code == 1 and "the same directory as" in result.output
    assert len(json.loads(result.output)["partitions"]) == 1
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    result = CliRunner().invoke(main, ["load", str(tmp_path / "other")])
    assert result.exit_code == 1 and "not a Kafka log dir" in result.output
    result = CliRunner().invoke(main, ["load", "--config", "segment.bytes=1", str(tmp_path)])
    assert result.exit_code == 2 and "segment.bytes" in result.output
