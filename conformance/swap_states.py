"""Interrupted segment replacements, as the loader finds them (spec §5.2 steps 1–4, §5.9).

The log cleaner and the overflow splitter install new segments with ``replaceSegments`` (§5.9):
write and flush ``.cleaned`` files, rename them ``.cleaned`` → ``.swap`` in descending base order,
rename the originals to ``.deleted``, rename ``.swap`` → final in ascending order, fsync the
directory.  A crash can stop it anywhere; the next start must then either abort the replacement
(originals intact) or complete it (new segments in place), never mix the two.

:data:`CASES` are the rows of the §5.9 crash-point table, plus the three code-reading caveats listed
under it, as hand-made disk images of one partition.  Every case is a scenario whose disk image the
broker finds at its first startup (:func:`scenario`), run by the one runner on the model and impl,
on the simulated backend and on a real directory; they must agree with each other (``conforms``,
and every other property the runner checks after an open) and with what the table says the loader
does: the log's offsets
after the load (``durable`` — a completed replacement must not lose the cleaned data, an aborted one
must keep every original).  ``swap-states`` (:func:`check_swap_states`) runs them all against impl
or a mutant of it.

The partition: an unrelated segment U (offsets 0–5), the originals A (6–11) and B (12–17) that a
cleaning replaces, and the active segment C (18–23); a clean shutdown, so nothing else is recovered.
The cleaning keeps offsets 6–8 and 15–17, as two new segments N6 (base 6) and N12 (base 12) —
two, so that the descending ``.cleaned`` → ``.swap`` renames have an inside.
"""

from __future__ import annotations

import os
import sys

import attrs

from conformance import scenario as sc
from conformance.impl_stack import impl_stack
from conformance.properties import CONFORMS, DURABLE, PropertyViolation
from conformance.regressions import measure
from conformance.runner import Session
from model.producer_state import EMPTY_SNAPSHOT
from model.records import build_batch_v2

T0 = 1_700_000_000_000
ROOT = "/k"  # the images' paths; a scenario's are relative to it
DIR = f"{ROOT}/d0"
PART = f"{DIR}/t-0"
KEY = "d0/t-0"  # the partition as the targets name it
CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpora", "swap-states")
INDEX_BYTES = 4096
SEGMENT_FILES = (".log", ".index", ".timeindex")
DIRECTORIES = {DIR, PART}


def _name(base: int) -> str:
    return f"{PART}/{base:020d}"


def _batches(*firsts: int) -> bytes:
    """Batches of 3 records starting at each of ``firsts``."""
    return b"".join(
        build_batch_v2(f, [(T0 + f + i, f"k{f + i}".encode(), b"v" * 20) for i in range(3)], partition_leader_epoch=0)
        for f in firsts
    )


def _segment(base: int, data: bytes) -> dict[str, bytes]:
    """A segment's files as a clean shutdown leaves them: the log, trimmed empty indexes (a lookup
    then scans from the start: always right)."""
    return {_name(base) + ".log": data, _name(base) + ".index": b"", _name(base) + ".timeindex": b""}


ORIGINALS = {0: _batches(0, 3), 6: _batches(6, 9), 12: _batches(12, 15), 18: _batches(18, 21)}
CLEANED = {6: _batches(6), 12: _batches(15)}  # what the cleaning of A and B keeps
ALL_OFFSETS = tuple(range(24))
AFTER_CLEANING = tuple(range(0, 9)) + tuple(range(15, 24))


def _with_suffix(files: dict[str, bytes], suffix: str, only: tuple[str, ...] = SEGMENT_FILES) -> dict[str, bytes]:
    return {p + suffix if p.endswith(only) else p: d for p, d in files.items()}


def _base_image() -> dict[str, bytes]:
    image = {f"{DIR}/.kafka_cleanshutdown": b"", f"{DIR}/recovery-point-offset-checkpoint": b"0\n1\nt 0 24\n"}
    image[f"{PART}/leader-epoch-checkpoint"] = b"0\n1\n0 0\n"
    for base, data in ORIGINALS.items():
        image |= _segment(base, data)
    return image


def _new(base: int, suffix: str, only: tuple[str, ...] = SEGMENT_FILES) -> dict[str, bytes]:
    """New segment ``base``'s files that end with ``only``, renamed with ``suffix``."""
    return {p + suffix: d for p, d in _segment(base, CLEANED[base]).items() if p.endswith(only)}


def _originals_deleted(*bases: int) -> dict[str, bytes]:
    """The image without the originals ``bases``, which are renamed ``.deleted``."""
    image = _base_image()
    for base in bases:
        for suffix in SEGMENT_FILES:
            image[_name(base) + suffix + ".deleted"] = image.pop(_name(base) + suffix)
    return image


@attrs.frozen
class SwapCase:
    name: str
    row: str  # the §5.9 row or caveat it stands for
    image: dict[str, bytes]
    offsets: tuple[int, ...]  # the log's offsets after the load, as the table says
    segments: tuple[int, ...]  # segment base offsets after the load
    gone: tuple[str, ...] = ()  # files (names in the partition dir) the load must have removed
    kept: tuple[str, ...] = ()  # files it must have kept


def _cases() -> list[SwapCase]:
    cases = []
    add = cases.append
    # 1. crash while writing .cleaned: it is deleted, the originals stay
    partial = _new(6, ".cleaned")
    partial[_name(6) + ".log.cleaned"] = partial[_name(6) + ".log.cleaned"][:-10]
    add(SwapCase("writing-cleaned", "while writing .cleaned", _base_image() | partial, ALL_OFFSETS, (0, 6, 12, 18)))
    # 2. during the descending .cleaned -> .swap renames: N12 renamed, N6 not yet
    add(
        SwapCase(
            "cleaned-to-swap-halfway", "during .cleaned→.swap renames (descending)",
            _base_image() | _new(12, ".swap") | _new(6, ".cleaned"), ALL_OFFSETS, (0, 6, 12, 18),
            gone=(f"{12:020d}.log.swap",),
        )
    )  # fmt: skip
    # 2b. the same, one file further: N6's .log is already .swap, its indexes still .cleaned. A swap
    # at exactly the smallest .cleaned offset is invalid too (≥, not >)
    add(
        SwapCase(
            "swap-at-the-smallest-cleaned-offset", "during .cleaned→.swap renames (descending)",
            _base_image() | _new(12, ".swap") | _new(6, ".swap", (".log",)) | _new(6, ".cleaned", (".index", ".timeindex")),
            ALL_OFFSETS, (0, 6, 12, 18), gone=(f"{6:020d}.log.swap",),
        )
    )  # fmt: skip
    # 3. all renamed to .swap, originals untouched: completed
    add(
        SwapCase(
            "all-swap", "all renamed to .swap, originals untouched",
            _base_image() | _new(6, ".swap") | _new(12, ".swap"), AFTER_CLEANING, (0, 6, 12, 18),
        )
    )  # fmt: skip
    # 4. after some originals were renamed .deleted (ascending: A first): completed
    add(
        SwapCase(
            "some-originals-deleted", "after some originals renamed .deleted",
            _originals_deleted(6) | _new(6, ".swap") | _new(12, ".swap"), AFTER_CLEANING, (0, 6, 12, 18),
            gone=(f"{6:020d}.log.deleted",),
        )
    )  # fmt: skip
    # 5. during the ascending .swap -> final renames: N6 done, N12's .log renamed but not its indexes
    image = _originals_deleted(6, 12) | _segment(6, CLEANED[6]) | _segment(12, CLEANED[12])
    for suffix in (".index", ".timeindex"):
        image[_name(12) + suffix + ".swap"] = image.pop(_name(12) + suffix)
    add(
        SwapCase(
            "swap-to-final-halfway", "during .swap→normal renames (ascending)", image, AFTER_CLEANING, (0, 6, 12, 18)
        )
    )
    # caveat 1: an empty cleaned segment (every record removed) covers an empty range: the originals
    # it replaces are not deleted, its rename only replaces the original with its own base
    empty = _with_suffix({_name(6) + ".log": b"", _name(6) + ".index": b"", _name(6) + ".timeindex": b""}, ".swap")
    add(
        SwapCase(
            "empty-cleaned-segment", "caveat 1: empty new segment",
            _base_image() | empty, tuple(range(0, 6)) + tuple(range(12, 24)), (0, 6, 12, 18),
        )
    )  # fmt: skip
    # caveat 2: producer snapshots inside the replaced range are deleted with the originals; the
    # rebuild then loads the one at 18 (docs/producer-state.md, rules 31 and 14)
    snapshots = {f"{PART}/{b:020d}.snapshot": EMPTY_SNAPSHOT for b in (6, 12, 18)}
    add(
        SwapCase(
            "snapshots-in-the-range", "caveat 2: snapshots in the range deleted",
            _base_image() | snapshots | _new(6, ".swap") | _new(12, ".swap"), AFTER_CLEANING, (0, 6, 12, 18),
            gone=(f"{6:020d}.snapshot", f"{12:020d}.snapshot"), kept=(f"{18:020d}.snapshot",),
        )
    )  # fmt: skip
    # caveat 3: a missing .index.swap is created empty at full preallocated size and renamed into place
    add(
        SwapCase(
            "missing-index-swap", "caveat 3: .index.swap missing",
            _base_image() | _new(6, ".swap", (".log", ".timeindex")) | _new(12, ".swap"), AFTER_CLEANING,
            (0, 6, 12, 18), kept=(f"{6:020d}.index",),
        )
    )  # fmt: skip
    return cases


CASES = _cases()


def scenario(case: SwapCase) -> sc.Scenario:
    """The case as a scenario: its image, found by the broker's first startup, and no steps."""
    image = sc.DiskImage({p.removeprefix(ROOT + "/"): data for p, data in case.image.items()})
    note = f"§5.9 swap state {case.name}: {case.row} (conformance/swap_states.py)"
    return sc.Scenario((), {"segment.index.bytes": INDEX_BYTES}, clock_start_ms=T0, note=note, image=image)


def loaded(case: SwapCase, backend: str = "sim") -> dict[str, tuple[dict, dict]]:
    """Per target (model, impl on ``backend``): the partition after the runner's first open and
    the files it left.  A violation the runner found is raised as :class:`PropertyViolation`."""
    session = Session(scenario(case), ("model", "impl"), backend)
    try:
        if session.verdict.violations:
            v = session.verdict.violations[0]
            raise PropertyViolation(v.prop, f"swap state {case.name} ({backend}): {v.witness}")
        return {t.name: (_summary(t), dict(t.files())) for t in session.targets}
    finally:
        session.close()


def _summary(target) -> dict:
    error = next(load["error"] for load in target.last_load if load["partition"] == "t-0")
    partition = target.state()["partitions"].get(KEY)
    if partition is None:
        return {"error": error}
    offsets = [o for base, last, _ in target.batches().get(KEY, ()) for o in range(base, last + 1)]
    return {"error": error, "segments": [seg[0] for seg in partition["segments"]], "offsets": offsets}


def _names(files: dict[str, bytes]) -> set[str]:
    return {p.rsplit("/", 1)[1] for p in files if p.startswith(KEY + "/")}


def judge(case: SwapCase, backend: str = "sim") -> None:
    """Raise :class:`PropertyViolation` unless impl (on ``backend``) and the model agree on ``case``
    and both do what §5.9 says."""
    where = f"swap state {case.name} ({case.row}, {backend})"
    for who, (summary, files) in loaded(case, backend).items():
        if summary.get("error"):
            raise PropertyViolation(CONFORMS, f"{where}: {who} failed to load the partition: {summary['error']}")
        lost = sorted(set(case.offsets) - set(summary["offsets"]))
        extra = sorted(set(summary["offsets"]) - set(case.offsets))
        if lost:
            raise PropertyViolation(DURABLE, f"{where}: {who} lost offsets {lost} (segments {summary['segments']})")
        if extra or summary["offsets"] != sorted(summary["offsets"]):
            raise PropertyViolation(
                CONFORMS, f"{where}: {who} has offsets {summary['offsets']}, §5.9 says {list(case.offsets)}"
            )
        if tuple(summary["segments"]) != case.segments:
            raise PropertyViolation(
                CONFORMS, f"{where}: {who} has segments {summary['segments']}, §5.9 says {list(case.segments)}"
            )
        names = _names(files)
        left = sorted(n for n in names if n.endswith((".swap", ".cleaned")) or n in case.gone)
        if left:
            raise PropertyViolation(CONFORMS, f"{where}: {who} left {left} behind")
        missing = sorted(set(case.kept) - names)
        if missing:
            raise PropertyViolation(CONFORMS, f"{where}: {who} removed {missing}")


def check_swap_states(module=None) -> None:
    """Every case on impl (or a mutant of one of its log modules), simulated and real backend."""

    with impl_stack(module):
        for case in CASES:
            for backend in ("sim", "os"):
                judge(case, backend)


# the mutants the swap-state check catches (tests/mutants): a case records each one it fails on
MUTANTS = ("mutant:invalid-swap-greater-than", "mutant:swap-completion-deletes-the-segment-before")


def write_corpus(folder: str = CORPUS, targets=("impl", "model", "kafka")) -> list[str]:
    """Store every case as a corpus scenario, with the verdicts it gets now on ``targets`` and on
    each of :data:`MUTANTS` that it catches."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for case in CASES:
        s = scenario(case)
        expect = measure(s, [*targets, *MUTANTS])
        missed = {t for t in MUTANTS if expect["verdicts"][t] == "pass"}
        expect = {k: {t: v for t, v in d.items() if t not in missed} for k, d in expect.items()}
        s = attrs.evolve(s, expect=expect)
        path = os.path.join(folder, f"{case.name}.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(s.dumps())
        paths.append(path)
    return paths


if __name__ == "__main__":  # python -m conformance.swap_states [FOLDER]
    for written in write_corpus(*sys.argv[1:2]):
        print(written)
