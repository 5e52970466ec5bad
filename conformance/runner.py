"""The one scenario runner (DESIGN.md: one runner, one vocabulary, one set of properties).

:func:`run` executes a :class:`~conformance.scenario.Scenario` step by step against the model and/or
impl (on the simulated or the real storage backend) and checks, after every step, the properties
that apply:

* ``conforms`` — with two targets: the same result for every step, the same logical log (log start
  offset, log end offset, recovery point, segment bases, sizes and bytes, leader epochs) and the same
  files (index files too right after a shutdown or an open, when every index is trimmed or resized);
* ``index-agrees`` — every index entry of every live segment names the batch it points at, and a
  lookup through the index equals a scan (what ``kafka-dump-log --verify-index-only`` checks);
* ``clean-restart`` — after a graceful shutdown every index file is trimmed and sane, and the open
  that follows recovers nothing and (impl) reads no log bytes.

Every Hypothesis state machine, corpus case, campaign task and ``klc replay`` goes through here.
"""

from __future__ import annotations

import collections
import struct
import traceback

import attrs

from conformance import scenario as sc
from conformance.properties import CLEAN_RESTART, CONFORMS, DURABLE, INDEX_AGREES  # noqa: E402
from conformance.targets import INDEX_SUFFIXES, is_index_file, make_target
from model.file_records import iterate_file


@attrs.define
class Violation:
    prop: str
    step: int  # index into the scenario's steps (−1: before any step)
    witness: str

    def __str__(self) -> str:
        return f"{self.prop} violated at step {self.step}: {self.witness}"


@attrs.define
class Verdict:
    scenario: sc.Scenario
    targets: list[str]
    results: list[dict] = attrs.Factory(list)  # per step: {target name: result}
    violations: list[Violation] = attrs.Factory(list)
    checked: dict[str, int] = attrs.Factory(dict)  # property → times checked
    load_stats: list[dict] = attrs.Factory(list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict:
        return {
            "targets": self.targets,
            "ok": self.ok,
            "steps": len(self.results),
            "checked": self.checked,
            "violations": [attrs.asdict(v) for v in self.violations],
            "results": self.results,
        }


def _describe(step: sc.Step) -> str:
    if step.partition_level:
        return f"{step.op} {step.topic}-{step.partition}"
    return step.op


def _first_difference(a, b, path="") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'first' if k in a else 'second'}"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}/{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path or '/'}: {_short(a)} != {_short(b)}"


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 160 else text[:157] + "..."


# --- index-agrees ------------------------------------------------------------------------------------


def index_problem(offset_entries, time_entries, log: bytes, active: bool) -> str | None:
    """None if every entry is right about ``log`` (a scan is the truth), else the first problem.

    Not checked: that an inactive segment's last time entry carries its max timestamp (§9.1.4).
    Kafka itself breaks that: after a restart ``truncateTo`` truncates the time index before it
    reloads the max timestamp from it (§4.7 steps 2 and 7), so the max entry is gone for good and
    time retention falls back to the file's mtime.  Lookups stay right, which is what this checks."""
    batches = [(b.position, b.header()) for b in iterate_file(log).batches]
    starts = {p: (h.offset if h.magic >= 2 else h.last_offset) for p, h in batches}
    last_offset = batches[-1][1].last_offset if batches else None
    for i, (key, position) in enumerate(offset_entries):
        if position not in starts:
            return f"offset index entry {i} ({key}, {position}) does not point at a batch start"
        if starts[position] > key or last_offset is None or key > last_offset:
            return f"offset index entry {i} ({key}, {position}) names an offset its batch does not hold"
    running, j = -1, 0
    for i, (ts, offset) in enumerate(time_entries):
        if last_offset is None or offset > last_offset:
            return f"time index entry {i} ({ts}, {offset}) is past the end of the log"
        while j < len(batches) and batches[j][1].last_offset < offset:
            running = max(running, batches[j][1].max_timestamp)
            j += 1
        if running >= ts:
            return f"time index entry {i} ({ts}, {offset}): an earlier batch already reached {running}"
    return None


def trimmed_index_problem(path: str, data: bytes) -> str | None:
    """clean-restart: an index file after a graceful shutdown holds only its entries, in order."""
    size = 8 if path.endswith(".index") else 12
    if path.endswith(".txnindex"):
        return None
    if len(data) % size:
        return f"{path}: length {len(data)} is not a multiple of {size}"
    fmt = struct.Struct(">ii" if size == 8 else ">qi")
    entries = [fmt.unpack_from(data, i) for i in range(0, len(data), size)]
    for i, e in enumerate(entries):
        if e == (0, 0):
            return f"{path}: slot {i} is zero (not trimmed to its entries)"
        if i and (e[0] <= entries[i - 1][0] if size == 8 else e[0] < entries[i - 1][0]):
            return f"{path}: entry {i} {e} does not increase on entry {i - 1} {entries[i - 1]}"
    return None


# --- the runner -------------------------------------------------------------------------------------


class Session:
    """Targets started on a scenario's header; :meth:`step` runs one step and returns the new
    violations.  ``steps`` is the scenario so far (what a failing state machine prints)."""

    def __init__(self, scenario: sc.Scenario, targets=("model", "impl"), backend: str = "sim"):
        self.header = attrs.evolve(scenario, steps=())
        self.targets = [make_target(t, scenario, backend) for t in targets]
        self.verdict = Verdict(scenario, [t.name for t in self.targets])
        self.steps: list[sc.Step] = []
        self._shutdown_at = None
        self.broken = False
        self._apply(sc.Open(), -1)

    @property
    def scenario(self) -> sc.Scenario:
        return attrs.evolve(self.header, steps=tuple(self.steps))

    def step(self, step: sc.Step) -> list[Violation]:
        self.steps.append(step)
        return self._apply(step, len(self.steps) - 1)

    def _apply(self, step: sc.Step, index: int) -> list[Violation]:
        verdict = self.verdict
        before = len(verdict.violations)
        if self.broken:
            return []
        results = {}
        for t in self.targets:
            mark = len(t.trace) if t.trace is not None else 0
            try:
                results[t.name] = t.apply(step)
            except Exception as e:  # an operation neither target should refuse blew up
                where = traceback.extract_tb(e.__traceback__)[-1]
                witness = f"{t.name} raised {type(e).__name__}: {e} at {where.filename.rsplit('/', 1)[-1]}:{where.lineno} during {_describe(step)}"
                verdict.violations.append(Violation(CONFORMS, index, witness))
                self.broken = True
                return verdict.violations[before:]
            if t.trace is not None:
                problem = protocol_problem(t, step, t.trace[mark:])
                _count(verdict, DURABLE)
                if problem:
                    verdict.violations.append(Violation(problem[0], index, f"{t.name}: {problem[1]}"))
        if index >= 0:
            verdict.results.append(results)
        if len(verdict.violations) == before:
            _check(verdict, self.targets, step, index, results, self._shutdown_at)
        if isinstance(step, sc.Shutdown):
            self._shutdown_at = index
        elif not isinstance(step, sc.Tick):
            self._shutdown_at = None
        return verdict.violations[before:]

    def close(self) -> None:
        for t in self.targets:
            t.close()


def run(scenario: sc.Scenario, targets=("model", "impl"), backend: str = "sim", stop_at_first: bool = True) -> Verdict:
    session = Session(scenario, targets, backend)
    try:
        for step in scenario.steps:
            if session.step(step) and stop_at_first:
                break
            if session.broken:
                break
    finally:
        session.close()
    verdict = session.verdict
    verdict.scenario = scenario
    return verdict


CHECKPOINT_NAMES = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "leader-epoch-checkpoint")
MARKER = ".kafka_cleanshutdown"


def protocol_problem(target, step, ops) -> tuple[str, str] | None:
    """§6.5 and §6.3 on the operations one step performed (see :mod:`conformance.tracing`)."""
    base = lambda p: p.rsplit("/", 1)[-1]  # noqa: E731
    parent = lambda p: p.rsplit("/", 1)[0]  # noqa: E731
    for i, op in enumerate(ops):
        if op.name in ("write", "truncate") and base(op.path) in CHECKPOINT_NAMES:
            return (
                DURABLE,
                f"{base(op.path)} in {parent(op.path)} rewritten in place during {_describe(step)}: a crash mid-write would tear it (§6.5: temp file, fsync, rename)",
            )
        if op.name == "rename" and base(op.target) in CHECKPOINT_NAMES:
            last = next((o for o in reversed(ops[:i]) if o.path == op.path), None)
            if last is None or last.name != "fsync":
                return DURABLE, f"{op.path} renamed over {base(op.target)} without an fsync first (§6.5 step 2)"
            if not any(o.name == "fsync_dir" and o.path == parent(op.target) for o in ops[i + 1 :]):
                return DURABLE, f"rename to {op.target} not followed by an fsync of {parent(op.target)} (§6.5 step 4)"
    if isinstance(step, sc.Shutdown):
        for i, op in enumerate(ops):
            if base(op.path) == MARKER and op.name in ("create", "write"):
                d = parent(op.path)
                needed = [f"{d}/{n}" for n in CHECKPOINT_NAMES[:2]]
                done = {o.target for o in ops[:i] if o.name == "rename"}
                missing = [n for n in needed if n not in done]
                if missing:
                    return (
                        CLEAN_RESTART,
                        f"clean-shutdown marker of {d} written before {base(missing[0])} (§6.3: marker last)",
                    )
                late = [
                    o
                    for o in ops[i + 1 :]
                    if o.path.startswith(d + "/") and base(o.path) != MARKER and o.name != "unlink"
                ]
                if late:
                    return (
                        CLEAN_RESTART,
                        f"clean-shutdown marker of {d} written before {late[0].name} of {late[0].path} (§6.3: marker last)",
                    )
    return None


TOTALS: collections.Counter = collections.Counter()  # every check made in this process, by property


def _count(verdict: Verdict, prop: str) -> None:
    verdict.checked[prop] = verdict.checked.get(prop, 0) + 1
    TOTALS[prop] += 1


def _check(verdict: Verdict, made, step, index: int, results: dict, shutdown_at) -> None:
    names = [t.name for t in made]
    settled = isinstance(step, sc.Shutdown | sc.Open)
    if len(made) == 2:
        _count(verdict, CONFORMS)
        a, b = made
        ra, rb = _comparable(results[a.name]), _comparable(results[b.name])
        if ra != rb:
            verdict.violations.append(
                Violation(
                    CONFORMS, index, f"{_describe(step)}: {names[0]} vs {names[1]} result {_first_difference(ra, rb)}"
                )
            )
            return
        sa, sb = a.state(), b.state()
        if sa != sb:
            verdict.violations.append(
                Violation(CONFORMS, index, f"after {_describe(step)}: log state {_first_difference(sa, sb)}")
            )
            return
        fa, fb = _comparable_files(a.files(settled), settled), _comparable_files(b.files(settled), settled)
        if fa != fb:
            diff = sorted(set(fa) ^ set(fb)) or sorted(p for p in fa if fa[p] != fb[p])
            p = diff[0]
            detail = (
                f"only in {names[0] if p in fa else names[1]}"
                if p not in fa or p not in fb
                else f"{len(fa[p])} bytes vs {len(fb[p])} bytes, first difference at byte {_first_byte_diff(fa[p], fb[p])}"
            )
            verdict.violations.append(Violation(CONFORMS, index, f"after {_describe(step)}: file {p}: {detail}"))
            return
    for t in made:
        _count(verdict, INDEX_AGREES)
        for key, (offsets, times, log, active) in sorted(t.index_entries().items()):
            problem = index_problem(offsets, times, log, active)
            if problem:
                verdict.violations.append(Violation(INDEX_AGREES, index, f"{t.name} segment {key}: {problem}"))
                return
    if isinstance(step, sc.Shutdown):
        for t in made:
            _count(verdict, CLEAN_RESTART)
            for path, data in sorted(t.files().items()):
                if path.endswith(INDEX_SUFFIXES):
                    problem = trimmed_index_problem(path, data)
                    if problem:
                        verdict.violations.append(
                            Violation(CLEAN_RESTART, index, f"{t.name} after shutdown: {problem}")
                        )
                        return
    if isinstance(step, sc.Open) and shutdown_at is not None:
        for t in made:
            _count(verdict, CLEAN_RESTART)
            recovered = [(load["partition"], load["recovered"]) for load in t.last_load if load["recovered"]]
            if recovered:
                verdict.violations.append(
                    Violation(CLEAN_RESTART, index, f"{t.name} recovered {recovered} after a graceful shutdown")
                )
                return
            stats = getattr(t, "load_stats", None)
            if stats is not None:
                verdict.load_stats.append(stats)
                if stats["log_bytes_read"] > stats["tail_bytes"]:
                    verdict.violations.append(
                        Violation(
                            CLEAN_RESTART,
                            index,
                            f"{t.name} read {stats['log_bytes_read']} log bytes while loading after a graceful shutdown; "
                            f"only the {stats['tail_bytes']} bytes after the active segments' last index entries are needed",
                        )
                    )
                    return


def _comparable(result: dict) -> dict:
    if "loaded" in result:  # error texts name files the same way but are worded per implementation
        return {"loaded": [{**x, "error": bool(x["error"])} for x in result["loaded"]]}
    return result


def _comparable_files(files: dict[str, bytes], settled: bool) -> dict[str, bytes]:
    """Index files are compared only when settled (right after shutdown or open): in between, an
    index exists only once materialised and its file keeps preallocated slots."""
    if settled:
        return {p: d for p, d in files.items() if not (is_index_file(p) and p.endswith(".deleted"))}
    return {p: d for p, d in files.items() if not is_index_file(p)}


def _first_byte_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
