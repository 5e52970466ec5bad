"""The kafka target's cost, as ratios within one run (docs/kafka-target.md): the JVM's start, and
the same scenarios' wall time on model-vs-kafka against model-vs-impl.

    python -m benchmarks.kafka_target
"""

from __future__ import annotations

import argparse
import glob
import os
import time

from conformance.regressions import CORPORA
from conformance.runner import run
from conformance.scenario import Scenario
from conformance.targets import kafka_jvm


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(prog="python -m benchmarks.kafka_target", description=__doc__.split("\n\n")[0]).parse_args(argv)
    classpath = kafka_jvm.build()
    started = time.perf_counter()
    jvm = kafka_jvm.Jvm(classpath)
    start_s = time.perf_counter() - started
    jvm.stop()
    scenarios = [Scenario.load(p) for p in sorted(glob.glob(os.path.join(CORPORA, "log", "*.json")))]
    scenarios += [Scenario.load(p) for p in sorted(glob.glob(os.path.join(CORPORA, "crash", "*.json")))]
    kafka_jvm.shared()  # started once, as a test worker starts it
    timings = {}
    for targets in (("model",), ("model", "impl"), ("model", "kafka")):
        t0, steps = time.perf_counter(), 0
        for s in scenarios:
            steps += len(run(s, targets).results)
        timings[targets] = (time.perf_counter() - t0, steps)
    model_s = timings[("model",)][0]
    print(f"JVM start to first answer: {start_s:.2f} s")
    for targets, (secs, steps) in timings.items():
        print(
            f"{' vs '.join(targets):15} {len(scenarios)} scenarios, {steps} steps: {secs:.2f} s, "
            f"{steps / secs:.0f} steps/s, {secs / model_s:.2f}x the model alone"
        )


if __name__ == "__main__":
    main()
