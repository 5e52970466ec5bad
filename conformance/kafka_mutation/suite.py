"""This suite against one mutant of Kafka's classes: the corpus cases, then the crash machine.

The stock release is run once first (:func:`baseline`): every candidate case's verdict, and with
the method-coverage agent (``kafka-mutation``'s ``MethodCoverage``) in the adapter's JVM, which of
Kafka's methods the case ran, one JVM per case.  A mutant changes one method's body, so only the
cases that ran that method can tell it apart (a mutant of a static initialiser or of a method no
case entered by name: every case that entered its class).  Each such case is replayed on the
mutant build (:mod:`.mutant_build`); the first whose verdict differs from the stock release's
kills the mutant and is its witness.  None does: the crash machine (model against the mutant),
derandomised with a fixed number of examples, whose stock run passed; a violation kills it.

A mutant build the JVM cannot run (a class that fails to verify, the JVM dying) is a harness
error, never killed; a mutant that makes Kafka hang past the answer timeout is ``timed_out``
(as PIT counts a test run that hangs), reported apart."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time

from conformance import regressions
from conformance.kafka_mutation import mutant_build, pit
from conformance.kafka_mutation.pit import Mutant, MutationError
from conformance.targets import kafka_jvm
from conformance.targets.kafka_jvm import KafkaTargetError

KILLED, SURVIVED, NO_COVERAGE, TIMED_OUT, HARNESS = "killed", "survived", "no_coverage", "timed_out", "harness_error"
# the packages whose methods the coverage agent records (LogManager is Scala's kafka.log in 4.1-4.3)
PREFIXES = ("org.apache.kafka.storage.internals.", "org.apache.kafka.server.common.CheckpointFile", "kafka.log.")
MUTANT_ANSWER_TIMEOUT_S = 60.0  # a stock step answers in well under a second: a mutant past this hangs
MACHINE_EXAMPLES = 10


def target_of(release: str) -> str:
    return f"kafka:{release}"


def candidate_cases(release: str, only: tuple[str, ...] = ()) -> list:
    """The corpus cases judged on the release: those recording a verdict for it, and those of the
    pinned adapter's line (``kafka``), whose stock verdict on this release the baseline measures;
    a case with a ``race`` step (real threads: its verdict is drawn) is left out.  ``only``: the
    cases whose names (``log/roll-on-segment-bytes.json``) start with one of these."""
    out = []
    for case in regressions.cases():
        if only and not case.name.startswith(only):
            continue
        if target_of(release) not in case.verdicts and "kafka" not in case.verdicts:
            continue
        if any(getattr(s, "op", None) == "race" or type(s).__name__ == "Race" for s in case.scenario.steps):
            continue
        out.append(case)
    return out


@contextlib.contextmanager
def build_env(classpath: str, agent_options: str | None = None, answer_timeout: float | None = None):
    """The kafka target of this process judges ``classpath`` (``KLC_KAFKA_CLASSPATH``), its JVMs
    started with ``agent_options``; every JVM is stopped on leaving (its coverage written)."""
    saved = {k: os.environ.get(k) for k in (kafka_jvm.BUILD_VARIABLE, "KLC_KAFKA_JVM_OPTIONS")}
    saved_timeout = kafka_jvm.ANSWER_TIMEOUT_S
    running = kafka_jvm.shared_classpaths()  # another build's JVM (a hot-swap one) is left alone
    os.environ[kafka_jvm.BUILD_VARIABLE] = classpath
    if agent_options:
        os.environ["KLC_KAFKA_JVM_OPTIONS"] = agent_options
    else:
        os.environ.pop("KLC_KAFKA_JVM_OPTIONS", None)
    if answer_timeout is not None:
        kafka_jvm.ANSWER_TIMEOUT_S = answer_timeout
    try:
        yield
    finally:
        kafka_jvm.stop_shared(keep=running)
        kafka_jvm.ANSWER_TIMEOUT_S = saved_timeout
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def prefixes_for(classes: list[str]) -> tuple[str, ...]:
    """What the coverage agent records: the log layer (:data:`PREFIXES`) and any mutated class
    outside it (a class of another Kafka jar), so the cases that run it are known."""
    return PREFIXES + tuple(sorted(c for c in classes if not c.startswith(PREFIXES)))


def _agent_options(agent: str, coverage_file: str, prefixes: tuple[str, ...] = PREFIXES) -> str:
    return f"-javaagent:{agent}=coverage:{coverage_file},{','.join(prefixes)}"


def _read_coverage(path: str) -> list[str]:
    """The methods the agent wrote (it creates the file as the JVM starts): none when no JVM
    started (a case whose first step the target refused to express runs no Kafka code)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return sorted(line.strip() for line in f if line.strip())


def stock_classpath(release: str) -> str:
    return os.pathsep.join(kafka_jvm.release_build(release).jars)


def baseline(
    release: str, agent: str, cache: str, machine_examples: int = MACHINE_EXAMPLES, progress=print, only: tuple[str, ...] = (),
    prefixes: tuple[str, ...] = PREFIXES,
) -> dict:
    """The stock release's verdict and method coverage (of the classes under ``prefixes``) per
    candidate case, and the crash machine's outcome and coverage; kept in ``cache`` (JSON): the
    cases' part keyed by the release's jar digest, the prefixes and the cases' contents, the
    machine's by its budget, so a rerun redoes only what changed."""
    cases = candidate_cases(release, only)
    if not cases:
        raise MutationError(f"no corpus case of Kafka {release} is named {' or '.join(only)}...")
    build = kafka_jvm.release_build(release)
    key = hashlib.sha256(f"{build.digest}\n".encode())
    if prefixes != PREFIXES:  # the log layer's own key stays what baselines kept before had
        key.update(("\0".join(prefixes) + "\n").encode())
    for case in cases:
        with open(case.path, "rb") as f:
            key.update(case.name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    key = key.hexdigest()
    out = {"key": key, "release": release, "digest": build.digest, "cases": {}, "machine": None}
    if os.path.exists(cache):
        with open(cache, encoding="utf-8") as f:
            kept = json.load(f)
        if kept.get("key") == key:
            out = kept
    changed = False
    with tempfile.TemporaryDirectory(prefix="klc-coverage-") as tmp:
        for i, case in enumerate(cases):
            if case.name in out["cases"]:
                continue  # kept from an interrupted baseline
            changed = True
            cov = os.path.join(tmp, f"{i}.txt")
            began = time.monotonic()
            with build_env(stock_classpath(release), _agent_options(agent, cov, prefixes)):
                violation = regressions.replay(case, target_of(release))
            out["cases"][case.name] = {
                "path": os.path.relpath(case.path, regressions.CHECKOUT), "verdict": regressions.verdict_of(violation),
                "witness": None if violation is None else str(violation), "methods": _read_coverage(cov),
                "seconds": round(time.monotonic() - began, 2),
            }  # fmt: skip
            progress(f"baseline: {i + 1}/{len(cases)} {case.name}: {out['cases'][case.name]['verdict']}")
            _keep(cache, out)
        if (out["machine"] or {}).get("examples", 0) != machine_examples:
            changed = True
            out["machine"] = None
            if machine_examples > 0:
                cov = os.path.join(tmp, "machine.txt")
                began = time.monotonic()
                with build_env(stock_classpath(release), _agent_options(agent, cov, prefixes)):
                    witness = run_machine(target_of(release), machine_examples)
                out["machine"] = {
                    "examples": machine_examples, "witness": witness, "methods": _read_coverage(cov),
                    "seconds": round(time.monotonic() - began, 2),
                }  # fmt: skip
                progress(f"baseline: crash machine ({machine_examples} examples): {'pass' if witness is None else witness}")
    if changed:
        _keep(cache, out)
    return out


def _keep(cache: str, value: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(cache)), exist_ok=True)
    with open(cache + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f)
    os.replace(cache + ".tmp", cache)


def run_machine(target: str, examples: int) -> str | None:
    """The crash machine, model against ``target``, derandomised (the same draws on every build)
    for ``examples`` examples, not shrunk: the first violation's witness, or None."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from conformance.crash_machine import make_crash_machine
    from conformance.properties import PropertyViolation

    machine = make_crash_machine("sim", ("model", target))
    chosen = settings(
        max_examples=examples, database=None, deadline=None, derandomize=True, stateful_step_count=30,
        phases=[Phase.generate], suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    try:
        run_state_machine_as_test(machine, settings=chosen)
    except PropertyViolation as e:
        return _one_line(f"{type(e).__name__}: {e}")
    except KafkaTargetError:
        raise
    except Exception as e:  # noqa: BLE001 — any other failure of the machine on the mutant is a difference
        return _one_line(f"{type(e).__name__}: {e}")
    return None


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def covering(mutant: Mutant, base: dict) -> list[str]:
    """The baseline's cases that ran the mutant's method (a static initialiser's mutant, or a
    method entered by no case under its name: every case that entered its class), the quickest
    first."""
    quickest = sorted(base["cases"].items(), key=lambda kv: (kv[1]["seconds"], kv[0]))
    if mutant.method != "<clinit>":
        hit = [name for name, c in quickest if mutant.signature in c["methods"]]
        if hit:
            return hit
    enclosing = _enclosing(mutant)
    if enclosing is not None:
        # javac's lambda$NAME$N runs only through the lambda object NAME's invokedynamic makes, so a
        # case (one JVM) can run it only if it ran NAME
        hit = [name for name, c in quickest if any(m.startswith(enclosing) for m in c["methods"])]
        if hit:
            return hit
    prefix = mutant.clazz + "."
    return [name for name, c in quickest if any(m.startswith(prefix) for m in c["methods"])]


def _enclosing(mutant: Mutant) -> str | None:
    """``class.NAME(`` for a mutant of javac's ``lambda$NAME$N`` (``new``: a constructor); None
    for any other method, or a lambda of a static initialiser."""
    parts = mutant.method.split("$")
    if len(parts) != 3 or parts[0] != "lambda" or parts[1] == "static":
        return None
    return f"{mutant.clazz}.{'<init>' if parts[1] == 'new' else parts[1]}("


def machine_covers(mutant: Mutant, base: dict) -> bool:
    machine = base.get("machine")
    if not machine or machine["witness"] is not None:
        return False  # a machine the stock release fails tells no mutant apart
    return mutant.signature in machine["methods"] or (
        mutant.method == "<clinit>" and any(m.startswith(mutant.clazz + ".") for m in machine["methods"])
    )


def judge(mutant: Mutant, base: dict, kafka_jars: list[str], work: str, max_cases: int | None = None) -> dict:
    """This suite's outcome on ``mutant``, in a JVM of its own on a patched copy of the one of
    ``kafka_jars`` that holds its class: status (killed,
    survived, no_coverage, timed_out, harness_error), the witness (the case, its verdict and what
    differed; or the machine's violation), the cases run and the seconds."""
    began = time.monotonic()
    cases, machine = covering(mutant, base), machine_covers(mutant, base)
    row = {"suite_status": NO_COVERAGE, "witness_case": None, "witness": None, "cases_run": 0, "covering_cases": len(cases)}
    if not cases and not machine:
        return row | {"suite_seconds": round(time.monotonic() - began, 2)}
    folder = tempfile.mkdtemp(prefix="klc-mutant-", dir=work)
    try:
        patched = mutant_build.patched_jar(pit.jar_of(mutant.clazz, kafka_jars), mutant, folder)
        classpath = mutant_build.mutant_classpath(kafka_jvm.release_build(base["release"]).jars, patched)
        with build_env(classpath, answer_timeout=MUTANT_ANSWER_TIMEOUT_S):
            row |= run_cases(cases[:max_cases], machine, base)
    finally:
        mutant_build.remove(folder)
    return row | {"suite_seconds": round(time.monotonic() - began, 2)}


def run_cases(cases: list[str], machine: bool, base: dict) -> dict:
    """The cases on the kafka target as it stands (the mutant in Kafka's place), stopping at the
    first whose verdict differs from the stock release's; then the machine.  Kafka throwing where
    the runner expected an answer (``KafkaRefusal`` out of a step) is a difference too; a dead or
    hung JVM and any other failure are not a verdict."""
    from conformance.targets.kafka import KafkaRefusal

    target = target_of(base["release"])
    by_name = {c.name: c for c in regressions.cases()}
    out = {"suite_status": SURVIVED, "cases_run": 0}
    name = None
    try:
        for name in cases:
            out["cases_run"] += 1
            violation = regressions.replay(by_name[name], target)
            verdict, stock = regressions.verdict_of(violation), base["cases"][name]["verdict"]
            if verdict != stock:
                witness = f"{verdict}, stock {stock}" + (f": {violation}" if violation is not None else "")
                return out | {"suite_status": KILLED, "witness_case": name, "witness": _one_line(witness)}
        name = "crash machine"
        if machine:
            witness = run_machine(target, base["machine"]["examples"])
            if witness is not None:
                return out | {"suite_status": KILLED, "witness_case": name, "witness": witness}
    except KafkaRefusal as e:
        return out | {"suite_status": KILLED, "witness_case": name, "witness": _one_line(f"Kafka threw {e}, stock did not")}
    except KafkaTargetError as e:
        timed_out = "no answer to" in str(e) and "within" in str(e)
        kafka_jvm.stop_shared()
        return out | {"suite_status": TIMED_OUT if timed_out else HARNESS, "witness_case": name, "witness": _one_line(str(e))}
    except Exception as e:  # noqa: BLE001 — reported as the harness's failure, never a kill
        kafka_jvm.stop_shared()
        return out | {"suite_status": HARNESS, "witness_case": name, "witness": _one_line(f"{type(e).__name__}: {e}")}
    return out


