"""How fast the state machines find each mutant without being pointed at it (time to catch).

For every mutant in ``tests/mutants`` and each of ``--seeds`` seeds, the state machine that drives its
module — the crash state machine (log operations plus every fault family, simulated backend, 40
steps) for the whole impl stack, the index machine for ``impl.index``, the file-records machine for
``impl.file_records`` (a 17-byte tail no broker operation tells apart) — runs with the CI profile's
settings (no shrinking, no database) and the seed, until the first property violation or until
``--budget`` seconds.  Reported per mutant: examples and seconds to the first failure (median and
worst over the seeds), and in how many seeds it was found.  A mutant not found within the budget
is a gap in the strategies; one missed by the first two seeds is not run on the others.

    python -m benchmarks.time_to_catch [--seeds 10] [--budget 60] [--examples N] [--jobs 2] [--only NAME ...] [--json OUT]

A name ``kafka:BUGGY..FIXED`` (e.g. ``kafka:2.1.0..2.1.1``) is a row for a Kafka
release instead of a mutant: the crash machine, model against release BUGGY (docs/kafka-target.md;
``kafka-io:BUGGY..FIXED`` with Kafka's own I/O captured, so a power loss may be cut from its journal),
not pointed at any case.  BUGGY differs from the model in more than its bug (every later fix, and
what changed by design), so each violation is replayed on FIXED, the release that fixed the bug: one
FIXED shows alike is looked past as a known finding is, and the search goes on with a fresh seed
until one FIXED does not show; ``kafka:BUGGY..FIXED@WITNESS`` looks instead for a violation whose
witness matches the regular expression WITNESS (a bug whose witness names it, as KAFKA-9156's race
does), looking past every other.  No control row runs beside release rows alone.

Seconds are wall-clock on this machine and depend on it; examples do not.  ``--examples`` caps every
cell at N examples as well: two strategies compared at the same number of examples, on a machine of
any speed or with other work beside them (the issue's budget stays 60 seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import run_state_machine_as_test


class _OutOfBudget(BaseException):
    """Raised from inside the machine when the budget is spent (not an Exception: Hypothesis lets
    it through instead of reporting a failure)."""


CONTROL_NAME = "(impl, no mutant)"


class _Control:
    """The real impl on the crash machine: a control row — anything it finds is a finding against
    impl (or the model), and would make every mutant look caught."""

    name, module = CONTROL_NAME, "impl"

    @staticmethod
    def load():
        raise AssertionError("the control has no mutant module")


CONTROL = _Control()


# The mutants the time-to-catch goal (median <= 10 s, max <= 60 s on every seed) is held on: these,
# timed since the goal was set (corpora/README.md "Time to catch"), and every mutant a state
# machine is the named check for (goal_mutants).  A mutant gated by a case pointed at it is not held
# to the goal; the machines finding it unpointed is measured with --only.
TIMED_SINCE_THE_GOAL = (
    "checkpoint-in-place", "checkpoint-rename-without-fsync", "cleaned-to-swap-ascending", "crc-range-off-by-one",
    "eager-index-sanity-check", "epoch-checkpoint-loaded-as-read", "fetch-reads-the-live-log-end",
    "invalid-swap-greater-than", "lazy-index-without-lock", "legacy-last-offset-wrong-field",
    "marker-before-checkpoints", "marker-kept-until-loaded", "negative-base-named-like-python",
    "originals-deleted-before-every-swap", "read-next-offset-checks-crc", "read-past-declared-size",
    "recovery-indexes-base-offset", "recovery-point-to-leo-after-unclean", "recovery-starts-after-rp-segment",
    "retention-by-mtime", "roll-ignores-an-unsound-full-index", "roll-one-batch-late",
    "roll-refuses-empty-active-segment", "segment-deletes-unsynced-lowest-first", "seventeen-byte-tail-is-corrupt",
    "split-drops-last-batch", "swap-completion-deletes-the-segment-before", "swap-segment-recovered-at-load",
    "time-index-sanity-accepts-zero-last-timestamp", "time-index-sanity-check-at-load",
    "torn-middle-keeps-later-segments", "trim-keeps-one-extra-entry", "truncate-cut-unsynced",
    "truncate-keeps-target-batch", "truncation-lookups-by-kafkas-max", "unproven-indexes-trusted",
    "warm-section-bound-off-by-one",
)


def goal_mutants() -> list[str]:
    from tests.mutants import ALL_MUTANTS

    by_a_machine = {n for n, m in ALL_MUTANTS.items() if any(c.endswith("-machine") for c in m.caught_by)}
    return sorted(by_a_machine | set(TIMED_SINCE_THE_GOAL))


MODULE_MACHINES = {"impl.index": "index machine", "impl.file_records": "file-records machine"}


RELEASE = "kafka:"
CAPTURED = "kafka-io:"  # a release row whose crashes may also be cut from Kafka's own journal


class _Release:
    """A Kafka release as a row (``kafka:BUGGY..FIXED[@WITNESS]``): the crash machine against BUGGY.
    With ``@WITNESS`` (a regular expression, e.g. ``@KAFKA-9156``: the race's witness names it) the
    bug is the first violation whose witness matches, and every other is looked past; without, the
    first the fix release does not share."""

    module = "kafka"

    def __init__(self, name: str):
        self.name = name
        self.capture = name.startswith(CAPTURED)
        releases, _, pattern = name.removeprefix(CAPTURED).removeprefix(RELEASE).partition("@")
        self.buggy, _, self.fixed = releases.partition("..")
        self.witness = re.compile(pattern) if pattern else None
        self.target = RELEASE + self.buggy

    def is_the_bug(self, error) -> bool:
        """Whether a violation BUGGY showed is the bug looked for (see the class docstring)."""
        if self.witness is not None:
            return self.witness.search(str(error.violation)) is not None
        return not self.shared(error)

    def fixed_passes(self, violation_text: str) -> bool | None:
        """Whether the release that fixed the bug passes the scenario BUGGY failed (None: no
        scenario in the violation, or no fixed release named)."""
        verdict = self._on_fixed(violation_text)
        return None if verdict is None else verdict.ok

    def shared(self, error) -> bool:
        """Whether FIXED fails BUGGY's failing scenario as BUGGY did (the same signature, at that
        step or before): a difference of BUGGY's that the fix did not change, so not the bug."""
        from conformance.campaign.tasks import violation_signature

        verdict = self._on_fixed(str(error))
        if verdict is None or not verdict.violations:
            return False
        mine, theirs = error.violation, verdict.violations[0]
        return theirs.step < mine.step or violation_signature(theirs) == violation_signature(mine)

    def _on_fixed(self, violation_text: str):
        from conformance import scenario as sc
        from conformance.runner import run

        line = next((x for x in violation_text.splitlines() if x.startswith("scenario: ")), None)
        if line is None or not self.fixed:
            return None
        scenario = sc.Scenario.from_json(json.loads(line.removeprefix("scenario: ")))
        return run(scenario, ("model", RELEASE + self.fixed))


def machine_kind(mutant) -> str:
    if isinstance(mutant, _Release):
        return "crash machine"
    return MODULE_MACHINES.get(mutant.module, "crash machine")


def _machine(mutant, budget: float, counter: dict, examples: int | None = None):
    from conformance import profiles  # noqa: F401 — registers the ci profile
    from conformance.crash_machine import make_crash_machine
    from conformance.file_records_machine import make_file_records_machine
    from conformance.index_machine import make_index_machine

    if machine_kind(mutant) == "index machine":
        base, steps = make_index_machine(mutant.load()), 30
    elif machine_kind(mutant) == "file-records machine":
        base, steps = make_file_records_machine(mutant.load()), 30
    elif isinstance(mutant, _Release):
        base, steps = make_crash_machine("sim", ("model", mutant.target), capture=mutant.capture), 40
    else:
        base, steps = make_crash_machine("sim"), 40
    deadline = time.perf_counter() + budget

    class Timed(base):
        def __init__(self):
            if time.perf_counter() > deadline or (examples is not None and counter["examples"] >= examples):
                raise _OutOfBudget
            counter["examples"] += 1
            super().__init__()

    ci = settings.get_profile("ci")
    return Timed, settings(
        ci, max_examples=10**6, derandomize=False, database=None, deadline=None, stateful_step_count=steps,
        phases=[Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False,
    )  # fmt: skip


def _violation_in(raised: BaseException, kind: type):
    """The property violation a machine reported: ``raised`` itself, or the first in an exception
    group (Hypothesis reports a failure it could not reproduce — a race on real threads — as a
    flaky one, grouping what it saw)."""
    if isinstance(raised, kind):
        return raised
    for inner in getattr(raised, "exceptions", ()):
        found = _violation_in(inner, kind)
        if found is not None:
            return found
    return None


def measure_one(name: str, seed_value: int, budget: float, examples: int | None = None) -> dict:
    """One (mutant, seed): examples and seconds to the first violation, or None if not found within
    ``budget`` seconds (and ``examples`` examples, if given).  A release row looks past each
    violation the fix release shares (:meth:`_Release.shared`) and searches on, with a fresh seed,
    until one the fix release does not show: the examples and seconds count the whole search."""
    from conformance.campaign.tasks import violation_signature
    from conformance.mutants import mutant_stack
    from conformance.profiles import fresh_cases
    from conformance.properties import PropertyViolation
    from conformance.runner import looking_past
    from tests.mutants import ALL_MUTANTS

    mutant = _Release(name) if name.startswith((RELEASE, CAPTURED)) else ALL_MUTANTS.get(name, CONTROL)
    counter = {"examples": 0}
    t0 = time.perf_counter()
    found, prop, witness, fixed_passes = False, None, None, None
    shared: dict[str, str] = {}  # signature -> witness of each difference the fix release shares
    stack = mutant_stack(name if name in ALL_MUTANTS and machine_kind(mutant) == "crash machine" else None)
    if isinstance(mutant, _Release) and mutant.witness is not None:  # every other difference: judged on
        search = looking_past(lambda v: mutant.witness.search(str(v)) is None, judge_on=True)
    else:
        search = looking_past(lambda v: violation_signature(v) in shared)
    with stack, search:
        while True:
            machine, config = _machine(mutant, budget - (time.perf_counter() - t0), counter, examples)
            try:
                with fresh_cases() if machine_kind(mutant) == "crash machine" else contextlib.nullcontext():
                    run_state_machine_as_test(seed(seed_value + 1000 * len(shared))(machine), settings=config)
            except _OutOfBudget:
                pass
            except Exception as raised:  # noqa: BLE001
                e = _violation_in(raised, PropertyViolation)
                if e is None:  # not a catch (e.g. Hypothesis noticing the budget's cut as flaky generation)
                    if time.perf_counter() - t0 < budget and (examples is None or counter["examples"] < examples):
                        raise
                    break
                witness = str(e).splitlines()[0][:300] if str(e) else None
                if isinstance(mutant, _Release) and not mutant.is_the_bug(e):
                    shared[violation_signature(e.violation)] = witness
                    continue
                found, prop = True, e.prop
                if isinstance(mutant, _Release):
                    fixed_passes = mutant.fixed_passes(str(e))
            break
    return {
        "mutant": name,
        "machine": machine_kind(mutant),
        "seed": seed_value,
        "found": found,
        "property": prop,
        "examples": counter["examples"] if found else None,
        "seconds": round(time.perf_counter() - t0, 2) if found else None,
        "witness": witness if found else None,
        **(
            {"fixed_release_passes": fixed_passes, "looked_past": list(shared.values())}
            if isinstance(mutant, _Release)
            else {}
        ),
    }


def discount_control_findings(rows: list[dict]) -> list[tuple[str, int]]:
    """A mutant cell that failed, at a seed where the control (the real impl) failed too, with the
    control's witness (up to the step number) found the control's bug, not the mutant: count it
    as not found.  Returns the cells discounted."""
    control = {r["seed"]: r["witness"] for r in rows if r["mutant"] == CONTROL_NAME and r["found"]}
    tail = lambda w: (w or "").split(": ", 2)[-1][:100]  # noqa: E731 — the witness past "at step N"
    out = []
    for r in rows:
        if r["mutant"] != CONTROL_NAME and r["found"] and r["seed"] in control:
            if tail(r["witness"]) == tail(control[r["seed"]]):
                r.update(found=False, property=None, examples=None, seconds=None)
                out.append((r["mutant"], r["seed"]))
    return out


def summarise(rows: list[dict], seeds: int, budget: float) -> list[dict]:
    out = []
    for name in sorted({r["mutant"] for r in rows}):
        mine = [r for r in rows if r["mutant"] == name]
        hits = [r for r in mine if r["found"]]
        out.append(
            {
                "mutant": name,
                "machine": mine[0]["machine"],
                "found": f"{len(hits)}/{len(mine)}",
                "examples_median": statistics.median(r["examples"] for r in hits) if hits else None,
                "examples_max": max(r["examples"] for r in hits) if hits else None,
                "seconds_median": round(statistics.median(r["seconds"] for r in hits), 1) if hits else None,
                "seconds_max": max(r["seconds"] for r in hits) if hits else None,
                "properties": sorted({r["property"] for r in hits}),
                # release rows: in how many of the hits the fix release passed the scenario
                "fix": f"{sum(1 for r in hits if r.get('fixed_release_passes'))}/{len(hits)}"
                if "fixed_release_passes" in mine[0]
                else None,
                "gap": len(hits) < len(mine),
            }
        )
    return out


def table(summary: list[dict], budget: float) -> str:
    lines = [
        "| mutant | machine | found | examples (median / max) | seconds (median / max) | property |",
        "|---|---|---|---|---|---|",
    ]
    for s in summary:
        if s["examples_median"] is None:
            lines.append(f"| `{s['mutant']}` | {s['machine']} | {s['found']} | — | > {budget:.0f} | — |")
            continue
        fix = f" (fix release passes {s['fix']})" if s.get("fix") else ""
        lines.append(
            f"| `{s['mutant']}` | {s['machine']} | {s['found']} | {s['examples_median']:g} / {s['examples_max']} "
            f"| {s['seconds_median']} / {s['seconds_max']} | {', '.join(s['properties'])}{fix} |"
        )
    return "\n".join(lines)


def measure(names: list[str], seeds: int, budget: float, jobs: int, examples: int | None = None):
    """Every (name, seed) cell, ``jobs`` at a time: the rows (each printed to stderr as it ends), the
    summary per name and the cells counted as not found because they found the control's bug."""
    rows: list[dict] = []
    with ProcessPoolExecutor(jobs) as pool:
        # two seeds first; a mutant missed by both is a gap already, so its other seeds are skipped
        first = min(2, seeds)
        for wave in ([(n, s) for n in names for s in range(first)], None):
            if wave is None:
                hit = {r["mutant"] for r in rows if r["found"]} | {CONTROL_NAME}
                wave = [(n, s) for n in names if n in hit for s in range(first, seeds)]
            if not wave:
                continue
            cells = ([n for n, _ in wave], [s for _, s in wave], [budget] * len(wave), [examples] * len(wave))
            for row in pool.map(measure_one, *cells):
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    discounted = discount_control_findings(rows)
    if discounted:
        print(f"counted as not found (the control's witness): {discounted}", file=sys.stderr)
    return rows, summarise(rows, seeds, budget), discounted


def meets_goal(s: dict, seeds: int, median_s: float = 10.0, max_s: float = 60.0) -> bool:
    """A summary row caught on every seed, within a median of ``median_s`` and a worst of ``max_s``
    seconds (the time-to-catch goal, benchmarks/README.md)."""
    return (
        s["found"] == f"{seeds}/{seeds}"
        and s["seconds_median"] is not None
        and s["seconds_median"] <= median_s
        and s["seconds_max"] <= max_s
    )


def main(argv=None) -> int:
    from tests.mutants import ALL_MUTANTS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per (mutant, seed)")
    parser.add_argument("--examples", type=int, help="also stop each (mutant, seed) after this many examples")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="mutant names (default: all)")
    parser.add_argument("--json", help="write the rows and the summary here")
    args = parser.parse_args(argv)
    only = args.only or sorted(ALL_MUTANTS)
    names = only if all(n.startswith((RELEASE, CAPTURED)) for n in only) else [CONTROL_NAME, *only]
    unknown = [n for n in only if n not in ALL_MUTANTS and not n.startswith((RELEASE, CAPTURED))]
    if (
        unknown
        or args.seeds < 1
        or args.budget <= 0
        or args.jobs < 1
        or (args.examples is not None and args.examples < 1)
    ):
        parser.error(
            f"unknown mutants: {', '.join(unknown)}" if unknown else "--seeds, --budget, --examples, --jobs must be > 0"
        )
    rows, summary, discounted = measure(names, args.seeds, args.budget, args.jobs, args.examples)
    print(table(summary, args.budget))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "seeds": args.seeds,
                    "budget": args.budget,
                    "examples": args.examples,
                    "rows": rows,
                    "summary": summary,
                    "discounted": discounted,
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
