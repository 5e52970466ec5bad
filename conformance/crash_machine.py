"""The crash state machine: the log machine's operations plus power losses, I/O errors and
corruption, checking every DESIGN.md property after every ``open`` (spec §5, §6.2, §9.3).

* At most three crashes per case (``MAX_CRASHES``); a crash falls between steps or inside one —
  any operation, a graceful shutdown, or the loader itself — at its k-th storage operation.  A
  truncation or a cleaning round may draw one more power loss of its own (``IN_RULE_CRASHES``):
  inside it, or right after a truncation, from every crash family.
* Most cases start from a partition with history (the weights table's ``history``: rolled
  segments, flushed and checkpointed, an unflushed append on top), so truncations, retention and
  cleaning rounds that remove or replace several segments happen within the first steps.
* A stopped broker comes back: after ``down_rules`` steps while it is down (a corruption, a legacy
  segment, a crash inside the loader, a tick), the next operation is preceded by an ``open``.
* Swarm testing (Groce et al.): each case enables a random subset of the fault families, so some
  cases hammer torn writes while others only lose metadata, and a random subset of the operations
  a fault may interrupt.
* Where a crash falls: a dry run of the interrupted step on a replay of the case so far lists its
  storage operations, and the crash point favours its renames and other name or extent changes;
  a crash image between steps favours losing or keeping exactly those pending operations
  (:mod:`conformance.fault_strategies`).
* The compound rules — a truncation, a cleaning round — are named sequences of stages, each drawn
  with its weight from :mod:`conformance.weights`, which holds every probability the machine uses.
* ``event()`` names every loader branch the model took (§5.2–§5.6 rule numbers, from
  :class:`model.log_manager.LoadOutcome`), so the statistics show which ones CI reaches;
  ``target()`` steers toward many pending operations at a crash, deep crash points (the storage
  operation a fault interrupts: a split's or a cleaning round's renames), bytes truncated at
  recovery and segments recovered.

Every case is a scenario: a failure prints it as JSON, replayable with ``klc replay``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from conformance import faults as fault_steps
from conformance import scenario as sc
from conformance.crash_images import CORRUPTIONS, FAMILIES, journal
from conformance.fault_strategies import (
    INT32_MAX,
    LEGACY_TOPIC,
    crash_points,
    damage,
    damaged_files,
    faults,
    field_changes,
    is_text_checkpoint,
    legacy_segments,
)
from conformance.log_machine import DAY, LogMachine, configs
from conformance.runner import Session
from conformance.sim_storage import Create, Rename, Truncate, Unlink, Write
from conformance.strategies import final_entry
from conformance.weights import chance, choices, coin, coins
from model.names import NameError_, filename_prefix, parse_topic_partition

MAX_CRASHES = 3
# where a power loss cut from Kafka's own journal falls inside a step: a step makes 6.7 operations
# on average (benchmarks/kafka_io.py), a load or a retention of several segments a few dozen
KAFKA_CRASH_POINTS = 40
# power losses a truncation or a cleaning round draws for itself (during it, or right after a
# truncation), beside the rules' MAX_CRASHES: the loader's crashes — where splits and swaps are
# interrupted (§5.5, §5.9) — are not spent on them
IN_RULE_CRASHES = 1
# the operations a crash or an I/O error may interrupt while the broker runs (the loader when it is
# down); each case enables a random subset, so some cases interrupt only cleaning rounds or only
# truncations, where a rename order matters (swarm testing again)
INTERRUPTIBLE = tuple(op for op, cls in sc.STEPS.items() if cls.interruptible)
FAULT_KINDS = FAMILIES + ("fail_io", "corrupt")
# (segments, settled) before the first drawn step: an empty partition, or a log of one to four rolled
# segments (the weights table's "history")
HISTORIES = choices("history")
# steps a stopped broker refuses (the targets answer NotRunning): all but a tick, an open and what
# the runner does to the disk; an ``open`` is inserted before them while the broker is down
NEEDS_BROKER = frozenset(
    op for op, cls in sc.STEPS.items() if cls.runs_as not in ("fault", "disk") and not cls.runs_when_down
)
# what a restarted broker's replicas do first (CrashMachine.open)
AFTER_OPEN = choices("after open")
MARKED = (Create, Rename, Unlink, Truncate)  # journal entries a crash image may keep or lose by name
PRODUCER_STATE_FILES = (".snapshot", ".txnindex")  # their writes are aimed at (fault_strategies.faults)


def _always(machine, taken) -> bool:
    return True


def _never(machine, taken) -> bool:
    return False


@attrs.frozen
class Stage:
    """One stage of a compound rule.  Stages are reached in order; one whose ``when`` does not
    hold is passed over without a draw; one whose ``forced`` holds is taken without a draw; the
    others are taken with their ``chance`` (a row of :mod:`conformance.weights`; None: always).  A
    taken stage runs the machine's method ``run(tp, data)``, and one that returns True ends the
    rule.  ``when`` and ``forced`` see the machine and the labels of the stages taken so far."""

    label: str  # the draw's label in a failing case, and the name ``taken`` holds
    run: str
    chance: str | None = None
    when: Callable[[CrashMachine, set[str]], bool] = _always
    forced: Callable[[CrashMachine, set[str]], bool] = _never


class CrashMachine(LogMachine):
    monotonic_epochs = True  # else recovery legitimately rebuilds a different epoch cache
    # While the broker is down only what needs it down may be drawn (a corruption, a legacy segment,
    # a crash or an I/O error inside the loader, a tick, ``open``) — for ``down_rules`` steps; then
    # the operations of a running broker may be drawn again, and the first one opens it first.
    # Hypothesis's swarm disables each rule in about half the cases, ``open`` included: without this
    # such a case ticks a stopped broker to its end.  Not fewer than 6: the steps while it is down are
    # where a loader is crashed again and again, the way to a split's interrupted renames (§5.5, §5.9).
    down_rules = 6
    # the max-timestamp search (−3) weighted above the other special timestamps: after a load no
    # segment's max timestamp is loaded, and −3 is the lookup that loads them all
    # (``maxBy(_.maxTimestampSoFar)``, §4.1); after a truncation it is where Kafka's lazily loaded
    # max and the content's part (§4.7 rule 7; corpora/crash/max-timestamp-*.json)
    special_timestamps = choices("special timestamp (crash machine)")
    # Fault rates: a campaign task narrows these per task (conformance/campaign/tasks.py); the swarm
    # each case draws is cut down to ``swarm_kinds`` (all of them if nothing is left).
    max_crashes = MAX_CRASHES
    swarm_kinds: frozenset[str] = frozenset(FAULT_KINDS)
    # Kafka's own I/O captured (a kafka target among the targets): a power loss may then be cut from
    # Kafka's journal instead of impl's (conformance.kafka_io), where Kafka's own fsync and rename
    # order decides what survives (KAFKA-3968)
    capture_kafka_io = False

    def __init__(self):
        super().__init__()
        self.crashes = 0
        self.in_rule_crashes = 0
        self.io_errors = 0
        self.corruptions = 0
        self.injections = 0
        self.set_aside = 0  # rename_dir steps taken
        self.moving: set[tuple[str, int]] = set()  # partitions with a future copy to promote
        self.swarm: frozenset[str] = frozenset()
        self.interruptible: frozenset[str] = frozenset(INTERRUPTIBLE)
        self.branches_reached: set[str] = set()  # loader branches of every open (campaign rows)
        self.down_for = 0  # steps taken since the broker went down
        self.index_damaged = False  # an index file damaged since the broker last came back
        self.damaged_tp: tuple[str, int] | None = None  # the partition damaged last while it was down

    @initialize(
        target=LogMachine.partitions,
        config=configs,
        data_dirs=st.integers(1, 2),
        seed=st.integers(0, 3),
        swarm=st.sets(st.sampled_from(FAULT_KINDS), min_size=1),
        interruptible=st.sets(st.sampled_from(INTERRUPTIBLE), min_size=1),
        history=st.sampled_from(HISTORIES),
        compacted=coins("start: compacted"),
        data=st.data(),
    )
    def start(self, config, data_dirs, seed, swarm, interruptible, history, compacted, data):
        # a compacted case whatever the drawn config says (most of them with time and size retention
        # too): a cleaning round is the step whose interrupted renames leave .cleaned and .swap files
        # to the next load (§5.2, §5.9), and a clean step on a log that is not compacted is refused
        if compacted:
            config = {**config, "cleanup.policy": "compact,delete"}
        header = sc.Scenario((), self.expressible(config), data_dirs, 1_700_000_000_000, seed)
        self.clock = header.clock_start_ms
        self.swarm = frozenset(swarm) & self.swarm_kinds or self.swarm_kinds
        self.interruptible = frozenset(interruptible)
        self.session = Session(header, self.targets, self.backend, faults=True, capture=self.capture_kafka_io)
        self.session.report_damage = True  # what each crash image did to the producer-state files
        for kind in sorted(self.swarm):
            event(f"swarm: {kind}")
        self._do(sc.Create("t", 0, 0))
        self.created.add(("t", 0))
        self._history(data, ("t", 0), *history)
        return ("t", 0)

    def _history(self, data, tp, segments: int, settled: bool) -> None:
        """The partition as a broker that has run for a while has it: ``segments`` appends each
        followed by a roll, then, if ``settled``, flushed and checkpointed (the recovery point at
        the active segment) with one more, unflushed, append — the exhaustive sweep's ``settled``
        prelude.  From one empty segment, a truncation or retention that removes two segments, a
        torn middle segment or a cleaning group of several segments comes only after many steps.

        Some segments after the first begin a leader epoch of their own, as on a broker that has
        seen leader elections: the leader-epoch checkpoint then has several entries, which a
        damaged digit can leave no longer increasing (§6.5).  Not every segment: a truncation that
        changes the epoch cache writes its checkpoint, whose directory fsync makes the truncation's
        renames durable before a power loss between steps can lose them (§6.5, atomic write step 4)."""
        for i in range(segments):
            self._history_append(data, tp, i)
            self.roll(tp)
        if settled:
            self._do(sc.Flush(*tp))
            self._do(sc.Checkpoint())
            self._history_append(data, tp, segments)
        event(f"history: {segments} segments" + (", settled" if settled else ""))

    def _history_append(self, data, tp, i: int) -> None:
        """The history's ``i``-th append, after the first by a new leader at times."""
        if i and coin(data.draw, "history: a new leader at an append", label="new leader"):
            self.epochs[tp] = self.epochs.get(tp, 0) + 1
        self.append(tp, data, 0, "none")

    @precondition(lambda self: self._up() and len(self.created) < 4)
    @rule(
        target=LogMachine.partitions,
        topic=st.sampled_from(("t", "orders")),
        partition=st.integers(0, 1),
        d=st.integers(0, 1),
    )
    def create(self, topic, partition, d):
        """Also over a partition created before: a no-op if it loaded, refused with
        KafkaStorageException if its directory failed to load (kept as found, §6.6)."""
        return super().create(topic, partition, d)

    # --- the compound rules: named sequences of stages (Stage), each with its weight -------------

    def _stages(self, data, tp, stages: tuple[Stage, ...]) -> None:
        taken: set[str] = set()
        for stage in stages:
            if not stage.when(self, taken):
                continue
            if stage.forced(self, taken) or stage.chance is None or chance(data.draw, stage.chance, stage.label):
                taken.add(stage.label)
                if getattr(self, stage.run)(tp, data):
                    return

    # A follower's truncation (KIP-101: to the offset where its log diverges from the new leader's)
    # and what follows it.  The truncation's own power loss falls inside it, at one of its storage
    # operations drawn from a dry run as ``crash_inside`` draws them: its renames of the segments
    # above the target, then its cut (§4.7).  The power loss after it falls between steps, where its
    # unsynced renames and cut are pending (§4.7, the exhaustive sweep's findings), and draws from
    # every crash family, not only the case's swarm: the reorderings that lose one of those
    # operations and keep the others.  With a cut pending, :func:`faults` may lose exactly it.
    TRUNCATION = (
        Stage("power loss during", "_truncation_interrupted", "truncation: power loss inside it",
              when=lambda m, taken: m._may_crash_in_rule()),
        Stage("truncation", "_follower_truncation"),
        Stage("max-timestamp lookup", "_max_timestamp_lookup", "truncation: max-timestamp lookup after it"),
        Stage("catch-up", "_catch_up", "truncation: the follower's catch-up", when=lambda m, taken: m.running),
        Stage("power loss after", "_power_loss_in_rule", "truncation: power loss after its catch-up",
              when=lambda m, taken: "catch-up" in taken and m.running and m._may_crash_in_rule(),
              forced=lambda m, taken: m._cut_pending()),
        Stage("power loss after", "_power_loss_in_rule", "truncation: power loss after it",
              when=lambda m, taken: "catch-up" not in taken and m.running and m._may_crash_in_rule()),
    )  # fmt: skip

    @precondition(lambda self: self._up())
    @rule(tp=LogMachine.partitions, data=st.data())
    def truncate(self, tp, data):
        """A follower's truncation and what a follower does next (``TRUNCATION``, in order): a power
        loss inside it, which ends the rule; else the truncation; the max-timestamp lookup (−3); the
        follower's catch-up — the new leader's batches appended at the truncation point, in a new
        segment at times; a power loss.

        * A truncation that cuts a time index's only entry before the segment's max timestamp was
          loaded leaves Kafka's max at (−1, base) while batches with timestamps remain (§4.7 rule 7);
          the next append, load or crash makes the difference unobservable, so the −3 lookup comes
          right after it.
        * The catch-up is what a follower does next in Kafka (ReplicaFetcherThread).  New batches at
          the offsets a truncation removed are what a crash that loses the cut of the segment below
          turns into offsets going back (§4.7, §4.10: Kafka never fsyncs the cut, and a roll at the
          truncation point flushes nothing,
          corpora/crash/truncate-cut-durable-before-the-recovery-point.json).
        * The power loss after a catch-up over a cut still pending always comes: the window of
          §4.7's unsynced cut under the new leader's batches."""
        self._stages(data, tp, self.TRUNCATION)

    def _truncation_interrupted(self, tp, data) -> bool:
        step = sc.Truncate(tp[0], tp[1], self.draw_offset(data, tp, self.leo.get(tp, 0) + 1))
        if not self.running:  # a stopped broker's truncation would be refused, the fault after it
            self._open()
        self._crash(data, inside=True, during=step, in_rule=True)
        return True

    def _follower_truncation(self, tp, data) -> None:
        super().truncate(tp, data)

    def _max_timestamp_lookup(self, tp, data) -> None:
        self._do(sc.OffsetForTimestamp(tp[0], tp[1], -3))

    def _catch_up(self, tp, data) -> None:
        if coin(data.draw, "truncation: catch-up in a new segment", label="catch-up in a new segment"):
            self._do(sc.Roll(*tp))
        epoch = self._epoch(tp, self.epochs.get(tp, 0) + 1)
        self.append_as_follower(tp, data, 0, epoch)

    def _cut_pending(self) -> bool:
        return bool(self._pending()[2])

    def _power_loss_in_rule(self, tp, data) -> None:
        self._crash(data, inside=False, in_rule=True)

    # A cleaning round, interrupted at one of its storage operations — drawn from a dry run, on or
    # right after a rename most of the time: ``.cleaned`` → ``.swap``, the originals → ``.deleted``,
    # ``.swap`` → final, each a crash state the next load completes or rolls back (§5.2 steps 1e–4,
    # §5.9, KAFKA-12520) — or run to its end.
    CLEANING = (
        Stage("power loss during cleaning", "_cleaning_interrupted", "cleaning round: power loss inside it",
              when=lambda m, taken: m._may_crash_in_rule()),
        Stage("cleaning round", "_cleaning_round"),
    )  # fmt: skip

    @precondition(lambda self: self._up())
    @rule(tp=LogMachine.partitions, data=st.data())
    def clean(self, tp, data):
        """A cleaning round (``CLEANING``): interrupted by a power loss, or run to its end."""
        if self._holds_legacy(tp):
            event("clean: not run over legacy batches")
            return
        self._stages(data, tp, self.CLEANING)

    def _cleaning_interrupted(self, tp, data) -> bool:
        step = sc.Clean(*tp)
        if not self.running:
            self._open()
        counted = self._dry_run(step)
        if counted and "rename" in counted:  # a round with a group to swap in
            self._crash(data, inside=True, during=step, counted=counted, in_rule=True)
            return True
        return False

    def _cleaning_round(self, tp, data) -> None:
        super().clean(tp)

    def _may_crash(self) -> bool:
        return self.crashes < self.max_crashes and bool(set(FAMILIES) & self.swarm)

    def _may_crash_in_rule(self) -> bool:
        """A truncation or a cleaning round may still draw a power loss of its own (IN_RULE_CRASHES)."""
        return self.in_rule_crashes < IN_RULE_CRASHES and bool(self._families(in_rule=True))

    def _epoch(self, tp, epoch: int) -> int:
        """Leader epochs only grow; a drawn 3 is a new leader (one append in four), so a partition's
        epoch cache gains entries throughout a case rather than stopping at epoch 3 (the entries a
        damaged checkpoint can leave out of order, §6.5; delete_records folds those below the log
        start into one)."""
        if epoch == 3:
            epoch = self.epochs.get(tp, 0) + 1
        return super()._epoch(tp, epoch)

    def _families(self, in_rule: bool = False):
        """The crash families a power loss draws from: the case's swarm, or, for a truncation's or a
        cleaning round's own power loss, every family the machine may use (``swarm_kinds``)."""
        kinds = self.swarm_kinds if in_rule else self.swarm
        return [f for f in FAMILIES if f in kinds]

    def _kafka_journal(self, data, weight: str = "crash: cut from Kafka's own journal"):
        """The kafka target whose own I/O is captured, when the fault is drawn on its journal
        (``weight``: a power loss cut from it, or an I/O error failing one of its calls); None: on
        impl's."""
        if not self.capture_kafka_io:
            return None
        kafka = next((t for t in self.session.targets if getattr(t, "io", None) is not None), None)
        if kafka is None or not coin(data.draw, weight, label="Kafka's journal"):
            return None
        return kafka

    def _pending(self, kafka=None) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """How many operations are pending, which of them change a name or an extent, which of
        those shorten a ``.log`` (a truncation's cut), and which write a producer-state file — on
        impl's journal, or on ``kafka``'s own."""
        if kafka is None:
            ops, named = self.session.source.pending_operations()
        else:
            ops = journal(kafka.io.storage)
            named = {id(node): name for name, node in kafka.io.storage.inodes()}
        marks = tuple(i for i, (_, op) in enumerate(ops) if isinstance(op, MARKED))
        logs = {k for k, name in named.items() if name.endswith(".log")}
        cuts = tuple(i for i in marks if isinstance(ops[i][1], Truncate) and id(ops[i][0]) in logs)
        aims = tuple(
            i for i, (owner, op) in enumerate(ops)
            if isinstance(op, Write) and named.get(id(owner), "").endswith(PRODUCER_STATE_FILES)
        )  # fmt: skip
        return len(ops), marks, cuts, aims

    def _dry_run(self, step: sc.Step) -> list[str] | None:
        """The storage operations ``step`` would make now, by name, in order: ``step`` run on a fork
        of the image source (simulated, deterministic).  None when it does not get there (an
        exception: the caller draws blind)."""
        try:
            fork = self.session.fork_source()
        except (TypeError, ValueError):  # state a fork cannot copy: the caller draws blind
            return None
        fork.storage.arm(None)
        fork.storage.counted = []
        try:
            fork.apply(step)
        except Exception:  # noqa: BLE001 — the real run reports it
            pass
        finally:
            fork.close()
        return fork.storage.counted

    def _interrupted_step(self, data) -> sc.Step:
        """A step to interrupt: any state-changing operation while running, the loader when not;
        the step class draws its own arguments (``Step.drawn``)."""
        if not self.running:
            return sc.Open()
        tps = sorted(self.created)
        topic, partition = data.draw(st.sampled_from(tps), label="partition")
        unclean = self._holds_legacy((topic, partition))
        kinds = self.interruptible - ({"clean"} if unclean else set())
        kind = data.draw(st.sampled_from(sorted(kinds) or ["tick"]), label="interrupted")
        return sc.STEPS[kind].drawn(self, data, topic, partition)

    def _interrupt_at(self, data, during: sc.Step, counted: list[str] | None = None) -> int:
        """The operation of ``during`` to interrupt, drawn from a dry run of it (``counted``, if the
        caller made it); ``target()`` steers toward steps with many renames (a truncation or
        retention removing several segments, a split, a cleaning round: where Kafka's unsynced or
        misordered renames lose data)."""
        counted = counted or self._dry_run(during)
        if counted:
            self._score("renames in an interrupted step", float(counted.count("rename")))
        return data.draw(crash_points(counted), label="at_op")

    def _after_fault(self, step: sc.Step) -> None:
        self.running = False
        outcome = self.session.last_fault
        for what in outcome.damage if outcome is not None else ():
            event(f"crash image: {what}")
        if self.session.broken or outcome is None:
            return  # a known Kafka bug was reached: nothing more is judged
        result = outcome.results.get(self.session.source.name, {})
        if "crashed_at" in result:
            event(f"{step.op}: interrupted at {result['operation']}")
            # deep crash points: the rename phases of a split or a cleaning round lie past op 40
            self._score("storage operation a fault interrupted", float(result["crashed_at"]))
        elif getattr(step, "during", None) is not None:
            event(f"{step.op}: after {step.during.op} completed")

    def _crash(self, data, inside: bool, during: sc.Step | None = None, counted=None, in_rule=False) -> None:
        """A power loss between steps or ``inside`` one (``during``, else drawn), counted against
        the rules' budget or, ``in_rule``, the truncation's or cleaning round's own."""
        kafka = self._kafka_journal(data)
        if inside and during is None:
            during = self._interrupted_step(data)
        if isinstance(during, sc.Clean) and not self._cleans():
            kafka = None  # a release whose adapter runs no cleaning round: cut from impl's journal
        if inside and kafka is not None:  # Kafka's operations are known only once it ran the step
            at_op = data.draw(st.integers(0, KAFKA_CRASH_POINTS), label="at_op")
        else:
            at_op = self._interrupt_at(data, during, counted) if inside else 0
        pending, marks, cuts, aims = self._pending(kafka)
        if inside:  # the step's own operations come after these: op numbers up to 20 past them
            fault = data.draw(faults(self._families(in_rule), pending + 20), label="fault")
        else:
            fault = data.draw(faults(self._families(in_rule), pending, marks, cuts, aims), label="fault")
        step = fault_steps.Crash(fault, during, at_op, "impl" if kafka is None else "kafka")
        if in_rule:
            self.in_rule_crashes += 1
        else:
            self.crashes += 1
        self._do(step)
        self._score("pending operations at a crash", float(pending))
        event(f"crash family: {fault.family}")
        if kafka is not None:
            event("crash: cut from Kafka's own journal")
        if during is not None:
            event(f"crash inside {during.op}")
        self._after_fault(step)

    @precondition(lambda self: self._may_crash())
    @rule(data=st.data())
    def crash(self, data):
        """Power loss between two steps."""
        self._crash(data, inside=False)

    @precondition(lambda self: self._may_crash())
    @rule(data=st.data())
    def crash_inside(self, data):
        """Power loss at the k-th storage operation of a step (an operation, shutdown, the loader)."""
        self._crash(data, inside=True)

    @precondition(lambda self: self.io_errors < 1 and "fail_io" in self.swarm)
    @rule(data=st.data(), error=st.sampled_from(fault_steps.IO_ERRORS))
    def fail_io(self, data, error):
        kafka = self._kafka_journal(data, "fail_io: on Kafka's own calls")
        during = self._interrupted_step(data)
        if isinstance(during, sc.Clean) and not self._cleans():
            kafka = None  # a release whose adapter runs no cleaning round: impl's operation fails
        if kafka is not None:  # Kafka's calls are known only once it ran the step
            at_op = data.draw(st.integers(0, KAFKA_CRASH_POINTS), label="at_op")
        else:
            at_op = self._interrupt_at(data, during)
        step = fault_steps.FailIo(during, at_op, error, "impl" if kafka is None else "kafka")
        self.io_errors += 1
        self._do(step)
        if kafka is not None and self.session.last_fault is not None:
            failed = self.session.last_fault.results.get(kafka.name, {}).get("failed")
            event(f"fail_io: Kafka's own {failed.split()[0]} failed" if failed else "fail_io: past Kafka's last call")
        self._after_fault(step)

    @precondition(lambda self: not self.running and "corrupt" in self.swarm and self.corruptions < 2)
    @rule(data=st.data(), kind=st.sampled_from(CORRUPTIONS))
    def corrupt(self, data, kind):
        nonempty = self._nonempty_files()
        if not nonempty:
            return
        self._corrupt(data, data.draw(damaged_files(nonempty), label="file"), nonempty, kind)

    def _nonempty_files(self) -> dict[str, bytes]:
        """The crash image's non-empty files, by path, in order: what damage can land in."""
        return {p: b for p, b in sorted(self.session.source.image()[0].items()) if b}

    def _corrupt(self, data, path: str, nonempty: dict[str, bytes], kind: str, copied: bool = False) -> None:
        """Damage ``path``: at times an index's final entry zeroed, or one field changed by one bit
        where :func:`field_changes` knows the fields — a text checkpoint, or a legacy segment
        ``copied`` in — else ``kind`` (:func:`damage`).  Not every .log: the generic damage of the
        last batches' header fields reaches a CRC-covered field a clean load does not check (§4.5
        rule 3)."""
        text, index = is_text_checkpoint(path), path.endswith((".index", ".timeindex"))
        final = final_entry(path, nonempty[path]) if index else None
        if final is not None and coin(data.draw, "damage: an index's final entry zeroed", label="final entry zeroed"):
            # an index's final entry zeroed, as a preallocated file's padding (KAFKA-10207/19200): a
            # time index's final timestamp 0, the segment's largest timestamp for a retention that
            # trusts it (§7.8); the generic damage seldom changes it (its high byte is already zero)
            kind, offset, length, seed = "zero", *final, 0
        elif (text or copied) and coin(data.draw, "damage: one field changed by one bit", label="one field changed"):
            kind, length, offset, seed = "bitflip", 1, *data.draw(field_changes(path, nonempty[path], text))
        else:
            kind, length, offset, seed = damage(data, path, nonempty, kind, text)
        self._do(fault_steps.Corrupt(path, offset, length, kind, seed))
        self.index_damaged |= index
        try:
            topic, partition, _ = parse_topic_partition(path.split("/")[1])
        except (IndexError, NameError_):  # a data dir's own file (a checkpoint): no partition
            pass
        else:
            if (topic, partition) in self.created:
                self.damaged_tp = (topic, partition)
        event(f"corrupt: {path.rsplit('.', 1)[-1]} {kind}")
        self.corruptions += 1

    # Also with indexes of a few slots, where the recovery or split of a legacy segment fails on a
    # full index (Kafka's load fails too): a failed load keeps what its recoveries wrote, on both
    # sides (docs/crash-recovery.md, "A failed load").  A split at load (§5.5) and its .swap files
    # (§5.9) come from these segments.
    @precondition(lambda self: not self.running and self.injections < 2)
    @rule(target=LogMachine.partitions, data=st.data())
    def inject_legacy_segment(self, data):
        """A legacy segment written while the broker is down (KAFKA-6264): the next load recovers
        it if it is unflushed or has no index, and splits it if its offsets overflow (§5.5)."""
        step = data.draw(legacy_segments(self.injections), label="legacy segment")
        self.injections += 1
        self._do(step)
        relative = step.messages[-1].offset - step.base_offset
        event("legacy segment: " + ("overflows" if relative > INT32_MAX else "fits"))
        closeness = 32.0 - math.log2(1 + abs(relative - INT32_MAX))  # 32 at 2^31−1 itself
        self._score("legacy relative offset near 2^31", max(0.0, closeness))
        tp = (step.topic, step.partition)
        self.created.add(tp)
        self.leo[tp] = step.messages[-1].offset + 1
        copied_damaged = "corrupt" in self.swarm and self.corruptions < 2
        if copied_damaged and coin(data.draw, "legacy segment: copied in damaged", label="damaged copy"):
            # copied in damaged (a bit flipped in transit, a copy cut off): a corrupt step on its .log,
            # right away — one whose message offset's sign flipped in an overflowing segment is the
            # way to a split at a negative offset (§5.5)
            files = self._nonempty_files()
            name = f"/{LEGACY_TOPIC}-{step.partition}/{filename_prefix(step.base_offset)}.log"
            path = next((p for p in files if p.endswith(name)), None)
            if path is not None:
                self._corrupt(data, path, files, data.draw(st.sampled_from(CORRUPTIONS), label="kind"), copied=True)
        return tp

    @precondition(lambda self: not self.running and self.set_aside < 1 and len(self.created) > 1)
    @rule(data=st.data())
    def rename_dir(self, data):
        """A partition directory set aside while the broker is down (§2.3 rule 2), with the table's
        chance ("set a partition dir aside"): a future replica (KIP-113) copied into the other data
        dir beside its current log, or a stray one renamed in place — no longer served.  Kafka
        releases before 3.9 do not load such dirs as modelled (unsupported there), so not drawn for them; a
        partition stays to crash inside."""
        if not self._sets_dirs_aside() or not chance(data.draw, "set a partition dir aside"):
            return
        n = self.session.header.data_dirs
        dirs = set(self.session.source.image()[1])
        found = sorted((d, tp) for tp in self.created for d in range(n) if f"d{d}/{tp[0]}-{tp[1]}" in dirs)
        d, tp = data.draw(st.sampled_from(found), label="dir set aside") if found else (0, None)
        kinds = [k for k in choices("set aside as") if self._sets_aside_as(k, tp, n)]
        if not found or not kinds:
            return
        kind = data.draw(st.sampled_from(kinds), label="set aside as")
        future = kind == "future"
        self.set_aside += 1
        if kind == "unassigned":  # the next load renames it -stray (KRaft's isStray)
            self._do(sc.Unassign(tp[0], tp[1]))
        else:
            self._do(fault_steps.RenameDir(tp[0], tp[1], kind, d, (d + 1) % n if future else None, copy=future))
        if future:
            self.moving.add(tp)
        else:
            self._forget(tp)
            self.moving.discard(tp)
        event(f"rename_dir: {kind}")

    def _sets_aside_as(self, kind: str, tp, data_dirs: int) -> bool:
        """Whether ``tp`` may be set aside as ``kind``: a future copy needs another data dir; an
        unassigned partition needs every target to set it aside (4.1 on), and one dir: the kafka
        target names two of a partition in a race."""
        if kind == "future":
            return data_dirs > 1
        if kind == "unassigned":
            return self._sets_unassigned_aside() and tp not in self.moving
        return True

    @precondition(lambda self: self._up() and self.moving)
    @rule(data=st.data())
    def replace_current_with_future(self, data):
        """A replica move between data dirs completed (LogManager.replaceCurrentWithFutureLog,
        KIP-113) on a partition a future copy was made for; with the table's chance a power loss
        inside it ("promotion: power loss inside it", from the in-rule budget as a truncation's):
        between its renames the next load finds two current dirs and the startup fails."""
        tp = data.draw(st.sampled_from(sorted(self.moving)), label="promoted")
        self.moving.discard(tp)
        step = sc.ReplaceCurrentWithFuture(*tp)
        if self._may_crash_in_rule() and chance(data.draw, "promotion: power loss inside it", "promotion crash"):
            if not self.running:
                self._open()
            self._crash(data, inside=True, during=step, counted=self._dry_run(step), in_rule=True)
            return
        result = self._do(step)
        event(f"replace_current_with_future: {'error' if 'error' in result else 'promoted'}")

    @precondition(lambda self: not self.running)
    @rule(data=st.data())
    def open(self, data):
        """The broker comes back, then its replicas do what a restarted replica does ("after open"
        in the weights table): nothing (a leader); the follower's truncation to where its log
        diverges from the leader's (KIP-101, KIP-279: on becoming a follower a replica truncates
        before it fetches), with what follows a truncation (:meth:`truncate`); the follower's
        catch-up alone (no divergence, it fetches at its log end).  Then, when an index was damaged
        while the broker was down, the broker's first retention check (``log.initial.task.delay.ms``
        after start), which goes by each segment's largest timestamp — read from the final entry of
        a time index no recovery checked (KAFKA-10207: a zeroed entry deletes the segment early,
        §7.8); it comes beside the replica's step, not instead of it.

        Right after a load is where three of the loader's decisions show: a clean load has loaded no
        segment's max timestamp, so a truncation that cuts a time index's only entry leaves Kafka's
        max at (−1, base) (§4.7 rule 7); Kafka's loaded time index, full after a graceful shutdown's
        final entry in two slots, rolls the next append where impl's proven view of a damaged
        segment would not (§4.3 rule 4); a graceful shutdown flushed everything, so a follower's
        truncation cuts flushed batches, which Kafka never fsyncs again before the catch-up moves
        the recovery point past them (§4.7, §4.10).  So the replica's step comes right after the
        load, not among the other rules."""
        damaged, self.index_damaged = self.index_damaged, False
        damaged_tp, self.damaged_tp = self.damaged_tp, None
        self._open()
        if not self.running or not self.created:
            return
        after = data.draw(st.sampled_from(AFTER_OPEN), label="after open")
        if after != "nothing":
            if damaged_tp in self.created:
                tp = damaged_tp
            else:
                tp = data.draw(st.sampled_from(sorted(self.created)), label="follower")
            event(f"after open: {after}")
            if after == "follower truncation":
                self.truncate(tp, data)
            else:
                self.append_as_follower(tp, data, 0, self._epoch(tp, self.epochs.get(tp, 0) + 1))
        if self.running and damaged:
            event("after open: retention check")
            self.retention()

    def _up(self) -> bool:
        return self.running or self.down_for >= self.down_rules

    def _do(self, step: sc.Step) -> dict:
        """A broker that is down comes back (an ``open`` step) before an operation that needs it."""
        if not self.running:
            if step.op in NEEDS_BROKER:
                event(f"open before {step.op}")
                self._open()
            else:
                self.down_for += 1
        return super()._do(step)

    def _open(self) -> None:
        result = self._do(sc.Open())
        self._forget_guards()
        # a failed startup (Kafka's failure policy) leaves the broker down: the next operation
        # opens again, on the files the failed load left
        self.running = result.get("started", True)
        self.down_for = 0
        if not self.running:
            event("open: the startup failed")
            return
        model = self.session.model
        if model is None or model.manager is None:
            return
        # what the load found, not what the steps appended: a recovery may have truncated (a follower
        # fetches from its log end offset)
        for tp, files in model.manager.partitions.items():
            self.leo[tp] = files.log.log_end_offset
        recovered = truncated = 0
        for outcome in model.manager.outcomes:
            for branch in outcome.branches:
                event(f"loader: {branch}")
            self.branches_reached.update(outcome.branches)
            recovered += len(outcome.recovered)
            truncated += outcome.truncated_bytes
        self._score("segments recovered at a load", float(recovered))
        splits = sum("5.5 overflowed segment split" in o.branches for o in model.manager.outcomes)
        self._score("overflowed segments split at a load", float(splits))
        self._score("bytes truncated at a load", float(truncated))


def make_crash_machine(backend: str = "sim", targets=("model", "impl"), capture: bool = False):
    """The machine class for ``targets`` on ``backend``; ``capture``: Kafka's own I/O captured, so
    a power loss may be cut from Kafka's journal too."""
    return type(
        f"CrashMachine_{backend}", (CrashMachine,), {"backend": backend, "targets": targets, "capture_kafka_io": capture}
    )
