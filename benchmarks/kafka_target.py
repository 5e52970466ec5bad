"""The kafka target's cost, as ratios within one run (docs/kafka-target.md): the JVM's start, and
the same scenarios' wall time on model-vs-kafka against model-vs-impl.

    python -m benchmarks.kafka_target [--scenarios N]
"""

from __future__ import annotations

import argparse
import time

from conformance.regressions import cases
from conformance.runner import run
from conformance.scenario import Scenario
from conformance.targets import kafka_jvm

RUNS = (("model",), ("model", "impl"), ("model", "kafka"))


def corpus_scenarios(limit: int | None = None) -> list[Scenario]:
    """The log and crash corpora's scenarios, in name order (the first ``limit`` of them)."""
    return [c.scenario for group in ("log", "crash") for c in cases(group=group)][:limit]


def measure(limit: int | None = None) -> dict:
    """The JVM's start to its first answer, then each run of :data:`RUNS` over the same scenarios in
    one process, one after another, with one shared JVM as a test worker has it."""
    classpath = kafka_jvm.build()
    started = time.perf_counter()
    jvm = kafka_jvm.Jvm(classpath)
    start_s = time.perf_counter() - started
    jvm.stop()
    scenarios = corpus_scenarios(limit)
    kafka_jvm.shared()
    runs = {}
    for targets in RUNS:
        t0, steps = time.perf_counter(), 0
        for s in scenarios:
            steps += len(run(s, targets).results)
        secs = time.perf_counter() - t0
        runs[" vs ".join(targets)] = {"seconds": secs, "steps": steps, "steps_per_s": steps / secs}
    model_s = runs["model"]["seconds"]
    for r in runs.values():
        r["over_model"] = r["seconds"] / model_s
    kafka, impl_ = runs["model vs kafka"], runs["model vs impl"]
    return {"jvm_start_s": start_s, "scenarios": len(scenarios), "runs": runs,
            "kafka_over_impl_steps_per_s": kafka["steps_per_s"] / impl_["steps_per_s"]}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.kafka_target", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", type=int, help="only the first N scenarios (default: all 168-odd)")
    args = p.parse_args(argv)
    if args.scenarios is not None and args.scenarios < 1:
        p.error("--scenarios must be at least 1")
    r = measure(args.scenarios)
    print(f"JVM start to first answer: {r['jvm_start_s']:.2f} s")
    for name, x in r["runs"].items():
        print(
            f"{name:15} {r['scenarios']} scenarios, {x['steps']} steps: {x['seconds']:.2f} s, "
            f"{x['steps_per_s']:.0f} steps/s, {x['over_model']:.2f}x the model alone"
        )
    print(f"(model + kafka) / (model + impl), steps a second: {r['kafka_over_impl_steps_per_s']:.2f}")


if __name__ == "__main__":
    main()
