"""The operator commands' edges: `klc dump DIR` dumps every file under it by kind; `klc replay`
skips JSON files that are no scenario with a note (a found case's expected.json)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

KLC = os.path.join(os.path.dirname(sys.executable), "klc")
ITU = "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions"


def _klc(*args) -> subprocess.CompletedProcess:
    return subprocess.run([KLC, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_dump_of_a_log_dir_dumps_every_file_by_kind(shared_dir, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(
        shared_dir / "real-data" / ITU / "clean-2f57540f" / "kafka-data" / "_schemas-0", data / "_schemas-0"
    )
    (data / "recovery-point-offset-checkpoint").write_text("0\n1\n_schemas 0 3\n")
    (data / "notes.txt").write_text("not Kafka's")
    done = _klc("dump", data)
    assert done.returncode == 0, done.stderr
    files = sorted(str(p) for p in data.rglob("*") if p.is_file() and p.name != "notes.txt")
    headers = [line.removeprefix("Dumping ") for line in done.stdout.splitlines() if line.startswith("Dumping ")]
    assert headers == files  # sorted, one header per file
    assert done.stderr.strip() == f"klc dump: note: {data / 'notes.txt'}: not a kind of file klc dump knows, skipped"
    assert "topic: _schemas partition: 0 offset: 3" in done.stdout
    as_json = _klc("dump", "--json", data)
    assert {json.loads(line)["file"] for line in as_json.stdout.splitlines()} == set(files)
    named = _klc("dump", data / "notes.txt")  # named on its own, it is refused: exit 1
    assert named.returncode == 1 and "not a kind of file" in named.stderr


def test_replay_skips_what_is_not_a_scenario_with_a_note():
    case = sorted(glob.glob("corpora/found/*/expected.json"))[0]
    folder = os.path.dirname(case)
    done = _klc("replay", *sorted(glob.glob(f"{folder}/*.json")))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"klc replay: note: {case}: not a scenario" in done.stderr and done.stdout.startswith("PASS ")
    alone = _klc("replay", case)
    assert alone.returncode == 2 and "nothing replayed" in alone.stderr
    # a file that claims to be a scenario and is not a valid one is still an error
    broken = _klc("replay", "pyproject.toml")
    assert broken.returncode == 2 and "not JSON" in broken.stderr
