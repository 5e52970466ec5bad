"""Every speed goal's figure in one run, beside its goal and, where Kafka does the same job, Kafka's.

    python -m benchmarks.goals [--quick] [--skip SECTION ...] [--seeds N] [--budget S] [--jobs N] [--json OUT]

One command for the table of benchmarks/README.md ("The goals"); each section is another module's
own measurement, run with the parameters its README section names, so a figure here is that
module's figure:

* ``recover`` (``benchmarks.vs_kafka``): impl's recovery over one ``crc32c`` call on the same bytes,
  and Kafka 4.4.0's ``LogSegment.recover`` over impl's, at 1 KiB, 16 KiB and 1 MiB batches, without
  and with producer ids;
* ``load`` (``benchmarks.vs_kafka``): Kafka's own load over ``klc load``'s of a crashed dir on tmpfs,
  200 partitions of 2 × 0.25 MiB segments, and 2,000 tiny partitions (2 × 32 KiB);
* ``stateful`` (``benchmarks.stateful``): the log and crash machines' steps a second over a toy
  machine's, under the same generation policy;
* ``kafka-target`` (``benchmarks.kafka_target``): model-vs-kafka's steps a second over
  model-vs-impl's on the log and crash corpora;
* ``time-to-catch`` (``benchmarks.time_to_catch``): how many of the mutants the goal is held on
  (``time_to_catch.goal_mutants``) the state machines find on every seed within a median of 10 s
  and a worst of 60 s, not pointed at any.

Ratios are per interleaved pair (min and median) where a module pairs its runs; every figure is a
ratio within this run, never a time compared across machines.  ``--quick`` runs every section
small (seconds, not the hour a full run takes: the time to catch of every mutant dominates) to show
the command works; its figures are not the goals' figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import attrs

SECTIONS = ("recover", "load", "stateful", "kafka-target", "time-to-catch")
RECOVER_SHAPES = ("1k", "1k+pid", "16k", "16k+pid", "1m", "1m+pid")


@attrs.frozen
class Figure:
    """One row: what is measured, its median and worst (``None`` where a section gives one value),
    the goal as a bound the median must reach, and what Kafka's side did where it ran."""

    name: str
    median: float | None
    worst: float | None
    goal: str
    met: bool | None
    beside_kafka: str = ""


def _at_least(value: float | None, bound: float) -> bool | None:
    return None if value is None else value >= bound


# --- sections: each returns its module's own result ----------------------------------------------


def _vs_kafka_args(argv: list[str]):
    from benchmarks import vs_kafka

    return vs_kafka.parser().parse_args(argv)


def run_recover(quick: bool) -> dict:
    from benchmarks import vs_kafka

    argv = ["--segment-mib", "1", "--repeat", "2", "--warmup", "1"] if quick else ["--repeat", "9", "--warmup", "20"]
    jvm = vs_kafka.BenchJvm("broker")
    try:
        return {"kafka": jvm.version, "figures": vs_kafka.recover_figures(jvm, _vs_kafka_args(argv))}
    finally:
        jvm.stop()


def run_load(quick: bool) -> dict:
    from benchmarks import vs_kafka

    tiny = ["--load-segment-mib", "0.03125"]  # 2 segments of 32 KiB: two 16 KiB batches each
    shapes = {"200 partitions": ["--load-partitions", "20" if quick else "200"],
              "2,000 tiny partitions": ["--load-partitions", "40" if quick else "2000", *tiny]}  # fmt: skip
    common = ["--load-repeat", "1", "--warmup", "1"] if quick else ["--load-repeat", "5", "--warmup", "5"]
    jvm = vs_kafka.BenchJvm("broker")
    try:
        return {name: vs_kafka.load_figures(jvm, _vs_kafka_args(argv + common)) for name, argv in shapes.items()}
    finally:
        jvm.stop()


def run_stateful(quick: bool) -> dict:
    from benchmarks import stateful

    return stateful.run(["toy", "log machine", "crash machine"], 2 if quick else 20, 1 if quick else 3)


def run_kafka_target(quick: bool) -> dict:
    from benchmarks import kafka_target

    return kafka_target.measure(6 if quick else None)


def run_time_to_catch(quick: bool, seeds: int, budget: float, jobs: int) -> dict:
    from benchmarks import time_to_catch
    names = ["checkpoint-in-place", "trim-keeps-one-extra-entry"] if quick else time_to_catch.goal_mutants()
    rows, summary, discounted = time_to_catch.measure([time_to_catch.CONTROL_NAME, *names], seeds, budget, jobs)
    mutants = [s for s in summary if s["mutant"] != time_to_catch.CONTROL_NAME]
    control = next(s for s in summary if s["mutant"] == time_to_catch.CONTROL_NAME)
    missed = [s for s in mutants if not time_to_catch.meets_goal(s, seeds)]
    return {"seeds": seeds, "budget": budget, "mutants": len(mutants), "meeting": len(mutants) - len(missed),
            "control_found": control["found"], "missed": missed, "discounted": discounted, "summary": summary}  # fmt: skip


# --- the table -------------------------------------------------------------------------------------


FASTER_THAN_KAFKA = 1.5  # Kafka's time over impl's on every path both take, per interleaved pair


def _kafka_over_impl(name: str, f: dict, beside: str) -> Figure:
    median = f["kafka_over_impl_median"]
    goal = f"≥ {FASTER_THAN_KAFKA}"
    return Figure(name, median, f["kafka_over_impl_min"], goal, _at_least(median, FASTER_THAN_KAFKA), beside)


def recover_figures(r: dict) -> list[Figure]:
    out = []
    for shape, bound in (("16k", 0.5), ("1k", 0.15)):
        f = r["figures"].get(shape)
        if f:
            median = f["impl_over_one_crc_call_median"]
            name = f"impl recover / one crc32c call, {shape}"
            out.append(Figure(name, median, f["impl_over_one_crc_call_min"], f"≥ {bound}", _at_least(median, bound)))
    for shape in RECOVER_SHAPES:
        f = r["figures"].get(shape)
        if f:
            beside = f"Kafka {f['kafka_ns_per_batch']:,.0f} ns a batch, impl {f['impl_ns_per_batch']:,.0f}"
            out.append(_kafka_over_impl(f"Kafka {r['kafka']} LogSegment.recover / impl's, {shape}", f, beside))
    return out


def load_figures(r: dict) -> list[Figure]:
    out = []
    for f in r.values():
        c = f["crashed"]
        beside = f"Kafka {c['kafka_median_s'] * 1e3:,.0f} ms, impl {c['impl_median_s'] * 1e3:,.0f} ms"
        name = f"crashed dir on tmpfs, {f['partitions']} partitions: Kafka's own load / klc load"
        out.append(_kafka_over_impl(name, c, beside))
    return out


def stateful_figures(r: dict) -> list[Figure]:
    from benchmarks.stateful import GOALS

    out = []
    for name, m in r["machines"].items():
        if name in GOALS:
            beside = f"{m['steps_per_s']:,.0f} steps/s, rules {m['rules_share']:.0%} of the time"
            met = _at_least(m["over_toy"], GOALS[name])
            row = Figure(f"{name} steps/s / a toy machine's", m["over_toy"], None, f"≥ {GOALS[name]}", met, beside)
            out.append(row)
    return out


def kafka_target_figures(r: dict) -> list[Figure]:
    ratio, runs = r["kafka_over_impl_steps_per_s"], r["runs"]
    kafka, impl_ = runs["model vs kafka"]["steps_per_s"], runs["model vs impl"]["steps_per_s"]
    beside = f"{kafka:.0f} against {impl_:.0f} steps/s, {r['scenarios']} scenarios"
    return [Figure("(model + kafka) steps/s / (model + impl)", ratio, None, "≥ 0.5", _at_least(ratio, 0.5), beside)]


def time_to_catch_figures(r: dict) -> list[Figure]:
    n, meeting = r["mutants"], r["meeting"]
    name = f"mutants caught on every seed within median 10 s, max 60 s ({r['seeds']} seeds)"
    beside = f"the control (impl, no mutant) found something on {r['control_found']} seeds"
    return [Figure(name, meeting, None, f"{n}/{n}", meeting == n, beside)]


FIGURES = {"recover": recover_figures, "load": load_figures, "stateful": stateful_figures,
           "kafka-target": kafka_target_figures, "time-to-catch": time_to_catch_figures}  # fmt: skip


def figures(results: dict) -> list[Figure]:
    return [f for section in SECTIONS if section in results for f in FIGURES[section](results[section])]


def _number(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:d}" if isinstance(x, int) else f"{x:.2f}"


def table(rows: list[Figure]) -> str:
    lines = ["| figure | median | worst | goal | met | beside it |", "|---|---|---|---|---|---|"]
    for f in rows:
        met = {True: "yes", False: "**no**", None: "–"}[f.met]
        lines.append(f"| {f.name} | {_number(f.median)} | {_number(f.worst)} | {f.goal} | {met} | {f.beside_kafka} |")
    return "\n".join(lines)


# --- the command -----------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.goals", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="every section small: shows the command works, not the figures")
    p.add_argument("--skip", nargs="+", choices=SECTIONS, default=[], help="leave these sections out")
    p.add_argument("--seeds", type=int, default=5, help="time to catch: seeds per mutant (5)")
    p.add_argument("--budget", type=float, default=60.0, help="time to catch: seconds per (mutant, seed) (60)")
    p.add_argument("--jobs", type=int, default=2, help="time to catch: cells at once (2)")
    p.add_argument("--json", help="also write every section's result and the table's rows here")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1 or args.budget <= 0:
        p.error("--seeds, --jobs and --budget must be > 0")
    seeds, budget = (1, 10.0) if args.quick else (args.seeds, args.budget)
    runs = {"recover": lambda: run_recover(args.quick), "load": lambda: run_load(args.quick),
            "stateful": lambda: run_stateful(args.quick), "kafka-target": lambda: run_kafka_target(args.quick),
            "time-to-catch": lambda: run_time_to_catch(args.quick, seeds, budget, args.jobs)}  # fmt: skip
    results, failed, began, load_before = {}, {}, time.perf_counter(), os.getloadavg()[0]
    for section in SECTIONS:
        if section in args.skip:
            continue
        t0 = time.perf_counter()
        print(f"goals: {section} …", file=sys.stderr, flush=True)
        try:
            results[section] = runs[section]()
        except (Exception, SystemExit) as e:  # noqa: BLE001 — a harness failure: named, the rest still run
            failed[section] = f"{type(e).__name__}: {e}"
            print(f"goals: {section} could not be measured: {failed[section]}", file=sys.stderr, flush=True)
            continue
        print(f"goals: {section} took {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    rows = figures(results)
    print(table(rows))
    print(f"\n{sum(1 for f in rows if f.met)} of {len(rows)} goals met; {time.perf_counter() - began:.0f} s, "
          f"load average {load_before:.2f} before and {os.getloadavg()[0]:.2f} after"
          f"{'; --quick: not the goals figures' if args.quick else ''}")  # fmt: skip
    for section, why in failed.items():
        print(f"NOT MEASURED: {section}: {why}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"quick": args.quick, "results": results, "not_measured": failed,
                       "rows": [attrs.asdict(r) for r in rows]}, f, indent=1, default=str)  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
