"""Kafka's own I/O captured (conformance.kafka_io), as ratios within one run: the kafka target's
steps per second with capture on against off over the same scenarios (corpora/log, up to their
first fault step, each begun by an ``open`` as the runner begins it), the journal's operations per
step, and on one scenario the journal against an independent ``strace`` of a JVM started under it
(counts of the calls that change files under the target's root).  ``capture()`` also keeps each
step's storage as it began (for a crash at any operation inside it); ``apply`` with capture on
only carries the journal forward.

    python -m benchmarks.kafka_io [--release 2.8.2]
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import stat
import tempfile
import time

from conformance import kafka_io
from conformance import scenario as sc
from conformance.regressions import CORPORA
from conformance.targets import kafka_jvm
from conformance.targets.kafka import KafkaTarget, Unsupported

WITNESS = "roll-on-segment-bytes.json"
ROUNDS = 3  # the scenario the journal is compared with a raw trace on


def _steps(scenario: sc.Scenario) -> list[sc.Step]:
    out = [sc.Open()]
    for step in scenario.steps:
        if step.runs_as in ("fault", "disk"):
            break
        out.append(step)
    return out


def _run(scenario: sc.Scenario, release: str | None, capture: bool, ops=None, points: bool = False):
    """(steps applied, seconds) of ``scenario``'s steps on a fresh kafka target, its construction
    (with capture, a JVM of its own) not counted; a scenario the release cannot run: none."""
    try:
        target = KafkaTarget(scenario, release=release, capture=capture)
    except Unsupported:
        return 0, 0.0
    n, started = 0, time.perf_counter()
    try:
        for step in _steps(scenario):
            try:
                target.capture(step) if points else target.apply(step)
            except Unsupported:
                break
            n += 1
            if ops is not None and target.last_capture is not None:
                ops["steps"] += 1
                ops["operations"] += target.last_capture.operations
                ops.update(target.last_capture.summary())
        return n, time.perf_counter() - started
    finally:
        target.close()


def throughput(release: str | None) -> None:
    scenarios = [sc.Scenario.load(p) for p in sorted(glob.glob(os.path.join(CORPORA, "log", "*.json")))]
    ops: collections.Counter = collections.Counter()
    timings = {}
    for capture in (False, True):  # both JVMs started and warm
        _run(scenarios[0], release, capture)
    modes = {"capture off": (False, False), "capture on, apply": (True, False), "capture on, capture()": (True, True)}
    for rounds in range(ROUNDS):  # the best of ROUNDS rounds, modes interleaved (a shared machine)
        for mode, (capture, points) in modes.items():
            steps = secs = 0.0
            for s in scenarios:
                counted = ops if mode == "capture on, apply" and rounds == 0 else None
                n, t = _run(s, release, capture, counted, points)
                steps, secs = steps + n, secs + t
            if mode not in timings or secs < timings[mode][1]:
                timings[mode] = (steps, secs)
    off_n, off_s = timings["capture off"]
    print(f"kafka{':' + release if release else ''}: {len(scenarios)} scenarios of corpora/log, best of {ROUNDS} rounds")
    for mode, (n, secs) in timings.items():
        print(f"  {mode:22} {n:.0f} steps, {secs:.2f} s, {n / secs:.1f} steps/s ({secs / n / (off_s / off_n):.1f}x the time per step)")
    kinds = ", ".join(f"{k} {v / ops['steps']:.2f}" for k, v in sorted(ops.items()) if k not in ("steps", "operations"))
    print(f"  journal operations per step: {ops['operations'] / ops['steps']:.2f} ({kinds})")


def _java_under_strace(trace: str) -> str:
    """A directory whose ``java`` runs the real one under ``strace -f`` writing ``trace``."""
    folder = tempfile.mkdtemp(prefix="klc-raw-strace-")
    java = os.path.join(folder, "java")
    real = kafka_jvm.shutil.which("java")
    with open(java, "w") as f:
        f.write(f'#!/bin/sh\nexec strace -f -qq -y -xx -s 64 -e trace={kafka_io.SYSCALLS} -o {trace} {real} "$@"\n')
    os.chmod(java, os.stat(java).st_mode | stat.S_IXUSR)
    return folder


def raw_counts(trace: str, root: str) -> collections.Counter:
    """Per kind, the calls of the raw trace that changed something under ``root``."""
    parser, out = kafka_io.Parser(), collections.Counter()
    root = os.path.realpath(root)
    with open(trace) as f:
        for line in f:
            call = parser.feed(line)
            if call is None or call.failed:
                continue
            paths = [kafka_io.fd_path(a)[1] or "" for a in call.args if "<" in a]
            paths += [kafka_io.decode(a).decode("utf-8", "replace") for a in call.args if a.startswith('"')]
            if not any(p.startswith(root + "/") for p in paths) and call.name not in ("msync",):
                continue
            if call.name in ("fsync", "fdatasync"):
                path = kafka_io.fd_path(call.args[0])[1]
                out["fsync of a directory" if os.path.isdir(path) else "fsync of a file"] += 1
            elif call.name in ("rename", "renameat", "renameat2", "unlink", "unlinkat", "mkdir", "mkdirat", "ftruncate"):
                out[call.name.removesuffix("at").removesuffix("at2")] += 1
            elif call.name in ("write", "pwrite64", "writev", "pwritev", "pwritev2") and call.number() > 0:
                out["write"] += 1
    return out


def journal_counts(ops: collections.Counter) -> collections.Counter:
    return collections.Counter(
        {
            "fsync of a file": ops["Fsync"] - ops["msync"],
            "fsync of a directory": ops["FsyncDir"],
            "rename": ops["Rename"],
            "unlink": ops["Unlink"],
            "mkdir": ops["MakeDir"],
            "ftruncate": ops["Truncate"] - ops["O_TRUNC"],
            "write": ops["WriteAt"],  # the pages mappings changed are PageWrite, not counted here
        }
    )


def equality(release: str | None) -> None:
    """The journal of WITNESS against a raw strace of a JVM that ran the same steps untraced by us."""
    scenario = sc.Scenario.load(os.path.join(CORPORA, "log", WITNESS))
    ops: collections.Counter = collections.Counter()
    target = KafkaTarget(scenario, release=release, capture=True)
    try:
        for step in _steps(scenario):
            target.apply(step)
            for e in target.last_capture.applied:
                ops[type(e).__name__] += 1
        ops["msync"] = target.io.translator.calls["msync"]
        ops["O_TRUNC"] = target.io.translator.calls["O_TRUNC"]
    finally:
        target.close()
    trace = tempfile.mktemp(prefix="klc-raw-", suffix=".trace")
    folder = _java_under_strace(trace)
    classpath = kafka_jvm.build_for(release)
    old = kafka_jvm._SHARED.pop(classpath, None)
    if old is not None:
        old.stop()
    path = os.environ["PATH"]
    os.environ["PATH"] = folder + os.pathsep + path
    try:  # the process's shared JVM, started by the java above: capture off, strace from its start
        target = KafkaTarget(scenario, release=release, capture=False)
        try:
            for step in _steps(scenario):
                target.apply(step)
            time.sleep(0.5)  # strace's last lines
            raw = raw_counts(trace, target.root)
        finally:
            target.close()
    finally:
        os.environ["PATH"] = path
        kafka_jvm._SHARED.pop(classpath).stop()
    ours = journal_counts(ops)
    print(f"{WITNESS}: calls under the root, raw strace of the whole JVM vs the journal's operations")
    for kind in sorted(set(raw) | set(ours)):
        mark = "=" if raw[kind] == ours[kind] else "DIFFERS"
        print(f"  {kind:22} raw {raw[kind]:4}  journal {ours[kind]:4}  {mark}")
    os.unlink(trace)


def start_cost(release: str | None) -> None:
    """A captured target's own JVM against the shared one's (already running)."""
    scenario = sc.Scenario(())
    kafka_jvm.shared(None, release)
    times = {}
    for capture in (False, True):
        started = time.perf_counter()
        KafkaTarget(scenario, release=release, capture=capture).close()
        times[capture] = time.perf_counter() - started
    print(f"  a target's construction: {times[False]:.2f} s on the shared JVM, {times[True]:.2f} s with capture (a JVM of its own, traced)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kafka_io", description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", default=None, help="a Kafka release with an adapter (default: the pinned one)")
    args = parser.parse_args(argv)
    equality(args.release)
    throughput(args.release)
    start_cost(args.release)


if __name__ == "__main__":
    main()
