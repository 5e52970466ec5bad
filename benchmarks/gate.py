"""The conformance gate as CI runs it: ``bash .ci/run`` on a fresh clone, timed (issue #35).

    python -m benchmarks.gate [--repo .] [--shared ../shared] [--workdir DIR] [--top 25] [--json OUT]

Clones ``--repo`` (its committed HEAD: what CI checks out) into a new directory with ``shared``
linked beside it, runs ``CI=true bash .ci/run`` there with ``KLC_TEST_TIMES`` set (tests/conftest.py
then records every test phase's duration), and reports:

* the wall time of the whole run — setup included — against the gate's budget (600 s on the
  2-core machine, issue #35), and how much of it was setup (the run less its pytest sessions);
* each pytest session's own summary line (the gate runs one);
* the slowest tests (setup, call and teardown summed), the time per test file, and the mutant
  checks' times, slowest first.

Exits with ``.ci/run``'s status, so a failing gate is never reported as a figure alone.  The clone,
the run's output (``ci.log``) and the durations (``times.jsonl``) stay in the work dir.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

BUDGET_S = 600  # issue #35: the gate in 10 minutes on 2 cores, setup included
MUTANT_CHECK = "tests/test_mutants.py::test_mutant_is_caught["
SUMMARY = re.compile(r"^=+ (.*\b(?:passed|failed|error|errors|skipped|deselected)\b.* in [0-9.]+s.*) =+$")
SESSION_SECONDS = re.compile(r" in ([0-9.]+)s")


def clone(repo: str, shared: str, workdir: str) -> str:
    """A fresh clone of ``repo``'s HEAD at ``workdir/main``, ``shared`` linked at ``workdir/shared``."""
    main = os.path.join(workdir, "main")
    subprocess.run(["git", "clone", "-q", repo, main], check=True)
    os.symlink(os.path.abspath(shared), os.path.join(workdir, "shared"))
    return main


def run_gate(main: str, times: str, log: str) -> tuple[int, float]:
    """``CI=true bash .ci/run`` in ``main``, its output to ``log``; (exit status, wall seconds)."""
    env = {**os.environ, "CI": "true", "KLC_TEST_TIMES": times}
    env.pop("HYPOTHESIS_PROFILE", None)  # the gate's own (tox sets ci)
    t0 = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        rc = subprocess.run(["bash", ".ci/run"], cwd=main, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    return rc, time.monotonic() - t0


def read_times(path: str) -> dict[str, float]:
    """Seconds per test, its phases summed; a line that is not one test phase's record is an error."""
    per_test: dict[str, float] = collections.defaultdict(float)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                record = json.loads(line)
                per_test[record["test"]] += float(record["seconds"])
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"{path}:{number}: not a test-duration record ({e})") from None
    return dict(per_test)


def sessions(log: str) -> list[str]:
    """The summary line of each pytest session in the run's output, in order."""
    with open(log, encoding="utf-8", errors="replace") as f:
        return [m.group(1) for line in f if (m := SUMMARY.match(line.strip()))]


def summarise(rc: int, wall: float, per_test: dict[str, float], summaries: list[str], top: int) -> dict[str, Any]:
    by_file: dict[str, float] = collections.defaultdict(float)
    for test, seconds in per_test.items():
        by_file[test.split("::", 1)[0]] += seconds
    mutants = {t[len(MUTANT_CHECK) : -1]: s for t, s in per_test.items() if t.startswith(MUTANT_CHECK)}
    tested = sum(float(m.group(1)) for line in summaries if (m := SESSION_SECONDS.search(line)))
    return {
        "exit_status": rc,
        "wall_s": wall,
        "budget_s": BUDGET_S,
        "setup_s": wall - tested if summaries else None,
        "sessions": summaries,
        "tests": len(per_test),
        "test_seconds": sum(per_test.values()),
        "slowest": sorted(per_test.items(), key=lambda kv: -kv[1])[:top],
        "by_file": sorted(by_file.items(), key=lambda kv: -kv[1]),
        "mutant_checks": sorted(mutants.items(), key=lambda kv: -kv[1]),
    }


def render(r: dict[str, Any], top: int) -> str:
    verdict = "passed" if r["exit_status"] == 0 else f"FAILED (exit {r['exit_status']})"
    setup = "" if r["setup_s"] is None else f", setup {r['setup_s']:.0f} s"
    lines = [
        f"bash .ci/run on a fresh clone: {verdict} in {r['wall_s']:.0f} s{setup}; "
        f"budget {r['budget_s']} s ({r['wall_s'] / r['budget_s']:.2f} x)",
        *(f"  pytest: {s}" for s in r["sessions"]),
        f"{r['tests']} tests, {r['test_seconds']:.0f} test-seconds (summed over workers)",
        "",
        f"slowest {top} tests:",
        *(f"  {s:8.1f} s  {t}" for t, s in r["slowest"]),
        "",
        "by file:",
        *(f"  {s:8.1f} s  {f}" for f, s in r["by_file"]),
        "",
        f"mutant checks ({len(r['mutant_checks'])}, {sum(s for _, s in r['mutant_checks']):.0f} s), slowest first:",
        *(f"  {s:8.1f} s  {m}" for m, s in r["mutant_checks"][:top]),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gate", description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", default=".", help="the git repository to clone (its HEAD; default .)")
    p.add_argument(
        "--shared", default=None, help="the shared folder to link beside the clone (default: $KLC_SHARED or ../shared)"
    )
    p.add_argument(
        "--workdir", default=None, help="an empty or missing dir for the clone (default: a new temporary one)"
    )
    p.add_argument("--top", type=int, default=25, help="how many of the slowest tests and mutant checks to list (25)")
    p.add_argument("--json", metavar="OUT", help="also write the figures as JSON to OUT")
    args = p.parse_args(argv)
    shared = args.shared or os.environ.get("KLC_SHARED") or os.path.join(os.path.abspath(args.repo), "..", "shared")
    if not os.path.isdir(os.path.join(shared, "real-data")):
        p.error(f"--shared {shared}: no real-data folder there")
    if args.workdir and os.path.exists(args.workdir) and os.listdir(args.workdir):
        p.error(f"--workdir {args.workdir}: not empty")
    workdir = args.workdir or tempfile.mkdtemp(prefix="klc-gate-")
    os.makedirs(workdir, exist_ok=True)
    try:
        main_dir = clone(args.repo, shared, workdir)
    except subprocess.CalledProcessError as e:
        print(f"git clone of {args.repo} failed (exit {e.returncode})", file=sys.stderr)
        return 2
    times, log = os.path.join(workdir, "times.jsonl"), os.path.join(workdir, "ci.log")
    print(f"running bash .ci/run in {main_dir} (output: {log}) ...", file=sys.stderr, flush=True)
    rc, wall = run_gate(main_dir, times, log)
    r = summarise(rc, wall, read_times(times), sessions(log), args.top)
    print(render(r, args.top))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
