"""The index state machine: the implementation's mmapped indexes against the model, step by step.

Steps: append / maybeAppend (valid and invalid), bulk appends past the warm section, lookups (near
entries and near the warm-section boundary), fetchUpperBoundOffset, truncateTo, truncate, resize,
trim, reset, flush, close and reopen cleanly, reopen after a process crash (zero padding), reopen after
an OS crash that loses dirty pages, and concurrent first access through :class:`LazyIndex` under a
schedule Hypothesis chooses.  After every step the ``conforms`` invariant compares entries, sizes and
the cached last entry; after every reopen what Kafka would conclude from the bytes (entry count and
sanity-check verdict, §3.1 rule 4, §3.5) is compared with the model's conclusion.
"""

from __future__ import annotations

import shutil
import tempfile

from hypothesis import event, target
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import impl.index
from conformance.properties import BAD_INPUT, CONFORMS, PropertyViolation
from conformance.schedule import LAZY_POINTS, Scheduler
from conformance.weights import coin
from impl.errors import IndexFailure as ImplIndexFailure
from impl.storage import OsStorage
from model import indexes as M
from model.errors import IndexFailure as ModelIndexFailure

PAGE = 4096


def _outcome(fn):
    try:
        return ("ok", fn())
    except (ModelIndexFailure, ImplIndexFailure) as e:
        return ("error", e.kind, e.reason)


def well_formed(entries: list, offset_index: bool) -> bool:
    """Offset index: keys and positions strictly increasing and ≥ 0.  Time index: timestamps
    strictly increasing and ≥ 0, offsets non-decreasing and ≥ 0 (relative or absolute alike)."""
    for prev, cur in zip(entries, entries[1:], strict=False):
        if not (cur[0] > prev[0] and (cur[1] > prev[1] if offset_index else cur[1] >= prev[1])):
            return False
    return not entries or (entries[0][0] >= 0 and entries[0][1] >= 0)


def expected_recognition(index) -> list | None:
    """What a reader that is not fooled by zero padding should find in a file Kafka opened as
    ``index`` (a model index straight from ``open_existing``): the slots up to the trailing run of
    all-zero slots, provided they are a well-formed index (strictly increasing keys and positions;
    for a time index increasing timestamps ≥ 0 and non-decreasing offsets) — else None (corrupt:
    rebuild from the log).  All-zero slots at the end are indistinguishable from padding; dropping
    them never changes a lookup's answer (an offset lookup falls back to (base, 0) anyway)."""
    slots = list(index.slots)
    while slots and slots[-1] == (0, 0):
        slots.pop()
    if index.odd_tail or not well_formed(slots, isinstance(index, M.OffsetIndex)):
        return None
    copy = type(index).open_existing(index.base_offset, index.max_index_size, index.file_bytes())
    copy.assume_entries(len(slots))
    return copy.logical_entries()


class IndexMachine(RuleBasedStateMachine):
    """impl's indexes (``index_module``: impl.index, or a mutant of it) against the model's."""

    index_module = impl.index

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="klc-index-")
        self.storage = OsStorage()
        self.most_entries = 0

    def teardown(self):
        target(float(self.most_entries), label="most index entries")  # toward the warm section
        try:
            self.impl.close_handler()
        except Exception:  # noqa: BLE001 - already closed by a failing step
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- set-up -------------------------------------------------------------------------

    @initialize(
        kind=st.sampled_from(["offset", "time"]),
        base=st.sampled_from([0, 1000, 2**40]),
        slots=st.sampled_from([1, 2, 3, 5, 16, 400, 1200]),
        extra=st.integers(0, 11),
    )
    def create(self, kind, base, slots, extra):
        self.kind = kind
        self.model_cls = M.OffsetIndex if kind == "offset" else M.TimeIndex
        self.E = self.model_cls.ENTRY_SIZE
        self.base = base
        self.max_size = slots * self.E + extra
        event(f"index {kind} with {slots} slots")
        self.model = self.model_cls.create(base, self.max_size)
        self.impl = self._open()
        self.flushed = bytes(self.impl.length)  # durable content: a new file reads as zeros

    @property
    def path(self):
        suffix = ".index" if self.kind == "offset" else ".timeindex"
        return f"{self.dir}/{self.base:020d}{suffix}"

    def _open(self):
        cls = self.index_module.OffsetIndex if self.kind == "offset" else self.index_module.TimeIndex
        return cls(self.storage, self.path, self.base, self.max_size)

    # --- helpers ------------------------------------------------------------------------

    def both(self, name, model_fn, impl_fn):
        expected = _outcome(model_fn)
        try:
            actual = _outcome(impl_fn)
        except Exception as e:  # noqa: BLE001
            raise PropertyViolation(BAD_INPUT, f"{name}: impl raised {type(e).__name__}: {e}") from e
        if expected != actual:
            raise PropertyViolation(CONFORMS, f"{name}: impl gives {actual}, model {expected}")
        if expected[0] == "error":
            event(f"{name} refused: {expected[2]}")
        return expected

    def _last(self):
        if self.kind == "offset":
            return self.model.last_offset, self.impl.last_offset
        return self.model.last_entry, self.impl.last_entry

    def _keys(self):
        return [e[0] for e in self.model.logical_entries()]

    def _offsets(self):
        return [e[0] if self.kind == "offset" else e[1] for e in self.model.logical_entries()]

    def _reopened(self, image: bytes, step: str, written: list | None) -> list | None:
        """After reopening on ``image``: Kafka's conclusions agree; impl recognises exactly the
        entries ``written`` (when they are known to be intact) or what the bytes hold, which it
        returns (None: corrupt)."""
        kview = self._kafka_view_agrees(image, step)
        expected = expected_recognition(kview)
        if written is not None:
            while written and written[-1] in ((self.base, 0), (0, self.base)):
                written = written[:-1]  # trailing all-zero slots read as padding
            if not well_formed(written, self.kind == "offset"):
                written = None  # Kafka's index accepts any positions; such a file is corrupt
            if expected != written:
                raise PropertyViolation(
                    CONFORMS, f"{step}: the file holds {expected}, not the entries written: {written}"
                )
        got = None if self.impl.recognition == self.index_module.CORRUPT else self.impl.recognised_entries()
        event(f"{step}: impl recognises {self.impl.recognition}")
        if got != expected:
            raise PropertyViolation(
                CONFORMS,
                f"{step}: impl recognises {'a corrupt index' if got is None else f'{len(got)} entries'} "
                f"({self.impl.recognition}), expected {'a corrupt index' if expected is None else f'{len(expected)} entries'}",
            )
        self.model = kview  # what impl holds: Kafka's entries, zero tail included (impl.index)
        if expected is None:  # corrupt: the loader rebuilds; here both start again empty
            self.both("reset after a corrupt index", self.model.reset, self.impl.reset)
        return expected

    def _rebuilt(self, entries: list) -> None:
        """What the next start's recovery does to the active segment's index (§4.6): reset,
        then the entries appended again from the log — here, the entries the file held."""
        self.both("reset by recovery", self.model.reset, self.impl.reset)
        if self.kind == "offset":
            model_op, impl_op = self.model.append, self.impl.append
        else:
            model_op, impl_op = self.model.maybe_append, self.impl.maybe_append
        for a, b in entries:
            self.both("entry rebuilt by recovery", lambda a=a, b=b: model_op(a, b), lambda a=a, b=b: impl_op(a, b))

    def _kafka_view_agrees(self, image: bytes, step: str):
        """What Kafka concludes from ``image`` (§3.1 rule 4) = what impl reports Kafka concludes."""
        kview = self.model_cls.open_existing(self.base, self.max_size, image)
        if self.impl.entries != kview.entries:
            raise PropertyViolation(
                CONFORMS, f"{step}: Kafka would see {kview.entries} entries, impl says {self.impl.entries}"
            )
        expected = _outcome(kview.sanity_check)
        actual = _outcome(self.impl.kafka_sanity_check)
        if expected != actual:
            raise PropertyViolation(
                CONFORMS,
                f"{step}: Kafka's sanity check on the reopened file gives {expected} in the model, {actual} in impl",
            )
        event(f"{step}: Kafka sanity check {expected[0] if expected[0] == 'ok' else expected[2]}")
        return kview

    # --- appends ------------------------------------------------------------------------

    @precondition(lambda self: self.kind == "offset")
    @rule(delta=st.integers(-2, 40), pos_delta=st.integers(-3, 5000))
    def append(self, delta, pos_delta):
        last_pos = self.model.logical_entries()[-1][1] if self.model.entries else 0
        offset, position = self.model.last_offset + delta, last_pos + pos_delta
        self.both("append", lambda: self.model.append(offset, position), lambda: self.impl.append(offset, position))

    @precondition(lambda self: self.kind == "time")
    @rule(
        ts_delta=st.integers(-2, 40),
        off_delta=st.integers(-2, 40),
        skip=st.booleans(),
        fresh_ts=st.sampled_from([None, -1, 0, 1, 2**40]),
    )
    def maybe_append(self, ts_delta, off_delta, skip, fresh_ts):
        last_ts, last_off = self.model.last_entry
        ts = fresh_ts if fresh_ts is not None and self.model.entries == 0 else last_ts + ts_delta
        offset = last_off + off_delta
        self.both(
            "maybe_append",
            lambda: self.model.maybe_append(ts, offset, skip),
            lambda: self.impl.maybe_append(ts, offset, skip),
        )

    @precondition(lambda self: self.model.max_entries - self.model.entries > 2)
    @rule(n=st.integers(1, 1100), step=st.integers(1, 3))
    def append_many(self, n, step):
        """Bulk appends, enough to pass the warm section (1024 / 682 entries, §3.4)."""
        n = min(n, self.model.max_entries - self.model.entries - 2)
        if self.kind == "offset":
            last_pos = self.model.logical_entries()[-1][1] if self.model.entries else 0
            start = self.model.last_offset if self.model.entries else self.base
            work = [(start + step * (i + 1), last_pos + 100 * (i + 1)) for i in range(n)]
            model_op, impl_op = self.model.append, self.impl.append
        else:
            ts, off = self.model.last_entry
            work = [(max(ts, 0) + step * (i + 1), off + step * (i + 1)) for i in range(n)]
            model_op, impl_op = self.model.maybe_append, self.impl.maybe_append
        for a, b in work:
            self.both("append_many", lambda a=a, b=b: model_op(a, b), lambda a=a, b=b: impl_op(a, b))
        self.most_entries = max(self.most_entries, self.model.entries)

    # --- lookups ------------------------------------------------------------------------

    @rule(data=st.data())
    def lookup(self, data):
        keys = self._keys()
        n = len(keys)
        first_hot = max(0, n - 1 - M.WARM_SECTION_BYTES // self.E)
        near = [k + d for k in (keys[first_hot : first_hot + 2] if keys else []) for d in (-1, 0, 1)]
        picked = data.draw(st.lists(st.sampled_from(keys), max_size=3)) if keys else []
        choices = near + [k + d for k in picked for d in (-1, 0, 1)]
        choices += [self.base - 1, self.base, 2**62, -1]
        t = data.draw(st.sampled_from(choices))
        self.both("lookup", lambda: self.model.lookup(t), lambda: self.impl.lookup(t))

    @precondition(lambda self: self.kind == "offset")
    @rule(data=st.data())
    def fetch_upper_bound(self, data):
        positions = [e[1] for e in self.model.logical_entries()] or [0]
        start = data.draw(st.sampled_from(positions)) + data.draw(st.integers(-1, 1))
        size = data.draw(st.sampled_from([0, 1, 99, 100, 101, 5000]))
        self.both(
            "fetch_upper_bound",
            lambda: self.model.fetch_upper_bound_offset(start, size),
            lambda: self.impl.fetch_upper_bound_offset(start, size),
        )

    @rule(data=st.data())
    def entry(self, data):
        n = data.draw(st.integers(-1, self.model.entries))
        self.both("entry", lambda: self.model.entry(n), lambda: self.impl.entry(n))

    # --- truncation and sizes -----------------------------------------------------------

    @rule(data=st.data())
    def truncate_to(self, data):
        offsets = self._offsets() or [self.base]
        t = data.draw(st.sampled_from(offsets)) + data.draw(st.integers(-1, 1))
        self.both("truncate_to", lambda: self.model.truncate_to(t), lambda: self.impl.truncate_to(t))

    @rule()
    def truncate(self):
        self.both("truncate", self.model.truncate, self.impl.truncate)

    @rule(more=st.integers(-1, 60), odd=st.integers(0, 11))
    def resize(self, more, odd):
        size = (self.model.entries + more) * self.E + odd
        self.both("resize", lambda: self.model.resize(size), lambda: self.impl.resize(size))

    @rule()
    def trim(self):
        self.both("trim", self.model.trim_to_valid_size, self.impl.trim_to_valid_size)
        if self.impl.file_bytes() != self.model.file_bytes():
            raise PropertyViolation(CONFORMS, "trimmed index files differ byte for byte")

    @rule()
    def reset(self):
        self.both("reset", self.model.reset, self.impl.reset)

    @rule()
    def flush(self):
        self.impl.flush()
        self.flushed = self.impl.file_bytes()

    # --- reopen -------------------------------------------------------------------------

    @rule()
    def close_and_reopen(self):
        written = self.model.logical_entries()
        self.both("close", lambda: (self.model.trim_to_valid_size(), None)[1], self.impl.close)
        image = self.model.file_bytes()
        self.impl = self._open()
        self._reopened(image, "clean reopen", written)

    @rule()
    def crash_and_reopen(self):
        """kill -9: the mapping's pages survive in the page cache, the file is not trimmed.  Kafka
        (and impl) open it with every slot an entry; the start's recovery then rebuilds it."""
        written = self.model.logical_entries()
        image = self.impl.file_bytes()
        self.impl.close_handler()
        self.impl = self._open()
        expected = self._reopened(image, "reopen after a process crash", written)
        if expected is not None:  # (a corrupt file was reset already)
            self._rebuilt(expected)

    @rule(data=st.data())
    def os_crash_and_reopen(self, data):
        """Power loss: every page dirtied since the last flush keeps its new or its old content;
        then the loader recovers the active segment (both indexes reset)."""
        written = self.model.logical_entries()
        current = self.impl.file_bytes()
        old = self.flushed[: len(current)].ljust(len(current), b"\0")
        image = bytearray(current)
        lost = 0
        for p in range(0, len(current), PAGE):
            dirty = current[p : p + PAGE] != old[p : p + PAGE]
            lost_page = "index: a dirty page lost at a power loss"
            if dirty and coin(data.draw, lost_page, label=f"page {p // PAGE} lost"):
                image[p : p + PAGE] = old[p : p + PAGE]
                lost += 1
        image = bytes(image)
        event(f"os crash: {lost} dirty pages lost")
        self.impl.close_handler()
        f = self.storage.open(self.path)
        f.write_at(0, image)
        f.close()
        self.impl = self._open()
        self._reopened(image, "reopen after a power loss", written if image == current else None)
        self.both("reset by recovery", self.model.reset, self.impl.reset)
        self.flushed = image

    @rule(order=st.lists(st.integers(0, 1), min_size=1, max_size=8), fresh=st.booleans())
    def lazy_first_access(self, order, fresh):
        """Two threads materialise the same lazy index concurrently (KAFKA-9156, §7.4)."""
        if fresh:  # a just-rolled segment: the index file does not exist yet
            self.impl.close_handler()
            self.storage.unlink(self.path)
            self.model = self.model_cls.create(self.base, self.max_size)
            self.flushed = bytes(self.model.length)
        else:
            self.close_and_reopen()
            self.impl.close_handler()
            # the lazy index reads the file as it is now: a corrupt one the reopen reset was
            # reset in memory, its file left at its slots (zero-filled-index)
            f = self.storage.open(self.path)
            image = f.read(0, f.size())
            f.close()
            self.model = self.model_cls.open_existing(self.base, self.max_size, image)
        factory = (
            self.index_module.LazyIndex.offset_index if self.kind == "offset" else self.index_module.LazyIndex.time_index
        )
        lazy = factory(self.storage, self.path, self.base, self.max_size)
        first, second = Scheduler(order, LAZY_POINTS).run([lazy.get, lazy.get])
        if first is not second or lazy.constructions != 1:
            for index in {id(first): first, id(second): second}.values():
                index.close_handler()
            self.impl = self._open()
            raise PropertyViolation(
                CONFORMS, f"lazy index materialised {lazy.constructions} times under schedule {order} (KAFKA-9156)"
            )
        self.impl = first

    # --- the invariant --------------------------------------------------------------------

    @invariant()
    def conforms(self):
        m, i = self.model, self.impl
        mine = (m.entries, m.length, m.max_entries, m.is_full())
        theirs = (i.entries, i.length, i.max_entries, i.is_full())
        if mine != theirs:
            raise PropertyViolation(
                CONFORMS, f"(entries, length, max entries, full) is {theirs} in impl, {mine} in model"
            )
        last_model, last_impl = self._last()
        if last_model != last_impl:
            raise PropertyViolation(CONFORMS, f"last entry is {last_impl} in impl, {last_model} in model")
        if m.logical_entries() != i.logical_entries():
            raise PropertyViolation(CONFORMS, "index entries differ between impl and model")


def make_index_machine(index_module=impl.index):
    """The machine class for ``index_module`` (impl.index, or a mutant of it)."""
    return type(f"IndexMachine[{index_module.__name__}]", (IndexMachine,), {"index_module": index_module})


def check_index_machine(index_module=impl.index, settings=None) -> None:
    """Run the machine (as a check usable against mutants); raises PropertyViolation."""
    run_state_machine_as_test(
        make_index_machine(index_module),
        settings=settings or hsettings(report_multiple_bugs=False, stateful_step_count=30),
    )
