"""``klc mutate-kafka``'s cost on the suite's side, as a ratio within one run (docs/kafka-mutation.md):
the same mutants judged with a JVM and a patched jar per mutant, and hot-swapped into one live
JVM, alternating mutant by mutant so both see the same machine; the verdicts must agree.

    python -m benchmarks.kafka_mutation OUT [--class OffsetIndex] [--mutants 12] [--max-cases 4]

OUT is a ``klc mutate-kafka --out`` folder whose PIT report of the class and baseline exist.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from conformance.kafka_mutation import hot_swap, pit, suite


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kafka_mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--class", dest="clazz", default="OffsetIndex")
    parser.add_argument("--mutants", type=int, default=12)
    parser.add_argument("--max-cases", type=int, default=4)
    args = parser.parse_args(argv)
    out = Path(args.out)
    classpath, _tests, agent = pit.build_module(pit.PINNED)
    jars = list(pit.kafka_jars(classpath, pit.PINNED))
    with open(out / "baseline.json", encoding="utf-8") as f:
        base = json.load(f)
    mutants = pit.mutants(out / "pit" / pit.CLASSES.get(args.clazz, args.clazz))
    chosen = [m for m in mutants if suite.covering(m, base)][:: max(1, len(mutants) // args.mutants)][: args.mutants]
    work = str(out / "work")
    os.makedirs(work, exist_ok=True)
    task = {"kafka_jars": jars, "work": work, "agent": str(agent), "max_cases": args.max_cases}
    cold_s = hot_s = 0.0
    cases = {"cold": 0, "hot": 0}
    disagree = []
    for m in chosen:
        t = time.perf_counter()
        cold = suite.judge(m, base, jars, work, args.max_cases)
        cold_s += time.perf_counter() - t
        t = time.perf_counter()
        hot = hot_swap.judge(m, base, task)
        hot_s += time.perf_counter() - t
        cases["cold"] += cold["cases_run"]
        cases["hot"] += hot["cases_run"]
        if (cold["suite_status"], cold["witness_case"]) != (hot["suite_status"], hot["witness_case"]):
            disagree.append((m.id, cold["suite_status"], hot["suite_status"]))
        print(f"{m.id}: cold {cold['suite_status']}, hot {hot['suite_status']}", file=sys.stderr)
    n = len(chosen)
    print(f"{n} mutants of {args.clazz}, at most {args.max_cases} covering cases each ({cases['cold']} / {cases['hot']} cases run)")
    print(f"JVM per mutant: {cold_s:.1f} s, {3600 * n / cold_s:.0f} mutants/hour")
    print(f"hot swap:       {hot_s:.1f} s, {3600 * n / hot_s:.0f} mutants/hour ({cold_s / hot_s:.2f}x)")
    print(f"verdicts that differ: {disagree or 'none'}")


if __name__ == "__main__":
    main()
