"""The crash state machine: the log machine's operations plus power losses, I/O errors and
corruption, checking every DESIGN.md property after every ``open`` (spec §5, §6.2, §9.3).

* At most three crashes per case (``MAX_CRASHES``); a crash falls between steps or inside one —
  any operation, a graceful shutdown, or the loader itself — at its k-th storage operation.  A
  truncation or a cleaning round may draw one more power loss of its own (``IN_RULE_CRASHES``):
  inside it, or right after a truncation, from every crash family.
* Most cases start from a partition with history (``HISTORIES``: rolled segments, flushed and
  checkpointed, an unflushed append on top), so truncations, retention and cleaning rounds that
  remove or replace several segments happen within the first steps.
* A stopped broker comes back: after ``down_rules`` steps while it is down (a corruption, a legacy
  segment, a crash inside the loader, a tick), the next operation is preceded by an ``open``.
* Swarm testing (Groce et al.): each case enables a random subset of the fault families, so some
  cases hammer torn writes while others only lose metadata, and a random subset of the operations
  a fault may interrupt.
* Where a crash falls: a dry run of the interrupted step on a replay of the case so far lists its
  storage operations, and the crash point favours its renames and other name or extent changes;
  a crash image between steps favours losing or keeping exactly those pending operations.
* ``event()`` names every loader branch the model took (§5.2–§5.6 rule numbers, from
  :class:`model.log_manager.LoadOutcome`), so the statistics show which ones CI reaches;
  ``target()`` steers toward many pending operations at a crash, deep crash points (the storage
  operation a fault interrupts: a split's or a cleaning round's renames), bytes truncated at
  recovery and segments recovered.

Every case is a scenario: a failure prints it as JSON, replayable with ``klc replay``.
"""

from __future__ import annotations

import math
import struct

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from conformance import scenario as sc
from conformance.crash_images import CORRUPTIONS, FAMILIES, FILLS, UNITS, Fault, journal
from conformance.log_machine import DAY, LogMachine, configs
from conformance.runner import DISK_STEPS, FAULT_STEPS, Session
from conformance.sim_storage import Create, Rename, Truncate, Unlink
from conformance.strategies import batch_ends, damage_site, final_entry
from model.file_records import iterate_file
from model.names import NameError_, filename_prefix, parse_topic_partition

MAX_CRASHES = 3
# power losses a truncation or a cleaning round draws for itself (during it, or right after a
# truncation), beside the rules' MAX_CRASHES: drawn from the same budget, they left fewer crashes for
# the loader, where splits and swaps are interrupted (stop 24: both swap-completion rows lost); with
# a budget of their own the swap rows came back on seeds 0–1 (stop 25)
IN_RULE_CRASHES = 1
# the operations a crash or an I/O error may interrupt while the broker runs (the loader when it is
# down); each case enables a random subset, so some cases interrupt only cleaning rounds or only
# truncations — where a rename order matters — instead of one in eleven (swarm testing again)
INTERRUPTIBLE = (
    "append", "roll", "truncate", "truncate_fully", "delete_records", "flush",
    "retention", "checkpoint", "shutdown", "tick", "clean",
)  # fmt: skip
FAULT_KINDS = FAMILIES + ("fail_io", "corrupt")
LEGACY_TOPIC = "legacy"  # inject_legacy_segment's partitions: never created by a create step
INT32_MAX = 2**31 - 1


@st.composite
def legacy_segments(draw, partition: int):
    """An ``inject_legacy_segment`` step (spec §7.9): 1–6 v0/v1 messages, plain or in compressed
    wrappers, whose offset gaps are small or land around 2^31 so that a segment holds relative
    offsets just below, at or above the largest an index can store (KAFKA-4451, KAFKA-5413)."""
    magic = draw(st.sampled_from([0, 1]), label="magic")
    codec = draw(st.sampled_from(["none", "none", "gzip", "snappy", "lz4"]), label="codec")
    indexes = draw(st.booleans(), label="indexes")
    first = draw(st.sampled_from([0, 0, 7, 2**31, 2**32 + 5]), label="first offset")
    messages, offset = [], first - 1
    for _ in range(draw(st.integers(1, 6), label="messages")):
        gap = draw(
            st.integers(1, 3)
            | st.integers(INT32_MAX - 3, INT32_MAX + 3)
            | st.integers(INT32_MAX // 2 - 2, INT32_MAX // 2 + 2),
            label="gap",
        )
        records = draw(st.integers(1, 3), label="records") if codec != "none" else 1
        offset += gap + records - 1
        messages.append(sc.LegacyMessage(offset, records))
    # a file base below the first offset (what a cleaned segment has) only with its indexes: without
    # them a clean load splits a segment the map does not hold yet and leaves the original in place
    # next to the split ones (docs/swap-files.md, "a split at a clean load")
    below = draw(st.sampled_from([0, 0, 1, 5]), label="base below first") if indexes else 0
    base = max(0, messages[0].first - below)
    return sc.InjectLegacySegment(
        LEGACY_TOPIC, partition, 0, base, tuple(messages), magic, codec, indexes, 1_600_000_000_000
    )


def faults(families, pending: int, marks: tuple[int, ...] = (), cuts: tuple[int, ...] = ()):
    """A crash image description from ``families``, its op numbers around ``pending``; ``marks``
    are the pending operations that change a name or an extent (create, rename, unlink, truncate):
    half the op numbers fall on or right after one of them, where ordering bugs live (a truncation's
    unsynced renames or cut: the exhaustive sweep's findings, out of the machine's reach when every
    op number was as likely).  ``cuts``, those of the marks that shorten a ``.log``: a loss of one
    name or extent change is one of them a third of the time, and half the faults (when the
    families include reorderings) lose exactly one of them."""
    n = max(pending, 1) + 8
    ops = st.integers(0, n)
    if marks:
        ops = st.sampled_from(marks) | ops
        keep = st.sampled_from(marks).flatmap(lambda i: st.sampled_from([i, i + 1])) | st.integers(0, n)
    else:
        keep = ops
    lose = st.lists(ops, max_size=4).map(lambda xs: tuple(sorted(set(xs))))
    if marks:
        # half the time exactly one name or extent change lost, the others kept: the crash states
        # of one reordering (ALICE), where a truncation's unsynced cut under a catch-up's new
        # segment, or one of its unsynced renames, comes back (§4.7; the exhaustive sweep's
        # "every single lost operation"); a list of up to four drawn ops seldom lost just one mark
        lose = st.sampled_from(marks).map(lambda i: (i,)) | lose
    if cuts:
        # a segment's cut lost and what came after it kept: a truncation's cut of a segment below
        # the recovery point, which Kafka never fsyncs, under the catch-up's new segment (§4.7,
        # §4.10; corpora/crash/truncate-cut-durable-before-the-recovery-point.json).  Among the
        # other marks — the catch-up's roll creates and resizes three files — it was one in six or
        # more, and the machine missed that row on every seed within 60 s (stop 25)
        lose = st.sampled_from(cuts).map(lambda i: (i,)) | lose
    by_family = {
        "process": st.just(Fault("process")),
        "prefix": st.builds(Fault, st.just("prefix"), keep=keep),
        "reorder": st.builds(Fault, st.just("reorder"), lose=lose),
        "torn": st.builds(
            Fault,
            st.just("torn"),
            op=ops,
            unit=st.sampled_from(UNITS),
            cut=st.integers(0, 8),
            fill=st.sampled_from(FILLS),
            seed=st.integers(0, 7),
        ),
        "size_ahead": st.builds(Fault, st.just("size_ahead"), op=ops),
        "metadata": st.builds(Fault, st.just("metadata"), lose=lose, data=st.booleans()),
    }
    chosen = [by_family[f] for f in FAMILIES if f in families]
    # with name or extent changes pending, the families that lose some of them and keep others (a
    # cut lost under a catch-up's new batches, one rename of several kept) twice as likely: drawn
    # evenly, a power loss after a truncation and a catch-up lost nothing selectively in 11 of 13
    # distinct cases a minute (a probe at stop 24: process crashes, torn writes, prefixes)
    chosen += [by_family[f] for f in ("reorder", "metadata") if f in families and marks]
    if cuts and "reorder" in families:
        # a pending cut of a .log is the rarest crash state and the one Kafka gets wrong (truncateTo
        # never fsyncs it, §4.7): half the power losses with one pending lose exactly it.  Among the
        # families and the other marks it was lost alone in about one power loss in twelve, and
        # truncate-cut-unsynced went unfound within 60 s on every seed (stops 25–26)
        lose_a_cut = st.builds(Fault, st.just("reorder"), lose=st.sampled_from(cuts).map(lambda i: (i,)))
        return st.one_of(lose_a_cut, st.one_of(chosen))
    return st.one_of(chosen)


# (segments, settled) before the first drawn step: one in six from an empty partition, the others
# from a log of one to four rolled segments.  The empty partition was in two of seven entries, and
# 47% of cases started empty (Hypothesis's mutations of a case keep its history), 17% with two leader
# epochs or more — what a damaged epoch checkpoint needs (§6.5; a probe at stop 25, seed 0, 150 cases)
HISTORIES = ((3, True), (4, True), (2, True), (3, False), (1, False), (0, False))
# steps a stopped broker refuses (the targets answer NotRunning): all but a tick, an open and what
# the runner does to the disk; an ``open`` is inserted before them while the broker is down
NEEDS_BROKER = frozenset(
    op for op, cls in sc.STEPS.items() if not issubclass(cls, (sc.Tick, sc.Open, *FAULT_STEPS, *DISK_STEPS))
)
# what a restarted broker's replicas do first (CrashMachine.open)
AFTER_OPEN = ("nothing", "follower truncation", "follower catch-up")
MARKED = (Create, Rename, Unlink, Truncate)  # journal entries a crash image may keep or lose by name
TURNS = ("rename", "unlink", "truncate", "create", "fsync_dir")  # a step's operations worth crashing at


def _at_op(data, counted: list[str] | None = None) -> int:
    """The storage operation a fault interrupts.  ``counted``, when a dry run of the step gave it,
    lists the step's operations: then the crash falls anywhere in the step or on or right after one
    of its renames, unlinks, truncations, creations or directory syncs — a split at load or a
    cleaning round renames .cleaned → .swap → final around operation 50 to 150, and each rename is a
    different crash state (§5.9; the swap mutants were out of reach with a blind draw).  Without a
    dry run: most steps make fewer than 30 operations, a split or a round up to 160."""
    if counted:
        around = lambda ops: st.sampled_from(ops).flatmap(lambda i: st.sampled_from([i, i + 1]))  # noqa: E731
        choices = [st.integers(0, len(counted))]
        for kinds in (TURNS, ("rename",)):  # renames twice: each is a crash state of its own (ALICE)
            ops = [i for i, what in enumerate(counted) if what in kinds]
            if ops:
                choices.append(around(ops))
        return data.draw(st.one_of(choices), label="at_op")
    return data.draw(st.integers(0, 30) | st.integers(31, 160), label="at_op")


def _is_text_checkpoint(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "." not in name or name.endswith("checkpoint")


def _recovery_points(files: dict[str, bytes]) -> dict[str, int]:
    """Partition directory → the recovery point its data directory's checkpoint holds (what the
    next unclean load recovers from, §5.6), for the entries that parse."""
    out = {}
    for path, content in files.items():
        data_dir, _, name = path.rpartition("/")
        if name != "recovery-point-offset-checkpoint":
            continue
        for line in content.decode("ascii", "replace").splitlines()[2:]:
            fields = line.split(" ")
            if len(fields) == 3 and fields[1].isdigit() and fields[2].lstrip("-").isdigit():
                out[f"{data_dir}/{fields[0]}-{fields[1]}"] = int(fields[2])
    return out


def _recovered_logs(logs: list[str], files: dict[str, bytes]) -> list[str]:
    """The ``.log`` files an unclean load would recover: in each partition, the segment holding the
    recovery point and every one after it (§5.6 step 1a) — the only ones whose damage a recovery
    reads (the one torn in the middle of the unflushed ones deletes those after it, §5.6 step 1b)."""
    points, by_dir = _recovery_points(files), {}
    for p in logs:
        by_dir.setdefault(p.rsplit("/", 1)[0], []).append(p)
    out = []
    for d, paths in by_dir.items():
        names = ((p.rsplit("/", 1)[1].split(".")[0], p) for p in paths)
        bases = sorted((int(n), p) for n, p in names if n.isdigit())  # not a negative base's (§5.5)
        point = points.get(d, 0)
        floor = max((b for b, _ in bases if b <= point), default=None)
        out += [p for b, p in bases if floor is None or b >= floor]
    return sorted(out)


def _indexed_batches(files: dict[str, bytes], path: str) -> tuple[int, ...]:
    """Positions in the ``.log`` at ``path`` of the batches its indexes' entries name: the offset
    index's positions, the batch holding each time index entry's offset (§3.1, §3.2).  Entries are
    read as Kafka lists them, up to the first zero slot (preallocated padding)."""
    stem, content = path[: -len("log")], files[path]
    try:
        base = int(path.rsplit("/", 1)[1].split(".")[0])
    except ValueError:
        return ()
    positions = set()
    offsets = files.get(stem + "index", b"")
    for i in range(0, len(offsets) - 7, 8):
        relative, position = struct.unpack_from(">ii", offsets, i)
        if i and relative == 0 and position == 0:
            break
        positions.add(position)
    named = set()
    times = files.get(stem + "timeindex", b"")
    for i in range(0, len(times) - 11, 12):
        timestamp, relative = struct.unpack_from(">qi", times, i)
        if timestamp == 0 and relative == 0:
            break
        named.add(base + relative)
    out = []
    for b in iterate_file(content, validate=False).batches:
        try:
            first, last = b.header().offset, b.header().last_offset
        except Exception:  # noqa: BLE001 — a batch too damaged to name offsets: named by position only
            first, last = 0, -1
        if b.position in positions or any(first <= o <= last for o in named):
            out.append(b.position)
    return tuple(out)


def _damaged_file(files: dict[str, bytes]):
    """Each of these equally likely: an inactive segment's .log that an unclean load recovers; a
    partition's active segment's .log (twice: every load reads it); its .index or .timeindex (what
    a clean load trusts unread, KAFKA-7283: the offset index's last entry starts the tail it scans,
    the time index's last entry is the max timestamp, a full one rolls the next append — §4.3
    rule 4); the other segments' .index or .timeindex (three times: what no load proves before a
    lookup or a retention uses it, KAFKA-10207); a text checkpoint (recovery point, log start,
    leader epochs...); a partition's leader-epoch checkpoint; an injected legacy segment's .log;
    any kind of file (.index, .timeindex, a snapshot...), each kind as likely as the others."""
    by_kind: dict[str, list[str]] = {}
    for p in files:
        by_kind.setdefault(p.rsplit("/", 1)[-1].split(".", 1)[-1], []).append(p)
    kinds = sorted(by_kind, key=lambda k: (k != "log", k != "index", k != "timeindex", k))
    any_file = st.sampled_from(kinds).flatmap(lambda k: st.sampled_from(by_kind[k]))
    texts = sorted(p for p in files if _is_text_checkpoint(p))
    logs = sorted(by_kind.get("log", ()))
    # each partition's active segment: what a clean load reads the tail of (§4.5 rule 3) and an
    # unclean one recovers (with those above the recovery point, §5.6) — the others a load never reads
    active = sorted({p.rsplit("/", 1)[0]: p for p in logs}.values())
    beside = (p[: -len("log")] + suffix for p in active for suffix in ("index", "timeindex"))
    active_indexes = sorted(p for p in beside if p in files)
    # the active segment's .log twice: the segment every load reads — a clean one its tail, an
    # unclean one all of it (with those above the recovery point).  Of the other segments, those an
    # unclean load recovers (at and past the recovery point): damage below it is read by no load,
    # and a torn segment in the middle of the unflushed ones is what deletes those after it (§5.6
    # step 1b); the active one when there is no other
    recovered = _recovered_logs(logs, files)
    recovered = [p for p in recovered if p not in active] or recovered or logs
    choices = [st.sampled_from(recovered), st.sampled_from(active), st.sampled_from(active)] if logs else []
    choices += [st.sampled_from(active_indexes)] if active_indexes else []
    # the other segments' indexes: what a load that does not recover them (a clean one, or an
    # unclean one below the recovery point) leaves unproven — Kafka trusts the final time entry as
    # the segment's max timestamp for retention and the entries for lookups (KAFKA-10207, §7.8);
    # reached only as "any file of any kind" before (stop 25: 5 damaged inactive indexes in 150
    # cases with this choice once; with it twice, 7 hits in 400 cases at stop 26, and the after-open
    # retention check after two of them): three times
    inactive_indexes = sorted(
        p for p in files if p.endswith((".index", ".timeindex")) and p not in active_indexes
        and p.rsplit(".", 1)[0] + ".log" in files
    )
    choices += [st.sampled_from(inactive_indexes)] * 3 if inactive_indexes else []
    choices += [st.sampled_from(texts)] if texts else []
    # a partition's own checkpoint (the leader-epoch cache a load rebuilds from it, §6.5) as likely as
    # the .logs: among all text checkpoints — two per data directory — it was one damage in fifteen,
    # and no damaged one had two entries in a probe at stop 23 (60 s, seed 0)
    epochs = [p for p in texts if p.count("/") == 2]
    # one with two entries or more when there is one: a single entry cannot go out of order (a probe
    # at stop 24: 41 damaged epoch checkpoints a minute, two with several entries)
    several = [p for p in epochs if files[p].count(b"\n") >= 4]
    choices += [st.sampled_from(several or epochs)] if epochs else []
    # a legacy segment copied in while the broker was down (KAFKA-6264's upgrade path): without its
    # indexes every load recovers it, a clean one too, so its damage — a message offset's sign bit —
    # reaches a split at load whichever way the broker went down (§5.5); most damaged .logs otherwise
    # follow a graceful shutdown, whose clean load recovers none (a probe at stop 23: 12 of 14)
    legacy = [p for p in logs if p.split("/")[1].startswith(f"{LEGACY_TOPIC}-")]
    choices += [st.sampled_from(legacy)] if legacy else []
    return st.one_of(*choices, any_file)


@st.composite
def _field_change(draw, path: str, content: bytes, text: bool) -> tuple[int, int]:
    """One field of a file changed by one bit, as a grammar-aware fuzzer mutates: (offset, bit).

    * a text checkpoint: a digit of an entry (past the version and count lines) with one of its
      low three bits flipped, so it stays a digit and the file still parses — a recovery point or
      log start moved, a leader epoch no longer above the one before it (§6.5, LeaderEpochFileCache's
      constructor assigns entry by entry);
    * a .log (a legacy segment copied in): a batch's base offset, outside the CRC, its sign bit
      (bit 7 of the batch's first byte) or the bit below it flipped — negative, or 2^62 up past the
      segment's relative range: a recovery keeps the batch and splits the segment there, a segment
      named by a negative offset
      (§5.5, LogFileUtils.filenamePrefixFromOffset).

    The generic damage reaches these too, seldom: probes at stop 23 saw one or two such changes per
    minute of the crash machine, and neither mutant that needs one was found on both seeds."""
    if text:
        digits = [i for i, c in enumerate(content) if 0x30 <= c <= 0x39]
        head = content.split(b"\n", 2)
        entries = [i for i in digits if len(head) == 3 and i >= len(head[0]) + len(head[1]) + 2]
        sites, bits = entries or digits or [0], st.integers(0, 2)
    else:
        # not the last batch's when there are others: a negative next offset fails hasOverflow
        # (§4.5 rule 4) and the load refuses the split, which the generic damage reaches too
        starts = batch_ends(content)[:-1] or [0]
        sites, bits = starts[:-1] or starts, st.sampled_from([7, 6])
    return draw(st.sampled_from(sites), label="field"), draw(bits, label="bit")


class CrashMachine(LogMachine):
    monotonic_epochs = True  # else recovery legitimately rebuilds a different epoch cache
    # While the broker is down only what needs it down may be drawn (a corruption, a legacy segment,
    # a crash or an I/O error inside the loader, a tick, ``open``) — for ``down_rules`` steps; then
    # the operations of a running broker may be drawn again, and the first one opens it first.
    # Hypothesis's swarm disables each rule in about half the cases, ``open`` included: without this,
    # such a case spent everything after its first crash or shutdown ticking a stopped broker
    # (measured over 30 s, seed 0: 39% of cases ended down and 13% of all steps ticked a stopped
    # broker; 20% and 4.5% with 6).  Not fewer than 6: those stuck cases were also where a loader
    # was crashed again and again — the way to a split's interrupted renames (with 2: a third fewer
    # crashes inside the loader, and fewer .swap files renamed at load).
    down_rules = 6
    # the max-timestamp search (−3) a third of the lookups, not a sixth: after a load no segment's
    # max timestamp is loaded, −3 is the lookup that loads them all (``maxBy(_.maxTimestampSoFar)``,
    # §4.1), and after a truncation it is where Kafka's lazily loaded max and the content's part
    # (§4.7 rule 7; corpora/crash/max-timestamp-*.json)
    special_timestamps = (-3, -3, -2, -1)
    # Fault rates: a campaign task narrows these per task (conformance/campaign/tasks.py); the swarm
    # each case draws is cut down to ``swarm_kinds`` (all of them if nothing is left).
    max_crashes = MAX_CRASHES
    swarm_kinds: frozenset[str] = frozenset(FAULT_KINDS)

    def __init__(self):
        super().__init__()
        self.crashes = 0
        self.in_rule_crashes = 0
        self.io_errors = 0
        self.corruptions = 0
        self.injections = 0
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
        compacted=st.booleans(),
        data=st.data(),
    )
    def start(self, config, data_dirs, seed, swarm, interruptible, history, compacted, data):
        # half the cases compacted whatever the drawn config says (three quarters in all, most of
        # them with time and size retention too): a cleaning round is the step whose interrupted
        # renames leave .cleaned and .swap files to the next load (§5.2, §5.9), and a third of the
        # clean steps were refused NotCompacted (a probe at stop 25: 129 of 311 in 200 cases)
        if compacted:
            config = {**config, "cleanup.policy": "compact,delete"}
        header = sc.Scenario((), self.expressible(config), data_dirs, 1_700_000_000_000, seed)
        self.clock = header.clock_start_ms
        self.swarm = frozenset(swarm) & self.swarm_kinds or self.swarm_kinds
        self.interruptible = frozenset(interruptible)
        self.session = Session(header, self.targets, self.backend, faults=True)
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
        prelude.  A case that starts from one empty segment reaches a truncation or retention that
        removes two segments, a torn middle segment or a cleaning group of several segments only
        after many steps, and a crash came after one or two appends in most cases (stop 20's probe:
        73% of crashes found at most one segment per partition).

        Half the segments after the first begin a leader epoch of their own, as on a broker that
        has seen leader elections: the leader-epoch checkpoint then has several entries, which a
        damaged digit can leave no longer increasing (§6.5; with epoch 0 throughout, a probe at
        stop 23 counted 23 damaged epoch checkpoints per 60 s and none with two entries).  Not every
        segment: a truncation that changes the epoch cache writes its checkpoint, whose directory
        fsync makes the truncation's renames durable before a power loss between steps can lose
        them (§6.5, atomic write step 4) — with an epoch per segment, a truncation removing several segments
        always did (stop 24)."""
        for i in range(segments):
            self._history_append(data, tp, i)
            self.roll(tp)
        if settled:
            self._do(sc.Flush(*tp))
            self._do(sc.Checkpoint())
            self._history_append(data, tp, segments)
        event(f"history: {segments} segments" + (", settled" if settled else ""))

    def _history_append(self, data, tp, i: int) -> None:
        """The history's ``i``-th append, by a new leader half the time after the first."""
        if i and data.draw(st.booleans(), label="new leader"):
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

    @precondition(lambda self: self._up())
    @rule(tp=LogMachine.partitions, data=st.data())
    def truncate(self, tp, data):
        """A follower's truncation (KIP-101: to the offset where its log diverges from the new
        leader's), then, one time in three, the max-timestamp lookup (−3), then, two times in three,
        the follower's catch-up — the new leader's batches appended at the truncation point, in a
        new segment half the time.

        * A truncation that cuts a time index's only entry before the segment's max timestamp was
          loaded leaves Kafka's max at (−1, base) while batches with timestamps remain (§4.7 rule 7);
          the next append, load or crash makes the difference unobservable, and a −3 lookup drawn
          among the other rules came before those in none of 13 such truncations per 30 s (a probe
          at stop 21).
        * The catch-up is what a follower does next in Kafka (ReplicaFetcherThread).  As one of three
          choices beside "nothing" and the lookup, a catch-up in a new segment and a power loss
          after it came in one of 75 truncations below the recovery point in 400 cases (a probe at
          stop 26).  New batches at
          the offsets a truncation removed are what a crash that loses the cut of the segment below
          turns into offsets going back (§4.7, §4.10: Kafka never fsyncs the cut, and a roll at the
          truncation point flushes nothing, corpora/crash/truncate-cut-durable-before-the-recovery-point.json).
          Drawn among the other rules, a roll and an append on that partition came after a cutting
          truncation seldom enough that the state machines missed it within 60 s (stops 19–21).
        * One truncation in six (when the case may still crash) is interrupted by a power loss at
          one of its storage operations, drawn from a dry run as ``crash_inside`` draws them.
        * Then, one time in three (when the case may still crash; one in two after a catch-up, and
          always after a catch-up over a cut still pending), a power loss between steps: the window
          where a truncation's unsynced renames and cut are pending (§4.7; the exhaustive sweep's
          findings).  Drawn among the other rules, a power
          loss came within five steps of a truncation in 19 distinct cases a minute (a probe at
          stop 24).  It draws from every crash family, not only the case's swarm: the reorderings
          that lose one of those operations and keep the others were in the swarm of 8 of 49 such
          power losses (a probe at stop 26).  With a cut pending, :func:`faults` loses exactly it
          half the time (truncate-cut-unsynced: 0/2 seeds within 60 s at stop 26, 2/2 in 14 s with
          both changes, a probe at stop 27)."""
        if self._may_crash_in_rule() and data.draw(st.integers(0, 5), label="power loss during") == 0:
            # the truncation itself interrupted: its renames of the segments above the target (one
            # per file), then the cut (§4.7) — a probe at stop 24 saw 4 crashes inside a truncation
            # in 498 cases, the crash_inside rule's other steps and the loader drawn far more often
            step = sc.Truncate(tp[0], tp[1], self._offset(data, tp, self.leo.get(tp, 0) + 1))
            if not self.running:  # a stopped broker's truncation would be refused, the fault after it
                self._open()
            self._crash(data, inside=True, during=step, in_rule=True)
            return
        super().truncate(tp, data)
        if data.draw(st.integers(0, 2), label="max-timestamp lookup") == 0:
            self._do(sc.OffsetForTimestamp(tp[0], tp[1], -3))
        caught_up = self.running and data.draw(st.integers(0, 2), label="catch-up") > 0
        if caught_up:
            if data.draw(st.booleans(), label="catch-up in a new segment"):
                self._do(sc.Roll(*tp))
            epoch = self._epoch(tp, self.epochs.get(tp, 0) + 1)
            self.append_as_follower(tp, data, 0, epoch)
        crash_odds = st.integers(0, 1 if caught_up else 2)
        # a catch-up over a cut still pending: the power loss comes (the window of §4.7's unsynced
        # cut under the new leader's batches; with the power loss drawn one time in two, the whole
        # chain — a cut below the recovery point, a catch-up in a new segment, a power loss that
        # loses the cut alone — came about once in seventy such truncations, by the odds at stop 26)
        cut_pending = caught_up and self.running and bool(self._pending()[2])
        if (
            self.running
            and self._may_crash_in_rule()
            and (cut_pending or data.draw(crash_odds, label="power loss after") == 0)
        ):
            self._crash(data, inside=False, in_rule=True)

    @precondition(lambda self: self._up())
    @rule(tp=LogMachine.partitions, data=st.data())
    def clean(self, tp, data):
        """A cleaning round, one in three (when the case may still crash) interrupted by a power
        loss at one of its storage operations — drawn from a dry run, on or right after a rename
        most of the time: ``.cleaned`` → ``.swap``, the originals → ``.deleted``, ``.swap`` → final,
        each a crash state the next load completes or rolls back (§5.2 steps 1e–4, §5.9, KAFKA-12520).
        Drawn among the other steps by ``crash_inside``, a cleaning round was interrupted in none of
        600 cases (a probe at stop 25: clean in a random subset of the interruptible steps, then one
        of them, on a partition with something to clean), and no load found a ``.swap``."""
        if self._may_crash_in_rule() and data.draw(st.integers(0, 2), label="power loss during cleaning") == 0:
            step = sc.Clean(*tp)
            if not self.running:
                self._open()
            counted = self._dry_run(step)
            if counted and "rename" in counted:  # a round with a group to swap in
                self._crash(data, inside=True, during=step, counted=counted, in_rule=True)
                return
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

    def _pending(self) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """How many operations are pending, which of them change a name or an extent, and which of
        those shorten a ``.log`` (a truncation's cut)."""
        storage = self.session.source.raw_storage
        ops = journal(storage)
        marks = tuple(i for i, (_, op) in enumerate(ops) if isinstance(op, MARKED))
        logs = {id(node) for name, node in storage.inodes() if name.endswith(".log")}
        cuts = tuple(i for i in marks if isinstance(ops[i][1], Truncate) and id(ops[i][0]) in logs)
        return len(ops), marks, cuts

    def _dry_run(self, step: sc.Step) -> list[str] | None:
        """The storage operations ``step`` would make now, by name, in order: the scenario so far
        replayed on a fresh impl (simulated, deterministic), then ``step`` run on it.  None when
        the replay does not get there (a refusal, an exception: the caller draws blind)."""
        replay = Session(self.session.header, ("impl",), "sim", faults=True)
        try:
            for done in self.session.steps:
                replay.step(done)
            target = replay.source
            if replay.broken or target is None:
                return None
            storage = target.storage
            storage.arm(None)
            storage.counted = []
            try:
                target.apply(step)
            finally:
                counted, storage.counted = storage.counted, None
            return counted
        except Exception:  # noqa: BLE001 — the real run reports it
            return None
        finally:
            replay.close()

    def _interrupted_step(self, data) -> sc.Step:
        """A step to interrupt: any state-changing operation while running, the loader when not."""
        if not self.running:
            return sc.Open()
        tps = sorted(self.created)
        topic, partition = data.draw(st.sampled_from(tps), label="partition")
        leo = self.leo.get((topic, partition), 0)
        kind = data.draw(st.sampled_from(sorted(self.interruptible)), label="interrupted")
        if kind == "append":
            batches = tuple(sc.BatchSpec(self._records(data)) for _ in range(data.draw(st.integers(1, 3))))
            return sc.Append(topic, partition, batches, True, self.epochs.get((topic, partition), 0))
        if kind == "roll":
            return sc.Roll(topic, partition)
        if kind in ("truncate", "delete_records"):
            offset = self._offset(data, (topic, partition), leo + 1)
            return (sc.Truncate if kind == "truncate" else sc.DeleteRecords)(topic, partition, offset)
        if kind == "truncate_fully":
            return sc.TruncateFully(topic, partition, data.draw(st.integers(0, leo + 50), label="offset"))
        if kind == "flush":
            return sc.Flush(topic, partition, None)
        if kind == "clean":
            return sc.Clean(topic, partition)
        if kind == "tick":
            return sc.Tick(data.draw(st.sampled_from([1000, DAY])))
        return {"retention": sc.Retention, "checkpoint": sc.Checkpoint, "shutdown": sc.Shutdown}[kind]()

    def _interrupt_at(self, data, during: sc.Step, counted: list[str] | None = None) -> int:
        """The operation of ``during`` to interrupt, drawn from a dry run of it (``counted``, if the
        caller made it); ``target()`` steers toward steps with many renames (a truncation or
        retention removing several segments, a split, a cleaning round: where Kafka's unsynced or
        misordered renames lose data)."""
        counted = counted or self._dry_run(during)
        if counted:
            self._score("renames in an interrupted step", float(counted.count("rename")))
        return _at_op(data, counted)

    def _after_fault(self, step: sc.Step) -> None:
        self.running = False
        if self.session.broken or not self.session.verdict.results:
            return  # a known Kafka bug was reached: nothing more is judged
        result = self.session.verdict.results[-1].get(self.session.source.name, {})
        if "crashed_at" in result:
            event(f"{step.op}: interrupted at {result['operation']}")
            # deep crash points: the rename phases of a split or a cleaning round lie past op 40
            self._score("storage operation a fault interrupted", float(result["crashed_at"]))
        elif getattr(step, "during", None) is not None:
            event(f"{step.op}: after {step.during.op} completed")

    def _crash(self, data, inside: bool, during: sc.Step | None = None, counted=None, in_rule=False) -> None:
        """A power loss between steps or ``inside`` one (``during``, else drawn), counted against
        the rules' budget or, ``in_rule``, the truncation's or cleaning round's own."""
        if inside and during is None:
            during = self._interrupted_step(data)
        at_op = self._interrupt_at(data, during, counted) if inside else 0
        pending, marks, cuts = self._pending()
        if inside:  # the step's own operations come after these: op numbers up to 20 past them
            fault = data.draw(faults(self._families(in_rule), pending + 20), label="fault")
        else:
            fault = data.draw(faults(self._families(in_rule), pending, marks, cuts), label="fault")
        step = sc.Crash(fault, during, at_op)
        if in_rule:
            self.in_rule_crashes += 1
        else:
            self.crashes += 1
        self._do(step)
        self._score("pending operations at a crash", float(pending))
        event(f"crash family: {fault.family}")
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
    @rule(data=st.data(), error=st.sampled_from(sc.IO_ERRORS))
    def fail_io(self, data, error):
        during = self._interrupted_step(data)
        step = sc.FailIo(during, self._interrupt_at(data, during), error)
        self.io_errors += 1
        self._do(step)
        self._after_fault(step)

    @precondition(lambda self: not self.running and "corrupt" in self.swarm and self.corruptions < 2)
    @rule(data=st.data(), kind=st.sampled_from(CORRUPTIONS))
    def corrupt(self, data, kind):
        nonempty = self._nonempty_files()
        if not nonempty:
            return
        self._corrupt(data, data.draw(_damaged_file(nonempty), label="file"), nonempty, kind)

    def _nonempty_files(self) -> dict[str, bytes]:
        """The crash image's non-empty files, by path, in order: what damage can land in."""
        return {p: b for p, b in sorted(self.session.source.image()[0].items()) if b}

    def _corrupt(self, data, path: str, nonempty: dict[str, bytes], kind: str, copied: bool = False) -> None:
        """Damage ``path``: half the time an index's final entry zeroed, or one field changed by one
        bit where :func:`_field_change` knows the fields — a text checkpoint, or a legacy segment
        ``copied`` in — else ``kind``.
        Not every .log: the generic damage of the last batches' header fields (a CRC-covered field
        a clean load does not check, §4.5 rule 3) is what two mutants need, and halving it lost
        them on both seeds (a full run at stop 23, stopped)."""
        text, index = _is_text_checkpoint(path), path.endswith((".index", ".timeindex"))
        final = final_entry(path, nonempty[path]) if index else None
        if final is not None and data.draw(st.booleans(), label="final entry zeroed"):
            # an index's final entry zeroed, as a preallocated file's padding (KAFKA-10207/19200): a
            # time index's final timestamp 0, the segment's largest timestamp for a retention that
            # trusts it (§7.8).  The generic damage's field edges changed that timestamp in one
            # distinct case of 400 (a probe at stop 26: its high byte is already zero)
            kind, offset, length, seed = "zero", *final, 0
        elif (text or copied) and data.draw(st.booleans(), label="one field changed"):
            kind, length, offset, seed = "bitflip", 1, *data.draw(_field_change(path, nonempty[path], text))
        else:
            kind, length, offset, seed = self._damage(data, path, nonempty, kind, text)
        self._do(sc.Corrupt(path, offset, length, kind, seed))
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

    @staticmethod
    def _damage(data, path: str, files: dict[str, bytes], kind: str, text: bool) -> tuple[str, int, int, int]:
        """Damage of ``kind`` (a bit flip half the time in a text checkpoint), its length, where and
        its seed."""
        content = files[path]
        if text:
            kind = data.draw(st.just("bitflip") | st.just(kind), label="text damage")
        named = _indexed_batches(files, path) if path.endswith(".log") else ()
        offset = data.draw(damage_site(path, content, kind, text, named), label="offset")
        # 8: a whole int64 field replaced (a base offset junk from its sign byte on: outside the CRC, a
        # recovery keeps the batch and splits its segment at the junk offset, §5.5); in a text
        # checkpoint half the time one character
        lengths = st.sampled_from([1, 4, 8, 61, 512])
        length = data.draw(st.just(1) | lengths if text else lengths, label="length")
        # the seed picks the junk, or the bit a bitflip flips: often bit 7 or 6 of a .log, bits 0–2 of
        # a text (as in _field_change)
        favoured = [0, 1, 2] if text else [6, 7]
        seed = data.draw(st.integers(0, 255) | st.sampled_from(favoured), label="seed")
        return kind, length, offset, seed

    # Also with indexes of a few slots, where the recovery or split of a legacy segment fails on a
    # full index (Kafka's load fails too): a failed load keeps what its recoveries wrote, on both
    # sides (docs/crash-recovery.md, "A failed load"; found/conforms-9d085cfd83, fixed at stop 19).
    # This is the way to a split at load: with 4096-byte indexes only, the swap mutants were gaps.
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
        if "corrupt" in self.swarm and self.corruptions < 2 and data.draw(st.booleans(), label="damaged copy"):
            # copied in damaged (a bit flipped in transit, a copy cut off): a corrupt step on its .log.
            # Drawn among the other rules, a damaged legacy segment was rare (a probe at stop 23: 177
            # injections and no damage of one in 60 s), and one whose message offset's sign flipped
            # in an overflowing segment is the way to a split at a negative offset (§5.5)
            files = self._nonempty_files()
            name = f"/{LEGACY_TOPIC}-{step.partition}/{filename_prefix(step.base_offset)}.log"
            path = next((p for p in files if p.endswith(name)), None)
            if path is not None:
                self._corrupt(data, path, files, data.draw(st.sampled_from(CORRUPTIONS), label="kind"), copied=True)
        return tp

    @precondition(lambda self: not self.running)
    @rule(data=st.data())
    def open(self, data):
        """The broker comes back, then its replicas do what a restarted follower does, each equally
        likely: nothing (a leader); the follower's truncation to where its log diverges from the
        leader's (KIP-101, KIP-279: on becoming a follower a replica truncates before it fetches),
        with what follows a truncation (:meth:`truncate`); the follower's catch-up alone (no
        divergence, it fetches at its log end).  Then, when an index was damaged while the broker
        was down, the broker's first retention check (``log.initial.task.delay.ms`` after start),
        which goes by each segment's largest timestamp — read from the final entry of a time index
        no recovery checked (KAFKA-10207: a zeroed entry deletes the segment early, §7.8).  Drawn
        among the other rules, a retention came after a damaged inactive index seldom enough that
        its mutant was a gap at stop 25; as a fourth choice instead of a follower's step, on every
        load, it diluted the catch-up that KAFKA-10471's mutant needs (9/10 at stop 24, 0/2 at
        stop 25).

        Right after a load is where three of the loader's decisions show: a clean load has loaded no
        segment's max timestamp, so a truncation that cuts a time index's only entry leaves Kafka's
        max at (−1, base) (§4.7 rule 7); Kafka's loaded time index, full after a graceful shutdown's
        final entry in two slots, rolls the next append where impl's proven view of a damaged
        segment would not (§4.3 rule 4); a graceful shutdown flushed everything, so a follower's
        truncation cuts flushed batches, which Kafka never fsyncs again before the catch-up moves
        the recovery point past them (§4.7, §4.10).  Drawn among the other rules, a truncation or
        an append of that partition came first after the load seldom: those three mutants were gaps
        in the 60 s budget at stop 23."""
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
        self._do(sc.Open())
        self.running = True
        self.down_for = 0
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


def make_crash_machine(backend: str = "sim", targets=("model", "impl")):
    return type(f"CrashMachine_{backend}", (CrashMachine,), {"backend": backend, "targets": targets})
