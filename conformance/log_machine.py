"""The log state machine: Hypothesis drives the whole operation set of the log issue through the
one runner (:class:`conformance.runner.Session`), model against impl, checking every property after
every step.  A failure prints the scenario as JSON — replayable with ``klc replay``.

The configuration is drawn once per case with small sizes so that rolls on size, time, full indexes
(KAFKA-6388's empty active segment) and retention all happen within a few steps.  ``target()`` steers
toward many segments and toward clean restarts; ``event()`` labels what each step did.
"""

from __future__ import annotations

import json

from hypothesis import event, target
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, precondition, rule

from conformance import scenario as sc
from conformance.properties import PropertyViolation
from conformance.runner import Session
from conformance.targets.kafka import (
    expires_producers,
    follows_set_aside_dirs,
    has_zstd,
    runs_cleaning_rounds,
    sets_unassigned_logs_aside,
    takes_transaction_versions,
    verifies_transactions,
)
from conformance.weights import chance, choices, weighted
from model.file_records import iterate_file
from model.producer_state import PRODUCER_ID_EXPIRATION_MS

TOPICS = ("t", "orders")
DAY = 86_400_000
STAMPED = "follower append: stamped by a LogAppendTime leader"  # a weight's name (conformance/weights.py)

configs = st.fixed_dictionaries(
    {
        "segment.index.bytes": st.sampled_from([12, 16, 24, 40, 64, 4096]),
        "retention.ms": st.sampled_from([-1, 1000, 60_000, 2 * DAY, 7 * DAY]),
    },
    optional={
        "segment.bytes": st.integers(200, 3000),
        "segment.ms": st.integers(1, 20_000),
        "segment.jitter.ms": st.integers(0, 5_000),
        "index.interval.bytes": st.sampled_from([0, 1, 100, 4096]),
        "flush.messages": st.integers(1, 20),
        "retention.bytes": st.sampled_from([-1, 0, 500, 2000]),
        "file.delete.delay.ms": st.sampled_from([0, 1000, 60_000]),
        "max.message.bytes": st.sampled_from([150, 1048588]),
        # compacted logs: the clean rule cleans them; tombstones past a short horizon go
        "cleanup.policy": st.sampled_from(["compact", "compact,delete"]),
        "delete.retention.ms": st.sampled_from([0, 60_000, DAY]),
        # the leader stamps its clock: lookups, time indexes, retention and rolls go by it (§4.14)
        "message.timestamp.type": st.sampled_from(["CreateTime", "LogAppendTime"]),
        # the leader rebuilds a batch of another codec in the topic's (§4.14): every codec written by the broker
        "compression.type": st.sampled_from(["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"]),
        # a client's transactional batch needs the guard of its producer's verification (KIP-890)
        "transaction.partition.verification.enable": st.booleans(),
    },
)

text = st.text(alphabet="abcxyz", max_size=12)
# keys that repeat, so a cleaning round has superseded values to remove; built once: a strategy built
# inside a rule (``a | b``) is validated again at every draw
_key_options = {"a, b or c": st.sampled_from(["a", "b", "c"]), "any text": text}
keys = weighted("record key", _key_options)
maybe_key = weighted("record key", {**_key_options, "none": st.none()})
maybe_text = weighted("record value", {"text": text, "none": st.none()})
# a record's timestamp jitter, key and value, drawn at once (one draw from a rule costs a third of
# three: Hypothesis's per-draw bookkeeping)
_record = st.tuples(st.integers(-200, 200), maybe_key, maybe_text)
_keyed_record = st.tuples(st.integers(-200, 200), keys, maybe_text)


def _first_offsets(log: bytes) -> list[int]:
    """The base offset of every batch a framing-only scan of a segment's bytes finds (one too
    damaged to name its offset left out)."""
    out = []
    for b in iterate_file(bytes(log), validate=False).batches:
        try:
            out.append(b.header().offset)
        except Exception:  # noqa: BLE001 — damaged past its header: no offset to truncate at
            pass
    return out


class LogMachine(RuleBasedStateMachine):
    """Subclasses (or :func:`make_log_machine`) choose the impl backend."""

    backend = "sim"
    targets = ("model", "impl")
    monotonic_epochs = False  # leader epochs only grow, as in a real cluster (the crash machine)
    special_timestamps = (-3, -2, -1)  # offset_for_timestamp's max-timestamp, earliest and latest

    partitions = Bundle("partitions")

    def __init__(self):
        super().__init__()
        self.session: Session | None = None
        self.running = True
        self.clock = 0
        self.created: set[tuple[str, int]] = set()
        self.leo: dict[tuple[str, int], int] = {}
        self.epochs: dict[tuple[str, int], int] = {}
        # (partition, producer id) → its epoch, next sequence and last batch, as the producer sees them
        self.producers: dict[tuple, tuple[int, int, sc.BatchSpec | None]] = {}
        self.open_txns: set[tuple] = set()  # (partition, producer) with a transactional batch written, no marker yet
        self.coordinators: dict[tuple, int] = {}  # (partition, producer) → the coordinator epoch last written
        # (partition, producer) → the number of the guard its last verification handed out; how
        # many guards the running broker handed out (their numbers start again at a restart)
        self.guards: dict[tuple, int] = {}
        self.handed_out = 0
        self.scores: dict[str, float] = {}

    def _up(self) -> bool:
        """Whether the operations of a running broker may be drawn (the crash machine also lets
        them bring a broker that has been down for a while back up)."""
        return self.running

    def expressible(self, config: dict) -> dict:
        """``config`` as every target can run it: all of it (the kafka target gives each segment the
        scenario's roll jitter in place of Kafka's random draw, docs/kafka-target.md), but zstd on a
        release without it (gzip in its place), and transaction verification on a release whose
        adapter does not run it (off)."""
        if config.get("compression.type") == "zstd" and not all(has_zstd(t) for t in self.targets):
            config = {**config, "compression.type": "gzip"}
        if config.get("transaction.partition.verification.enable") and not self._verifies():
            config = {**config, "transaction.partition.verification.enable": False}
        return config

    def _verifies(self) -> bool:
        """Whether every target verifies transactions (kafka.verifies_transactions)."""
        return all(verifies_transactions(t) for t in self.targets)

    def _forget_guards(self) -> None:
        """The broker started again: the guards it handed out are gone with its memory."""
        self.guards, self.handed_out = {}, 0

    def _holds_legacy(self, tp) -> bool:
        """Whether the model's log of ``tp`` holds a legacy batch a cleaning round would read."""
        model = self.session.model
        if model is None or not model.running or tp not in model.manager.partitions:
            return False
        return model.manager.partitions[tp].log.holds_legacy_batches()

    def _cleans(self) -> bool:
        """Whether every target runs a cleaning round (kafka.runs_cleaning_rounds)."""
        return all(runs_cleaning_rounds(t) for t in self.targets)

    def _sets_dirs_aside(self) -> bool:
        """Whether every target deletes partitions and follows -future and -stray dirs
        (kafka.follows_set_aside_dirs)."""
        return all(follows_set_aside_dirs(t) for t in self.targets)

    def _sets_unassigned_aside(self) -> bool:
        """Whether every target sets aside the logs of a partition its startup's metadata image no
        longer assigns (kafka.sets_unassigned_logs_aside)."""
        return all(sets_unassigned_logs_aside(t) for t in self.targets)

    def _score(self, label: str, value: float, add: bool = False) -> None:
        """target() may be called once per label per case: keep the best, report at teardown."""
        old = self.scores.get(label, 0.0)
        self.scores[label] = old + value if add else max(old, value)

    @initialize(target=partitions, config=configs, data_dirs=st.integers(1, 2), seed=st.integers(0, 3))
    def start(self, config, data_dirs, seed):
        header = sc.Scenario((), self.expressible(config), data_dirs, 1_700_000_000_000, seed)
        self.clock = header.clock_start_ms
        self.session = Session(header, self.targets, self.backend)
        self._do(sc.Create("t", 0, 0))
        self.created.add(("t", 0))
        return ("t", 0)

    def teardown(self):
        for label, value in self.scores.items():
            target(value, label=label)
        if self.session is not None:
            self.session.close()

    # --- the bridge to the runner -------------------------------------------------------------

    def _do(self, step: sc.Step) -> dict:
        if self.session.broken:  # a known Kafka bug was reached: nothing after it is judged
            return {}
        try:
            violations = self.session.step(step)
        except Exception as e:  # a harness error: the scenario up to it replays it with klc replay
            e.add_note(f"scenario: {json.dumps(self.session.scenario.to_json())}")
            raise
        if violations:
            v = violations[0]
            scenario = json.dumps(self.session.scenario.to_json())
            error = PropertyViolation(v.prop, f"{v}\nscenario: {scenario}")
            error.violation, error.scenario = v, self.session.scenario  # for campaigns: no re-parsing
            raise error
        if self.session.verdict.known:
            event(f"known Kafka bug: {self.session.verdict.known.split()[0]}")
            return {}
        result = self.session.verdict.results[-1]
        first = next(iter(result.values()))
        if "error" in first:
            event(f"{step.op} refused: {first['error']}")
        else:
            event(f"{step.op} ok")
        return first

    # --- rules -------------------------------------------------------------------------------------

    @precondition(lambda self: self._up() and len(self.created) < 4)
    @rule(target=partitions, topic=st.sampled_from(TOPICS), partition=st.integers(0, 1), d=st.integers(0, 1))
    def create(self, topic, partition, d):
        self._do(sc.Create(topic, partition, d))
        self.created.add((topic, partition))
        return (topic, partition)

    def _epoch(self, tp, epoch: int) -> int:
        if self.monotonic_epochs:
            epoch = self.epochs[tp] = max(epoch, self.epochs.get(tp, 0))
        return epoch

    def draw_records(self, data, n_max=4, leader=True):
        """Records a producer (or, ``leader=False``, a leader being replicated) sends.  A compacted
        topic's leader refuses a keyless record (§4.14), so a produce request to one carries keys."""
        n = data.draw(st.integers(1, n_max), label="records")
        lag = data.draw(st.sampled_from(choices("records: timestamp lag")), label="lag")
        compacted = "compact" in self.session.header.config.get("cleanup.policy", "delete")
        fields = _keyed_record if leader and compacted else _record
        return tuple(
            sc.Rec(max(0, self.clock - lag + jitter), key, value)
            for jitter, key, value in (data.draw(fields, label="record") for _ in range(n))
        )

    @precondition(lambda self: self._up())
    @rule(tp=partitions, data=st.data(), epoch=st.integers(0, 3), codec=st.sampled_from(choices("append: codec")))
    def append(self, tp, data, epoch, codec):
        epoch = self._epoch(tp, epoch)
        batches = tuple(
            sc.BatchSpec(self.draw_records(data), codec) for _ in range(data.draw(st.integers(1, 3), label="batches"))
        )
        result = self._do(sc.Append(tp[0], tp[1], batches, True, epoch))
        if "last" in result:
            self.leo[tp] = result["last"] + 1
            self._score("log end offset", float(result["last"]))

    @precondition(lambda self: self._up())
    @rule(
        tp=partitions,
        data=st.data(),
        producer=st.sampled_from((1, 2, 3)),
        kind=st.sampled_from(choices("idempotent append: sequence")),
        transactional=st.sampled_from(choices("idempotent append: transactional")),
    )
    def append_idempotent(self, tp, data, producer, kind, transactional):
        """A produce request of an idempotent or transactional producer (docs/producer-state.md
        sections 8 and 9): its next batch, a retry of its last one, a sequence gap, a new epoch or
        an older one."""
        epoch, sequence, last = self.producers.get((tp, producer), (0, 0, None))
        if kind == "retry" and last is not None:
            batch = last
        else:
            if kind == "new epoch":
                epoch, sequence = epoch + 1, 0
            elif kind == "older epoch":
                epoch = max(0, epoch - 1)
            elif kind == "gap":
                sequence += data.draw(st.integers(1, 3), label="gap")
            batch = sc.BatchSpec(self.draw_records(data), producer=(producer, epoch, sequence), transactional=transactional)
        leader_epoch = self._epoch(tp, data.draw(st.integers(0, 3), label="epoch"))
        guard = self._guard(tp, producer, data) if batch.transactional and self._verifies() else 0
        result = self._do(sc.Append(tp[0], tp[1], (batch,), True, leader_epoch, guard))
        if "last" in result and result["first"] >= self.leo.get(tp, 0):  # written, not a retry answered
            self.leo[tp] = result["last"] + 1
            if transactional:
                self.open_txns.add((tp, producer))
            self.producers[(tp, producer)] = (epoch, sequence + len(batch.records), batch)

    @precondition(lambda self: self._up())
    @rule(
        tp=partitions,
        data=st.data(),
        producer=st.sampled_from((1, 2, 3)),
        kind=st.sampled_from(choices("transaction marker")),
    )
    def end_transaction(self, tp, data, producer, kind):
        """The coordinator's marker for a producer (docs/producer-state.md rule 55): COMMIT or
        ABORT at the producer's epoch and the coordinator's epoch, or one a fenced coordinator or
        an older producer epoch sends."""
        self._end_transaction(tp, data, producer, kind)

    @precondition(lambda self: self._up() and self.open_txns)
    @rule(data=st.data())
    def end_open_transaction(self, data):
        """The current coordinator's marker for a transaction with data in the log: an ABORT puts
        it in the active segment's ``.txnindex`` (rule 56), which a crash may tear and segment
        recovery rebuilds (rule 57).  With markers drawn for any producer only, about one case in
        a hundred ended holding a ``.txnindex``."""
        tp, producer = data.draw(st.sampled_from(sorted(self.open_txns)), label="open transaction")
        self._end_transaction(tp, data, producer, "current")

    def _end_transaction(self, tp, data, producer: int, kind: str) -> None:
        epoch, sequence, last = self.producers.get((tp, producer), (0, 0, None))
        coordinator = self.coordinators.get((tp, producer), 0)
        if kind == "fenced coordinator":
            coordinator = max(0, coordinator - 1)
        elif kind == "older producer epoch":
            epoch = max(0, epoch - 1)
        else:
            coordinator += data.draw(st.integers(0, 1), label="coordinator epoch step")
        control = data.draw(st.sampled_from(("COMMIT", "ABORT")), label="control")
        version = 0
        if all(takes_transaction_versions(t) for t in self.targets):
            version = data.draw(st.sampled_from(choices("transaction marker: version")), label="transaction version")
        if version == 2 and kind == "current":  # KIP-890's coordinator bumps the epoch before the marker
            epoch += data.draw(st.integers(0, 1), label="epoch bumped")
        marker = sc.BatchSpec(
            (sc.Rec(self.clock),),
            producer=(producer, epoch, -1),
            control=control,
            coordinator_epoch=coordinator,
            transaction_version=version,
        )
        leader_epoch = self._epoch(tp, data.draw(st.integers(0, 3), label="epoch"))
        result = self._do(sc.Append(tp[0], tp[1], (marker,), True, leader_epoch))
        if "last" in result:
            self.leo[tp] = result["last"] + 1
            self.coordinators[(tp, producer)] = coordinator
            self.open_txns.discard((tp, producer))
            if epoch > self.producers.get((tp, producer), (0, 0, None))[0]:  # a new epoch opens at sequence 0
                self.producers[(tp, producer)] = (epoch, 0, None)

    @precondition(lambda self: self._up())
    @rule(
        tp=partitions,
        data=st.data(),
        gap=st.sampled_from(choices("follower append: offset gap")),
        epoch=st.integers(0, 3),
    )
    def append_as_follower(self, tp, data, gap, epoch):
        epoch = self._epoch(tp, epoch)
        base = self.leo.get(tp, 0) + gap
        batches = []
        for _ in range(data.draw(st.integers(1, 2), label="batches")):
            records = self.draw_records(data, leader=False)
            magic = data.draw(st.sampled_from(choices("follower append: magic")), label="magic")
            codec = "none" if magic == 2 else data.draw(st.sampled_from(("none", "gzip")), label="legacy codec")
            stamped = magic > 0 and data.draw(st.sampled_from(choices(STAMPED)), label="stamped")
            stamp = max(0, self.clock + data.draw(st.integers(-200, 200), label="stamp")) if stamped else None
            batches.append(sc.BatchSpec(records, codec, base, epoch, magic=magic, log_append_time=stamp))
            base += len(records)
        result = self._do(sc.Append(tp[0], tp[1], tuple(batches), False, 0))
        if "last" in result:
            self.leo[tp] = result["last"] + 1

    @precondition(lambda self: self._up())
    @rule(tp=partitions)
    def roll(self, tp):
        self._do(sc.Roll(tp[0], tp[1]))

    @precondition(lambda self: self._up())
    @rule(tp=partitions, data=st.data(), max_bytes=st.sampled_from([0, 1, 100, 1 << 20]), min_one=st.booleans())
    def read(self, tp, data, max_bytes, min_one):
        leo = self.leo.get(tp, 0)
        offset = data.draw(st.integers(-1, leo + 1), label="offset")
        isolation = data.draw(st.sampled_from(choices("read: isolation")), label="isolation")
        max_offset = None
        if isolation == "read_uncommitted":
            max_offset = data.draw(st.none() | st.integers(0, leo + 1), label="max_offset")
        self._do(sc.Read(tp[0], tp[1], offset, max_bytes, max_offset, min_one, isolation))

    @precondition(lambda self: self._up())
    @rule(tp=partitions, data=st.data(), schedule=st.lists(st.integers(0, 1), max_size=10), swap=st.booleans())
    def race(self, tp, data, schedule, swap):
        """An append racing a fetch of what is already there (KAFKA-9156, §7.4): after a rolling
        append both are first to open the new segment's lazy indexes.  Or two fetches of one
        offset, first to open a loaded segment's.  The schedule picks, point by point, which thread
        goes on; a fetch beside the append is bounded by ``max_offset`` so its answer does not
        depend on it."""
        leo = self.leo.get(tp, 0)
        if data.draw(st.sampled_from(choices("race: who races")), label="who") == "two fetches":
            fetch = sc.Read(tp[0], tp[1], data.draw(st.integers(0, leo), label="offset"), 1 << 20, None, True)
            self._do(sc.Race((fetch, fetch), tuple(schedule)))
            return
        bound = {"the log end": st.sampled_from([leo, leo]), "anywhere": st.integers(0, leo + 1)}
        max_offset = data.draw(weighted("race: the fetch's bound", bound), label="max_offset")
        start = {
            "just below its bound": st.sampled_from([max(0, max_offset - 1)]),
            "anywhere": st.integers(0, max_offset),
        }
        offset = data.draw(weighted("race: the fetch's offset", start), label="offset")
        append = sc.Append(tp[0], tp[1], (sc.BatchSpec(self.draw_records(data)),), True, self._epoch(tp, 0))
        threads = (sc.Read(tp[0], tp[1], offset, 1 << 20, max_offset, True), append)
        result = self._do(sc.Race(threads[::-1] if swap else threads, tuple(schedule)))
        for r in result.get("race", ()):
            if "last" in r:
                self.leo[tp] = r["last"] + 1

    @precondition(lambda self: self._up())
    @rule(tp=partitions, data=st.data())
    def offset_for_timestamp(self, tp, data):
        timestamps = {
            "a special timestamp": st.sampled_from(self.special_timestamps),
            "near the clock": st.integers(self.clock - 4 * DAY, self.clock + 1000),
        }
        ts = data.draw(weighted("lookup timestamp", timestamps), label="ts")
        self._do(sc.OffsetForTimestamp(tp[0], tp[1], ts))

    def draw_offset(self, data, tp, high: int) -> int:
        """An offset to truncate or delete records to: anywhere in [0, high], or at a segment's base
        or one past it, where a step stops removing whole segments and starts cutting one (§4.7,
        §4.9: a truncation that removes several segments at once is where Kafka's unsynced renames
        lose data, a state a uniform draw seldom reaches), or at a batch's first offset."""
        anywhere = st.integers(0, high)
        model = self.session.model
        log = model.manager.partitions.get(tp) if model is not None and model.running else None
        if log is None:
            return data.draw(anywhere, label="offset")
        bases = [s.base_offset for s in log.log.segments]
        edge = st.sampled_from(bases).flatmap(lambda b: st.sampled_from([b, b + 1]))
        # a batch's first offset in the last two segments: where a follower truncates (the start of
        # the first leader epoch it does not share with the leader, KIP-101), a cut that keeps the
        # batches below it — anywhere else the batch holding the target goes too (§4.7)
        firsts = sorted({o for seg in log.log.segments[-2:] for o in _first_offsets(seg.log)})
        options = {"anywhere": anywhere, "a segment's base or one past it": edge}
        if firsts:
            options["a batch's first offset"] = st.sampled_from(firsts)
        return data.draw(weighted("truncation offset", options), label="offset")

    @precondition(lambda self: self._up())
    @rule(tp=partitions, data=st.data())
    def truncate(self, tp, data):
        offset = self.draw_offset(data, tp, self.leo.get(tp, 0) + 1)
        result = self._do(sc.Truncate(tp[0], tp[1], offset))
        if result.get("truncated"):
            self.leo[tp] = offset

    @precondition(lambda self: self._up())
    @rule(tp=partitions, data=st.data())
    def truncate_fully(self, tp, data):
        offset = data.draw(st.integers(0, self.leo.get(tp, 0) + 50), label="offset")
        self._do(sc.TruncateFully(tp[0], tp[1], offset))
        self.leo[tp] = offset

    @precondition(lambda self: self._up())
    @rule(tp=partitions, data=st.data())
    def delete_records(self, tp, data):
        self._do(sc.DeleteRecords(tp[0], tp[1], self.draw_offset(data, tp, self.leo.get(tp, 0) + 1)))

    @precondition(lambda self: self._up())
    @rule(tp=partitions, data=st.data())
    def flush(self, tp, data):
        self._do(sc.Flush(tp[0], tp[1], data.draw(st.none() | st.integers(0, self.leo.get(tp, 0) + 1), label="offset")))

    @precondition(lambda self: self._up())
    @rule()
    def retention(self):
        result = self._do(sc.Retention())
        self._score("segments deleted by retention", float(result.get("deleted", 0)), add=True)

    @precondition(lambda self: self._up())
    @rule(tp=partitions)
    def clean(self, tp):
        """One log-cleaner round: groups of inactive segments cleaned and swapped in (§5.9), on
        Kafka by its own Cleaner (4.1 on); not on an older release's kafka target, which does not
        drive Kafka's cleaner (an interrupted round is: the image it leaves is Kafka's to load)."""
        if not self._cleans():
            event("clean: not run on a Kafka release before 4.1")
            return
        if self._holds_legacy(tp):  # Kafka 4.x's rebuild of legacy batches is not modelled (UNSUPPORTED)
            event("clean: not run over legacy batches")
            return
        result = self._do(sc.Clean(tp[0], tp[1]))
        groups = result.get("groups", [])
        if groups:
            self._score("segments in one cleaned group", float(max(len(g) for g in groups)))
            self._score("groups in one cleaning round", float(len(groups)))
            event(f"clean: {len(groups) if len(groups) < 3 else '3+'} groups")

    @precondition(lambda self: self._up() and len(self.created) > 1)  # a partition stays to crash inside
    @rule(tp=partitions, data=st.data())
    def delete_partition(self, tp, data):
        """LogManager.asyncDelete (§2.3 rule 2), with the table's chance each time the rule is picked
        ("delete partition"): the partition is no longer served and may be created anew.  Kafka
        releases before 3.9 do not run it as modelled (unsupported there), so not drawn for them."""
        if not self._sets_dirs_aside() or not chance(data.draw, "delete partition", "delete"):
            return
        model = self.session.targets[0]
        if model.running and tp in model.manager.partitions and model.manager.partitions[tp].log.fresh_segments:
            # a segment made since the load is indexed lazily: whether its index files exist when the
            # log is renamed (and never closed) is Kafka's and impl's to know, not the model's
            event("delete_partition: not drawn over a lazily indexed segment")
            return
        if self._do(sc.DeletePartition(tp[0], tp[1])).get("renamed"):
            self._forget(tp)
            event("delete_partition: renamed")

    def _forget(self, tp) -> None:
        """A deleted partition: what the machine tracked of it goes; a create makes a new log at 0."""
        self.created.discard(tp)
        self.leo.pop(tp, None)
        self.epochs.pop(tp, None)
        for key in [k for k in self.producers if k[0] == tp]:
            del self.producers[key]
        self.open_txns = {k for k in self.open_txns if k[0] != tp}
        self.coordinators = {k: v for k, v in self.coordinators.items() if k[0] != tp}

    @precondition(lambda self: self._up() and self.producers)
    @rule(data=st.data())
    def expire_producers(self, data):
        """The broker's producer expiration check on every log (ProducerStateManager.
        removeExpiredProducers), with the table's chance ("expire producers: at a boundary") after
        the clock moved to one producer's boundary: its last batch's max timestamp plus
        producer.id.expiration.ms, a millisecond before it, at it or after it (isProducerExpired's
        ``>=``).  Not drawn where a kafka target does not run the check (before 3.4)."""
        if not all(expires_producers(t) for t in self.targets):
            return
        model = self.session.targets[0].manager  # None once a startup failed: no producer to aim at
        logs = model.partitions.values() if model is not None else ()
        stamps = sorted({e[5] for p in logs for e in p.log.producer_state.producers.values() if e[7] < 0})
        if stamps and chance(data.draw, "expire producers: at a boundary"):
            due = data.draw(st.sampled_from(stamps), label="a producer's last timestamp") + PRODUCER_ID_EXPIRATION_MS
            when = due + data.draw(st.sampled_from((-1, 0, 1)), label="from its boundary")
            if when > self.clock:
                self.tick(when - self.clock)
        expired = self._do(sc.ExpireProducers()).get("expired", 0)
        event(f"expire_producers: {min(expired, 2)}{'+' if expired > 2 else ''} forgotten")

    @precondition(lambda self: self._up())
    @rule()
    def checkpoint(self):
        self._do(sc.Checkpoint())

    @rule(ms=st.sampled_from([1, 999, 5_000, 60_000, DAY]))
    def tick(self, ms):
        self.clock += ms
        self._do(sc.Tick(ms))

    def _guard(self, tp, producer: int, data) -> int:
        """The guard a transactional produce request brings (its number)."""
        kind = data.draw(st.sampled_from(choices("transactional append: guard")), label="guard")
        if kind == "another handed out" and self.handed_out:
            return data.draw(st.integers(1, self.handed_out), label="guard number")
        if kind == "stale":
            return self.handed_out + 1
        return self.guards.get((tp, producer), 0) if kind == "the producer's" else 0

    @precondition(lambda self: self._up() and self._verifies())
    @rule(tp=partitions, data=st.data(), producer=st.sampled_from((1, 2, 3)))
    def verify_transaction(self, tp, data, producer):
        """The partition's half of a transactional produce's verification (KIP-890): at the
        producer's epoch, its next sequence or one near it."""
        epoch, sequence, _ = self.producers.get((tp, producer), (0, 0, None))
        kind = data.draw(st.sampled_from(choices("verify transaction: sequence")), label="verified sequence")
        seq = {"next": sequence, "lower": max(0, sequence - 1), "higher": sequence + 1}[kind]
        bump = data.draw(st.sampled_from(choices("verify transaction: epoch bump")), label="epoch bump")
        result = self._do(sc.VerifyTransaction(tp[0], tp[1], producer, epoch, seq, bump))
        if result.get("guard"):
            self.guards[(tp, producer)] = result["guard"]
            self.handed_out = max(self.handed_out, result["guard"])

    @precondition(lambda self: self._up())
    @rule()
    def shutdown(self):
        self._do(sc.Shutdown())
        self.running = False

    @precondition(lambda self: not self.running)
    @rule()
    def open(self):
        self._do(sc.Open())
        self.running = True
        self._forget_guards()
        self._score("clean restarts", 1.0, add=True)

    @invariant()
    def segments_seen(self):
        if self.session is not None and self.running:
            state = self.session.targets[0].state()
            if state.get("running"):
                n = max((len(p["segments"]) for p in state["partitions"].values()), default=0)
                self._score("segments in a partition", float(n))


def make_log_machine(backend: str = "sim", targets=("model", "impl")):
    return type(f"LogMachine_{backend}", (LogMachine,), {"backend": backend, "targets": targets})


__all__ = ["LogMachine", "make_log_machine", "consumes"]
