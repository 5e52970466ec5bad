"""This suite against mutants in one live adapter JVM: the mutant's class is swapped in with
``java.lang.instrument`` (``redefineClasses``, kafka-mutation's ``HotSwap`` agent) before its
cases and the release's class swapped back after, instead of a JVM and a patched jar per mutant
(:func:`suite.judge`).  A PIT mutant changes one method's body, which redefinition allows.

The JVM runs the stock release's jars, so every verdict names the stock build; the class in force
is the mutant's between the two swaps only, while no Kafka code runs.  A swap the JVM refuses (a
class that fails to verify) is a harness error, as is a JVM that dies; a JVM killed after a hang is
restarted with the stock classes for the next mutant."""

from __future__ import annotations

import os
import tempfile
import time
import zipfile

from conformance import regressions
from conformance.kafka_mutation import mutant_build, pit, suite
from conformance.kafka_mutation.pit import Mutant
from conformance.targets import kafka_jvm
from conformance.targets.kafka_jvm import KafkaTargetError

SWAP_TIMEOUT_S = 30.0
_STATE: dict = {}


def _control(task: dict) -> str:
    """The swap folder of this process's JVM; the kafka target of this process judges the stock
    release with the swap agent in its JVM.  A JVM that is not running (the first, or one stopped
    after a hang) gets a new folder: a stopped JVM's agent may poll its own for a few seconds more
    while it quits, and must not take the next JVM's requests."""
    os.environ[kafka_jvm.BUILD_VARIABLE] = os.pathsep.join(kafka_jvm.release_build(_release(task)).jars)
    if "control" not in _STATE or not _jvm_alive():
        _STATE["control"] = tempfile.mkdtemp(prefix="klc-hot-swap-", dir=task["work"])
        _STATE["stock"] = os.path.join(_STATE["control"], "stock")
    os.environ["KLC_KAFKA_JVM_OPTIONS"] = f"-javaagent:{task['agent']}=swap:{_STATE['control']}"
    kafka_jvm.ANSWER_TIMEOUT_S = suite.MUTANT_ANSWER_TIMEOUT_S
    return _STATE["control"]


def _release(task: dict) -> str:
    return task["release"]


def _jvm():
    return kafka_jvm.shared(kafka_jvm.classpath_of(kafka_jvm.user_build()))


def _stock_class(kafka_jars: list[str], clazz: str) -> str:
    """The release's bytes of ``clazz``, from the one of ``kafka_jars`` that holds it."""
    path = os.path.join(_STATE["stock"], mutant_build.entry_of(clazz))
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with zipfile.ZipFile(pit.jar_of(clazz, kafka_jars)) as z:
            data = z.read(mutant_build.entry_of(clazz))
        with open(path, "wb") as f:
            f.write(data)
    return path


def swap(control: str, clazz: str, class_file: str) -> None:
    """Ask the JVM's agent to redefine ``clazz`` from ``class_file``; its refusal, no answer
    within :data:`SWAP_TIMEOUT_S` or a dead JVM is a :class:`KafkaTargetError`."""
    jvm = _jvm()
    answer = os.path.join(control, "answer")
    if os.path.exists(answer):
        os.unlink(answer)
    with open(os.path.join(control, "request.tmp"), "w", encoding="utf-8") as f:
        f.write(f"{clazz}\n{class_file}\n")
    os.replace(os.path.join(control, "request.tmp"), os.path.join(control, "request"))
    deadline = time.monotonic() + SWAP_TIMEOUT_S
    while not os.path.exists(answer):
        if not jvm.alive() or time.monotonic() > deadline:
            kafka_jvm.stop_shared()
            raise KafkaTargetError(f"hot swap of {clazz}: no answer from the JVM's agent (alive: {jvm.alive()})")
        time.sleep(0.005)
    with open(answer, encoding="utf-8") as f:
        text = f.read().strip()
    os.unlink(answer)
    if text != "ok":
        kafka_jvm.stop_shared()  # whatever the JVM holds now is not the stock release
        raise KafkaTargetError(f"hot swap of {clazz}: {text}")


def judge(mutant: Mutant, base: dict, task: dict) -> dict:
    """As :func:`suite.judge`, in this process's long-lived JVM."""
    task = task | {"release": base["release"]}
    began = time.monotonic()
    cases, machine = suite.covering(mutant, base), suite.machine_covers(mutant, base)
    row = {"suite_status": suite.NO_COVERAGE, "witness_case": None, "witness": None, "cases_run": 0, "covering_cases": len(cases)}
    if not cases and not machine:
        return row | {"suite_seconds": round(time.monotonic() - began, 2)}
    control = _control(task)
    try:
        swap(control, mutant.clazz, mutant.class_file)
    except KafkaTargetError as e:
        return row | {"suite_status": suite.HARNESS, "witness": suite._one_line(str(e)),
                      "suite_seconds": round(time.monotonic() - began, 2)}  # fmt: skip
    try:
        row |= suite.run_cases(cases[: task.get("max_cases")], machine, base)
    finally:
        stock_back = _swap_back(control, mutant, task)
    if row["suite_status"] == suite.KILLED and row["witness_case"] in base["cases"]:
        if not (stock_back and _stock_gives_stock_verdict(row["witness_case"], base)):
            # the JVM no longer judges the stock release as the baseline did (state a mutant left
            # behind): not the mutant's kill; judged again from a fresh JVM, once
            kafka_jvm.stop_shared()
            if task.get("_again"):
                return row | {"suite_status": suite.HARNESS, "suite_seconds": round(time.monotonic() - began, 2),
                              "witness": suite._one_line(f"a fresh JVM's stock release differs on {row['witness_case']}")}  # fmt: skip
            return judge(mutant, base, task | {"_again": True})
    return row | {"suite_seconds": round(time.monotonic() - began, 2)}


def _swap_back(control: str, mutant: Mutant, task: dict) -> bool:
    """The release's class back in place; False when the JVM is gone (the next mutant starts one
    on the stock classes)."""
    if not _jvm_alive():
        return False
    try:
        swap(control, mutant.clazz, _stock_class(task["kafka_jars"], mutant.clazz))
    except KafkaTargetError:
        return False
    return True


def _stock_gives_stock_verdict(name: str, base: dict) -> bool:
    """A kill's control: with the release's class back, the witness case gives the stock verdict
    in the same JVM (else the JVM's state, not the mutant, made the difference)."""
    by_name = {c.name: c for c in regressions.cases()}
    try:
        violation = regressions.replay(by_name[name], suite.target_of(base["release"]))
    except Exception:  # noqa: BLE001 — a JVM that cannot replay the stock case cannot confirm a kill
        return False
    return regressions.verdict_of(violation) == base["cases"][name]["verdict"]


def _jvm_alive() -> bool:
    return kafka_jvm.classpath_of(kafka_jvm.user_build()) in kafka_jvm.shared_classpaths()
