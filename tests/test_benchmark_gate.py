"""``python -m benchmarks.gate`` (issue #35 item 4): what it reads and reports, and its exit status;
the gate's own figures are not asserted (nothing timed is a test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchmarks import gate

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_test_phase_is_recorded_once_under_xdist(tmp_path):
    """tests/conftest.py's recorder writes from the controlling process only: with two workers
    each test's three phases are there once."""
    (tmp_path / "test_two.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tmp_path / "conftest.py").write_text(open(os.path.join(REPO, "tests", "conftest.py")).read())
    times = tmp_path / "times.jsonl"
    env = {**os.environ, "KLC_TEST_TIMES": str(times), "PYTHONPATH": REPO}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", str(tmp_path / "test_two.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in times.read_text().splitlines()]
    phases = sorted((r["test"].split("::")[-1], r["when"]) for r in records)
    assert phases == [(t, w) for t in ("test_a", "test_b") for w in ("call", "setup", "teardown")]
    assert set(gate.read_times(str(times))) == {"test_two.py::test_a", "test_two.py::test_b"}


def test_a_line_that_is_no_record_names_the_file_and_line(tmp_path):
    times = tmp_path / "times.jsonl"
    times.write_text('{"test": "t.py::a", "when": "call", "seconds": 1.5}\nnot json\n')
    with pytest.raises(SystemExit, match=r"times.jsonl:2: not a test-duration record"):
        gate.read_times(str(times))


def test_the_summary_sums_phases_files_and_mutant_checks():
    per_test = {
        "tests/test_x.py::test_a": 3.0,
        "tests/test_x.py::test_b": 1.0,
        "tests/test_mutants.py::test_mutant_is_caught[m-by-log-scenarios]": 5.0,
    }
    sessions = ["2 passed in 4.00s", "1 passed in 5.50s"]
    r = gate.summarise(0, 30.0, per_test, sessions, top=2)
    assert r["setup_s"] == pytest.approx(20.5)
    assert r["slowest"] == [
        ("tests/test_mutants.py::test_mutant_is_caught[m-by-log-scenarios]", 5.0),
        ("tests/test_x.py::test_a", 3.0),
    ]
    assert r["by_file"][0] == ("tests/test_mutants.py", 5.0) and r["by_file"][1] == ("tests/test_x.py", 4.0)
    assert r["mutant_checks"] == [("m-by-log-scenarios", 5.0)]
    text = gate.render(r, 2)
    assert text.startswith("bash .ci/run on a fresh clone: passed in 30 s, setup 20 s; budget 600 s (0.05 x)")


def test_a_failing_gate_exits_with_its_status(tmp_path):
    """On a repository whose .ci/run prints a pytest summary and fails: the report says FAILED and
    the exit status is the run's."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    (repo / ".ci" / "run").write_text("echo '==== 1 failed, 2 passed in 1.25s ===='\nexit 3\n")
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    shared = tmp_path / "shared"
    (shared / "real-data").mkdir(parents=True)
    out = tmp_path / "gate.json"
    rc = gate.main(["--repo", str(repo), "--shared", str(shared), "--workdir", str(tmp_path / "w"), "--json", str(out)])
    assert rc == 3
    r = json.loads(out.read_text())
    assert r["exit_status"] == 3 and r["sessions"] == ["1 failed, 2 passed in 1.25s"] and r["tests"] == 0


def test_bad_arguments_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        gate.main(["--shared", str(tmp_path)])
    assert e.value.code == 2 and "no real-data folder there" in capsys.readouterr().err
