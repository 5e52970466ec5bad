"""Interrupted segment replacements, as the loader finds them (spec §5.2 steps 1–4, §5.9).

The log cleaner and the overflow splitter install new segments with ``replaceSegments`` (§5.9):
write and flush ``.cleaned`` files, rename them ``.cleaned`` → ``.swap`` in descending base order,
rename the originals to ``.deleted``, rename ``.swap`` → final in ascending order, fsync the
directory.  A crash can stop it anywhere; the next start must then either abort the replacement
(originals intact) or complete it (new segments in place), never mix the two.

:data:`CASES` are the rows of the §5.9 crash-point table, plus the three code-reading caveats listed
under it, as hand-made disk images of one partition.  Every case is loaded by the model (Kafka's
loader as a pure function) and by impl, on the simulated backend and on a real directory; they must
agree with each other (``conforms``) and with what the table says the loader does: the log's offsets
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
import tempfile

import attrs

from conformance.properties import CONFORMS, DURABLE, PropertyViolation
from conformance.sim_storage import SimStorage
from impl.config import LogConfig
from model.config import Config
from model.file_records import iterate_file
from model.records import build_batch_v2

T0 = 1_700_000_000_000
DIR = "/k/d0"
PART = f"{DIR}/t-0"
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
    # caveat 2: producer snapshots inside the replaced range are deleted with the originals
    snapshots = {f"{PART}/{b:020d}.snapshot": b"snapshot" for b in (6, 12, 18)}
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


def load_model(case: SwapCase):
    from model.log_manager import load

    manager = load(
        case.image, [DIR], Config.of({"segment.index.bytes": INDEX_BYTES}), lambda: T0, lambda p, b: 0,
        DIRECTORIES,
    )  # fmt: skip
    log = manager.partitions[("t", 0)].log if ("t", 0) in manager.partitions else None
    summary = _summary(
        None if log is None else [(s.base, bytes(s.log)) for s in log.segments],
        next(o.error for o in manager.outcomes if o.name == "t-0"),
    )
    return summary, manager.files()


def load_impl(case: SwapCase, backend: str = "sim"):
    """impl's ``LogManager`` (whatever :mod:`impl.log_manager` is right now: a mutant under
    ``impl_stack``) on the case's image."""
    import impl.log_manager
    from impl.storage import OsStorage

    config = LogConfig(segment_index_bytes=INDEX_BYTES)
    if backend == "sim":
        storage = SimStorage.from_image(case.image, directories=[DIR, PART])
        root = ""
    else:
        root = tempfile.mkdtemp(prefix="klc-swap-")
        for path, data in case.image.items():
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            with open(root + path, "wb") as f:
                f.write(data)
        storage = OsStorage()
    manager = impl.log_manager.LogManager(storage, [root + DIR], config, lambda: T0, lambda p, b: 0)
    try:
        loads = {load.name: load for load in manager.startup()}
        log = loads["t-0"].log
        summary = _summary(
            None if log is None else [(s.base_offset, bytes(s.view())) for s in log.segments], loads["t-0"].error
        )
        for each in manager.logs.values():
            each.close_handlers()
        if backend == "sim":
            files = storage.image()
        else:
            files = {}
            for d, _, names in os.walk(root):
                for n in names:
                    with open(os.path.join(d, n), "rb") as f:
                        files[os.path.join(d, n)[len(root) :]] = f.read()
    finally:
        if backend != "sim":
            storage.close_all()
            import shutil

            shutil.rmtree(root, ignore_errors=True)
    return summary, files


def _summary(segments, error) -> dict:
    if segments is None:
        return {"error": error}
    offsets = [o for _, data in segments for b in iterate_file(data).batches for o in _offsets(b.header())]
    return {"error": error, "segments": [base for base, _ in segments], "offsets": offsets}


def _offsets(h) -> range:
    return range(h.offset, h.last_offset + 1)


def _names(files: dict[str, bytes]) -> set[str]:
    return {p.rsplit("/", 1)[1] for p in files if p.startswith(PART + "/")}


def judge(case: SwapCase, backend: str = "sim") -> None:
    """Raise :class:`PropertyViolation` unless impl (on ``backend``) and the model agree on ``case``
    and both do what §5.9 says."""
    model_summary, model_files = load_model(case)
    impl_summary, impl_files = load_impl(case, backend)
    where = f"swap state {case.name} ({case.row}, {backend})"
    for who, summary, files in (("model", model_summary, model_files), ("impl", impl_summary, impl_files)):
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
    if _names(model_files) != _names(impl_files):
        diff = sorted(_names(model_files) ^ _names(impl_files))
        raise PropertyViolation(CONFORMS, f"{where}: the partition's files differ from the model's: {diff}")
    differing = sorted(
        n for n in _names(model_files)
        if model_files[f"{PART}/{n}"] != impl_files[f"{PART}/{n}"] and not n.endswith(".deleted")
    )  # fmt: skip
    if differing:
        raise PropertyViolation(CONFORMS, f"{where}: file contents differ from the model's: {differing}")


def check_swap_states(module=None) -> None:
    """Every case on impl (or a mutant of one of its log modules), simulated and real backend."""
    from conformance.log_checks import impl_stack

    with impl_stack(module):
        for case in CASES:
            for backend in ("sim", "os"):
                judge(case, backend)
