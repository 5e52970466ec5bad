"""The crash state machine (conformance/crash_machine.py): power losses, I/O errors and corruption
between and inside operations, every property checked at every open — impl on the simulated
backend, and impl on real files loading the materialised crash images."""

from __future__ import annotations

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from conformance.crash_machine import make_crash_machine
from conformance.profiles import FreshCases

SimCrashMachine = make_crash_machine("sim")
OsCrashMachine = make_crash_machine("os")
KafkaCrashMachine = make_crash_machine("sim", ("model", "kafka"))


# The gate's budgets are halves of the profile's (a quarter and less for real files and for Kafka):
# what keeps the gate within its 10 minutes; the nightly profile searches 50 times as far.
class TestCrashMachineSim(FreshCases, SimCrashMachine.TestCase):
    settings = settings(settings(), max_examples=max(10, settings().max_examples // 2), stateful_step_count=40)


class TestCrashMachineOs(FreshCases, OsCrashMachine.TestCase):
    settings = settings(settings(), max_examples=max(10, settings().max_examples // 8))


class TestCrashMachineOnKafka(FreshCases, KafkaCrashMachine.TestCase):
    """Apache Kafka 4.4.0's own log layer loads every crash image the machine makes, judged against
    the model; a case that reaches a known Kafka bug (corpora/kafka-findings) ends there."""

    settings = settings(settings(), max_examples=max(10, settings().max_examples // 6), stateful_step_count=30)


def test_a_dry_run_numbers_operations_as_the_crash_counts_them():
    """The crash point is drawn from a dry run of the interrupted step on a fork of the image source
    (CrashMachine._dry_run): its
    list must number operations exactly as ``at_op`` counts them, or a crash aimed at a rename falls
    elsewhere.  On a truncation that removes two segments, every operation of the list is the one a
    crash at that number interrupts."""
    import json
    import os

    import attrs

    from conformance import scenario as sc
    from conformance.runner import Session

    corpus = os.path.join(os.path.dirname(__file__), "..", "corpora", "crash")
    with open(os.path.join(corpus, "truncate-removes-the-highest-segment-first.json"), encoding="utf-8") as f:
        case = sc.Scenario.from_json(json.load(f))
    prelude, crash = case.steps[:8], case.steps[8]
    machine = SimCrashMachine()
    machine.session = Session(attrs.evolve(case, steps=()), ("model", "impl"), "sim", faults=True)
    for step in prelude:
        machine.session.step(step)
    counted = machine._dry_run(crash.during)
    assert counted.count("rename") >= 4 and "fsync_dir" in counted
    for at, what in enumerate(counted):
        session = Session(attrs.evolve(case, steps=()), ("impl",), "sim", faults=True)
        for step in prelude:
            session.step(step)
        session.step(attrs.evolve(crash, at_op=at))
        assert session.verdict.results[-1]["impl/sim"]["operation"] == what, at


@given(st.just(None))  # the machine records event()s, which only a running test may
@settings(max_examples=1, database=None, phases=[Phase.generate])
def test_a_stopped_broker_comes_back_at_the_next_operation(_):
    """Hypothesis's swarm disables ``open`` in about half the cases; a stopped broker must still come
    back, or the rest of such a case only ticks.  Right after a crash only the steps that need the
    broker down may be drawn; after ``down_rules`` steps an operation may be drawn again, and it
    opens the broker first (an ``open`` step in the scenario, so the case replays as it ran)."""
    from conformance import faults
    from conformance import scenario as sc
    from conformance.crash_images import Fault
    from conformance.runner import Session

    machine = SimCrashMachine()
    machine.session = Session(sc.Scenario(()), ("model", "impl"), "sim", faults=True)
    machine._do(sc.Create("t", 0))
    machine.created.add(("t", 0))
    machine._do(faults.Crash(Fault("process")))
    machine._after_fault(machine.session.steps[-1])
    assert not machine._up()
    for _ in range(machine.down_rules - 1):
        machine.tick(1000)
    assert not machine._up()
    machine.tick(1000)
    assert machine._up() and not machine.running
    machine.roll(("t", 0))
    ticks = ["tick"] * machine.down_rules
    assert [s.op for s in machine.session.steps] == ["create", "crash", *ticks, "open", "roll"]
    assert machine.running and machine.down_for == 0
    assert not any(v for v in machine.session.verdict.violations)


def test_index_damage_lands_on_the_fields_of_the_last_entries():
    """An ``.index`` or ``.timeindex`` is damaged at a field of one of its last two entries (or
    anywhere): the entries Kafka lists end at the first zero slot past the first (§3.1), so in a
    preallocated index the last entries are not the file's last bytes."""
    import struct

    from conformance.strategies import index_entries, index_field_edges

    entries = [(1_700_000_000_000 + i, i * 3) for i in range(4)]
    timeindex = b"".join(struct.pack(">qi", t, o) for t, o in entries) + bytes(12 * 20)
    path = "d0/t-0/00000000000000000000.timeindex"
    assert index_entries(path, timeindex) == 4
    assert index_entries(path, bytes(24)) == 1  # a first slot of zeros is an entry (offset 0 at time 0)
    assert index_entries("d0/t-0/00000000000000000000.index", struct.pack(">ii", 0, 0) + struct.pack(">ii", 5, 70)) == 2
    # entries 2 and 3: the first and last byte of the timestamp and of the relative offset
    assert index_field_edges(path, timeindex) == [24, 31, 32, 35, 36, 43, 44, 47]
    assert index_field_edges("d0/t-0/00000000000000000000.index", struct.pack(">ii", 0, 0)) == [0, 3, 4, 7]


def test_the_final_entry_of_an_index_is_the_last_one_kafka_lists():
    """What the crash machine zeroes in an index (KAFKA-10207's padded slot): the last entry before
    the first zero slot, not the file's last bytes; none in an empty or a short file."""
    import struct

    from conformance.strategies import final_entry

    path = "d0/t-0/00000000000000000000.timeindex"
    entries = b"".join(struct.pack(">qi", 1_700_000_000_000 + i, i) for i in range(3))
    assert final_entry(path, entries) == (24, 12)
    assert final_entry(path, entries + bytes(12 * 5)) == (24, 12)
    assert final_entry(path, entries + b"\x01" * 5) == (24, 12)  # a trailing partial slot is no entry
    assert final_entry(path, b"") is None
    assert final_entry(path, bytes(11)) is None
    assert final_entry("d0/t-0/00000000000000000007.index", struct.pack(">ii", 0, 0) * 3) == (0, 8)


@given(st.data())
@settings(max_examples=5, database=None, phases=[Phase.generate])
def test_a_truncation_or_cleaning_rounds_power_loss_has_its_own_budget(data):
    """A power loss a truncation or a cleaning round draws for itself counts against
    IN_RULE_CRASHES, not against the rules' MAX_CRASHES (the loader's crashes, where splits and swaps
    are interrupted, stay available); the interrupted round is in the scenario as a ``crash`` step
    ``during`` the clean."""
    from conformance import scenario as sc
    from conformance.crash_machine import IN_RULE_CRASHES
    from conformance.runner import Session

    machine = SimCrashMachine()
    header = sc.Scenario((), {"cleanup.policy": "compact", "segment.index.bytes": 4096})
    machine.session = Session(header, ("model", "impl"), "sim", faults=True)
    machine.swarm = frozenset({"process"})
    machine._do(sc.Create("t", 0))
    machine.created.add(("t", 0))
    for _ in range(2):
        machine.append(("t", 0), data, 0, "none")
        machine.roll(("t", 0))
    step = sc.Clean("t", 0)
    counted = machine._dry_run(step)
    assert "rename" in counted
    machine._crash(data, inside=True, during=step, counted=counted, in_rule=True)
    assert (machine.crashes, machine.in_rule_crashes) == (0, 1) == (0, IN_RULE_CRASHES)
    assert not machine._may_crash_in_rule() and machine._may_crash()
    crash = machine.session.steps[-1]
    assert crash.op == "crash" and crash.during == step
    assert not any(v for v in machine.session.verdict.violations)


def test_every_weight_has_a_reason_and_a_reader():
    """The weights table (conformance/weights.py): every row a chance between 0 and 1 or positive
    whole weights, a one-line reason, and a machine or a strategy that reads it by name."""
    import pathlib
    from fractions import Fraction

    from conformance.weights import TABLE

    root = pathlib.Path(__file__).resolve().parent.parent / "conformance"
    sources = "".join(p.read_text(encoding="utf-8") for p in sorted(root.glob("*.py")) if p.name != "weights.py")
    for w in TABLE:
        assert w.reason and "\n" not in w.reason, w.name
        if isinstance(w.value, Fraction):
            assert 0 < w.value < 1, w.name
        else:
            assert w.value and all(isinstance(n, int) and n > 0 for n in w.value.values()), w.name
        assert f'"{w.name}"' in sources, f"nothing reads {w.name!r}"


def test_an_option_of_weight_two_is_two_branches():
    """``weighted`` builds one strategy per unit of an option's weight: a ``one_of`` counts one strategy
    object once, so the same object twice would be a weight of 1.  Every option of "damaged file"
    present: as many branches as the weights add up to."""
    from hypothesis.strategies._internal.lazy import unwrap_strategies

    from conformance.fault_strategies import damaged_files
    from conformance.weights import WEIGHTS

    files = {
        "d0/recovery-point-offset-checkpoint": b"0\n1\nt 0 0\n",
        "d0/t-0/00000000000000000000.log": b"x",
        "d0/t-0/00000000000000000000.index": bytes(8),
        "d0/t-0/00000000000000000005.log": b"x",
        "d0/t-0/00000000000000000005.timeindex": bytes(12),
        "d0/t-0/leader-epoch-checkpoint": b"0\n2\n0 0\n1 5\n",
        "d0/legacy-0/00000000000000000000.log": b"x",
        "d0/t-0/00000000000000000005.snapshot": bytes(10),
    }
    branches = unwrap_strategies(damaged_files(files)).element_strategies
    assert len(branches) == sum(WEIGHTS["damaged file"].value.values()) == 10


def test_the_batches_an_index_names_and_the_recovery_points_are_read_through_the_model():
    """What damage favours in a .log — the batches its indexes name (§3.1, §3.2) — and which .logs a
    recovery reads (§5.6) come from model.indexes and model.checkpoints; a checkpoint line that does
    not parse drops only itself."""
    import struct

    from conformance.fault_strategies import indexed_batches, recovery_points
    from model import records as R

    batches = [R.encode_batch_v2(base_offset=o, records=[R.Record(value=b"v")]) for o in range(3)]
    positions = [sum(map(len, batches[:i])) for i in range(3)]
    stem = "d0/t-0/00000000000000000000."
    files = {
        stem + "log": b"".join(batches),
        stem + "index": struct.pack(">ii", 1, positions[1]) + bytes(8 * 3) + b"\x01",
        stem + "timeindex": struct.pack(">qi", 1_700_000_000_000, 2) + bytes(12 * 2),
    }
    assert indexed_batches(files, stem + "log") == (positions[1], positions[2])
    files[stem + "timeindex"] = bytes(12) + struct.pack(">qi", 1_700_000_000_000, 0)  # a zero first slot: no entry
    files[stem + "index"] = bytes(8)  # a zero first slot is an entry: offset 0 at position 0
    assert indexed_batches(files, stem + "log") == (positions[0],)
    checkpoint = {"d0/recovery-point-offset-checkpoint": b"0\n3\nt 0 5\nt 1 x7\norders 1 9\n"}
    assert recovery_points(checkpoint) == {"d0/t-0": 5, "d0/orders-1": 9}


def test_crash_images_name_what_they_did_to_the_producer_state_files():
    """The events the machine counts for issue 32's faults: a snapshot torn, a .txnindex gone, and
    a snapshot above the log end (an empty segment at 5 is the log's end)."""
    from conformance.crash_images import producer_state_damage

    live = {
        "d0/t-0/00000000000000000005.log": b"",
        "d0/t-0/00000000000000000005.snapshot": b"\x00\x01" + bytes(8),
        "d0/t-0/00000000000000000005.txnindex": bytes(34),
    }
    image = {**live, "d0/t-0/00000000000000000005.snapshot": bytes(10), "d0/t-0/00000000000000000009.snapshot": b""}
    del image["d0/t-0/00000000000000000005.txnindex"]
    assert producer_state_damage(live, image) == ("snapshot torn", "snapshot above the log end", "txnindex missing")
    assert producer_state_damage(live, dict(live)) == ()
