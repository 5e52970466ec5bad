"""Index checks runnable against ``impl.index`` or any mutant of it (cf. conformance.formats)."""

from __future__ import annotations

import itertools
import shutil
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

import impl.index
from conformance.index_machine import _outcome, check_index_machine, expected_recognition
from conformance.properties import BAD_INPUT, CONFORMS, PropertyViolation
from conformance.schedule import LAZY_POINTS, Scheduler
from impl.storage import OsStorage
from model import indexes as M


def check_lazy_index_schedules(index_module=impl.index) -> None:
    """Every schedule of two threads' first ``get()`` (up to 6 scheduling decisions), on a fresh
    and on an existing index file: one construction, one object (KAFKA-9156, §7.4)."""
    storage = OsStorage()
    for fresh, order in itertools.product((True, False), itertools.product((0, 1), repeat=4)):
        d = tempfile.mkdtemp(prefix="klc-lazy-")
        try:
            path = f"{d}/00000000000000000000.index"
            if not fresh:
                index_module.OffsetIndex(storage, path, 0, 80).close()
            lazy = index_module.LazyIndex.offset_index(storage, path, 0, 80)
            first, second = Scheduler(order, LAZY_POINTS).run([lazy.get, lazy.get])
            objects = {id(first): first, id(second): second}
            for index in objects.values():
                index.close_handler()
            if len(objects) != 1 or lazy.constructions != 1:
                raise PropertyViolation(
                    CONFORMS,
                    f"lazy index built {lazy.constructions} times under schedule {list(order)} (fresh file: {fresh}; KAFKA-9156)",
                )
        finally:
            shutil.rmtree(d, ignore_errors=True)


def check_index_file_bytes(data: bytes, kind: str, base: int, index_module=impl.index) -> None:
    """Any bytes as an index file: impl states what Kafka would conclude exactly as the model does,
    recognises what the oracle recognises, and raises nothing but its declared error."""
    model_cls = M.OffsetIndex if kind == "offset" else M.TimeIndex
    impl_cls = index_module.OffsetIndex if kind == "offset" else index_module.TimeIndex
    d = tempfile.mkdtemp(prefix="klc-idx-")
    try:
        path = f"{d}/{base:020d}.{'index' if kind == 'offset' else 'timeindex'}"
        with open(path, "wb") as f:
            f.write(data)
        kview = model_cls.open_existing(base, 4096, data)
        try:
            index = impl_cls(OsStorage(), path, base, 4096)
            try:
                verdict = _outcome(index.kafka_sanity_check)
                got = None if index.recognition == index_module.CORRUPT else index.recognised_entries()
                kafka_entries = index.entries
            finally:
                index.close_handler()
        except Exception as e:  # noqa: BLE001
            raise PropertyViolation(
                BAD_INPUT, f"opening {len(data)} bytes as a {kind} index raised {type(e).__name__}: {e}"
            ) from e
        if kafka_entries != kview.entries or verdict != _outcome(kview.sanity_check):
            raise PropertyViolation(
                CONFORMS,
                f"{kind} index of {len(data)} bytes: Kafka's view is {kview.entries} entries, {_outcome(kview.sanity_check)}; impl says {kafka_entries}, {verdict}",
            )
        expected = expected_recognition(kview)
        if got != expected:
            raise PropertyViolation(
                CONFORMS, f"{kind} index of {len(data)} bytes: impl recognises {got}, expected {expected}"
            )
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _index_images():
    """Realistic images (entries then zeros, trimmed or not), damaged ones, and junk."""

    @st.composite
    def images(draw):
        kind = draw(st.sampled_from(["offset", "time"]))
        size = 8 if kind == "offset" else 12
        n = draw(st.integers(0, 20))
        if kind == "offset":
            keys = sorted(draw(st.sets(st.integers(0, 10_000), min_size=n, max_size=n)))
            vals = sorted(draw(st.sets(st.integers(1, 10**6), min_size=n, max_size=n)))
            body = b"".join(M.OffsetIndex._FORMAT.pack(k, v) for k, v in zip(keys, vals, strict=True))
        else:
            keys = sorted(draw(st.sets(st.integers(0, 2**40), min_size=n, max_size=n)))
            vals = sorted(draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n)))
            body = b"".join(M.TimeIndex._FORMAT.pack(k, v) for k, v in zip(keys, vals, strict=True))
        body += bytes(size * draw(st.integers(0, 30)))  # preallocated zero tail
        damage = draw(st.sampled_from(["none", "none", "flip", "junk", "cut", "zero-hole", "random"]))
        body = bytearray(body)
        if damage == "flip" and body:
            bit = draw(st.integers(0, len(body) * 8 - 1))
            body[bit // 8] ^= 1 << (bit % 8)
        elif damage == "junk":
            body += draw(st.binary(max_size=40))
        elif damage == "cut" and body:
            del body[draw(st.integers(0, len(body))) :]
        elif damage == "zero-hole" and len(body) > size:
            at = draw(st.integers(0, len(body) // size - 1)) * size
            body[at : at + size] = bytes(size)
        elif damage == "random":
            body = bytearray(draw(st.binary(max_size=120)))
        return kind, draw(st.sampled_from([0, 1000, 2**40])), bytes(body)

    return images()


def check_index_files_arbitrary_bytes(index_module=impl.index) -> None:
    @settings(report_multiple_bugs=False)
    @given(_index_images())
    def run(case):
        kind, base, data = case
        check_index_file_bytes(data, kind, base, index_module)

    run()


INDEX_CHECKS = {
    "index-machine": check_index_machine,
    "lazy-index-schedules": check_lazy_index_schedules,
    "index-files-arbitrary-bytes": check_index_files_arbitrary_bytes,
}
