"""Campaign throughput: scenarios per second per core, Spark local mode against a plain local process
pool running the same tasks (the same seeds, so the same scenarios) — DESIGN.md "Performance".

``python -m benchmarks.campaign [--cores N] [--tasks T] [--examples E] [--json]``

Figures, each measured within one run:

* **scenarios/s/core** for each executor, over the fuzz stage only (both pools started and warmed
  with one task per core first: Spark's JVM and Python workers, the pool's forked processes);
* **Spark / processes**: the ratio of those rates (target ≥ 0.8 at 2 cores);
* **startup**: seconds to a ready, warmed executor (Spark session vs process pool), reported beside.

Rounds alternate the contenders and the best round of each is kept, as everywhere in benchmarks/.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import attrs

from conformance.campaign.driver import _Processes, _Spark, _task_row, java_problem
from conformance.campaign.tasks import Task


def _tasks(first_seed: int, n: int, examples: int, steps: int) -> list[dict]:
    return [attrs.asdict(Task("bench", s, "all", "impl", examples, steps)) for s in range(first_seed, first_seed + n)]


def measure(cores: int, tasks: int, examples: int, steps: int, rounds: int) -> dict:
    problem = java_problem()
    if problem:
        raise SystemExit(f"benchmarks.campaign: {problem}")
    warm = _tasks(10_000, cores, 2, steps)
    t0 = time.perf_counter()
    procs = _Processes(cores)  # forked (and warmed) before the JVM and Py4J threads exist
    procs.map(_task_row, warm, lambda _k: None)
    procs_start = time.perf_counter() - t0
    t0 = time.perf_counter()
    spark = _Spark(f"local[{cores}]")
    spark.map(_task_row, warm, lambda _k: None)
    spark_start = time.perf_counter() - t0
    try:
        best: dict[str, float] = {}
        scenarios = 0
        for _ in range(rounds):
            batch = _tasks(0, tasks, examples, steps)
            for name, ex in (("spark", spark), ("processes", procs)):
                t0 = time.perf_counter()
                rows = ex.map(_task_row, batch, lambda _k: None)
                seconds = time.perf_counter() - t0
                scenarios = sum(r["scenarios"] for r in rows)
                best[name] = min(best.get(name, float("inf")), seconds)
    finally:
        spark.stop()
        procs.stop()
    rate = {k: scenarios / v / cores for k, v in best.items()}
    return {
        "cores": cores,
        "cpu_count": os.cpu_count(),
        "tasks": tasks,
        "examples_per_task": examples,
        "scenarios": scenarios,
        "seconds": {k: round(v, 2) for k, v in best.items()},
        "scenarios_per_s_per_core": {k: round(v, 2) for k, v in rate.items()},
        "spark_over_processes": round(rate["spark"] / rate["processes"], 3),
        "startup_s": {"spark": round(spark_start, 2), "processes": round(procs_start, 3)},
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.campaign", description=__doc__.split("\n\n")[0])
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="executor cores (default: all)")
    p.add_argument("--tasks", type=int, default=16, help="tasks per round (16)")
    p.add_argument("--examples", type=int, default=20, help="scenarios per task (20)")
    p.add_argument("--steps", type=int, default=40, help="steps per scenario at most (40)")
    p.add_argument("--rounds", type=int, default=2, help="rounds per contender; the best is kept (2)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    figures = measure(a.cores, a.tasks, a.examples, a.steps, a.rounds)
    if a.json:
        print(json.dumps(figures))
        return
    rate = figures["scenarios_per_s_per_core"]
    print(f"campaign throughput, {figures['scenarios']} scenarios per round on {a.cores} cores:", file=sys.stdout)
    print(f"  spark local      {rate['spark']:8.2f} scenarios/s/core  ({figures['seconds']['spark']} s)")
    print(f"  process pool     {rate['processes']:8.2f} scenarios/s/core  ({figures['seconds']['processes']} s)")
    print(f"  spark/processes  {figures['spark_over_processes']:8.3f}   (target >= 0.8)")
    print(f"  startup          spark {figures['startup_s']['spark']} s, pool {figures['startup_s']['processes']} s")


if __name__ == "__main__":
    main()
