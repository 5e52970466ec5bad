"""The file-records state machine: impl's batch scan (:mod:`impl.file_records`, Kafka's FileRecords and
its batch iterator) against the model's (:func:`model.file_records.iterate_file`), over one ``.log``
file that grows and is damaged step by step (spec §1.5–§1.10).

Steps: append a batch of any magic and codec (:mod:`conformance.strategies`); damage the file where its
structure turns — the crash machine's ``corrupt`` step with the same sites (the first or last byte of
a header field, a cut that leaves a tail of one of §1.10's lengths past a batch); append a tail of
zeros, ``0xff`` or junk (preallocation, a torn write, a lost page); truncate back to a batch end; and
scan a window from a batch start to any end (a fetch, a recovery from the recovery point).  After
every step ``conforms``: the whole file scans the same on both sides — the valid batches' headers,
where and why the scan stopped, the error — and so does impl's header-free recovery scan.

The crash machine reaches impl.file_records only through whole brokers, where a tail of exactly 17
bytes after a batch never changes what a load does (a cut there leaves the next batch's own length
field, which the torn-tail rule treats like the ignored short tail): this machine is the one that finds
the format mutants (``python -m benchmarks.time_to_catch``).
"""

from __future__ import annotations

from hypothesis import event, target
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

import impl.file_records
from conformance.crash_images import CORRUPTIONS, corrupt
from conformance.formats import check_scan_conforms
from conformance.strategies import TAIL_LENGTHS, any_batch, batch_ends, damage_site

FILE = "00000000000000000000.log"
FILLS = (b"\x00", b"\xff", b"\x7f")


def make_file_records_machine(module=impl.file_records):
    """The machine class for ``module`` (impl.file_records, or a mutant of it)."""

    class FileRecordsMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.data = b""
            self.most_batches = 0

        def teardown(self):
            target(float(self.most_batches), label="valid batches in the file")

        @rule(batch=any_batch)
        def append_batch(self, batch):
            self.data += batch

        @rule(length=st.sampled_from(TAIL_LENGTHS) | st.integers(1, 80), fill=st.sampled_from(FILLS) | st.just(None))
        def append_tail(self, length, fill):
            """What a preallocated file (zeros), a torn write or a lost page leaves past the batches."""
            junk = bytes((i * 131 + length) & 0xFF for i in range(length))
            self.data += fill * length if fill is not None else junk

        @precondition(lambda self: self.data)
        @rule(
            data=st.data(),
            kind=st.sampled_from(CORRUPTIONS),
            length=st.sampled_from([1, 4, 61]),
            seed=st.integers(0, 255),
        )
        def damage(self, data, kind, length, seed):
            offset = data.draw(damage_site(FILE, self.data, kind), label="offset")
            self.data = corrupt({FILE: self.data}, FILE, offset, length, kind, seed)[FILE]
            event(f"damage: {kind}")

        @precondition(lambda self: self.data)
        @rule(data=st.data())
        def truncate_to_a_batch_end(self, data):
            self.data = self.data[: data.draw(st.sampled_from(batch_ends(self.data)), label="end")]

        @precondition(lambda self: self.data)
        @rule(data=st.data())
        def scan_window(self, data):
            """A scan from a batch start to any end, or to one of §1.10's tail lengths past a batch."""
            ends = batch_ends(self.data)
            start = data.draw(st.sampled_from(ends), label="start")
            near = [e + d for e in ends for d in TAIL_LENGTHS if start <= e + d <= len(self.data)]
            anywhere = st.integers(start, len(self.data))
            end = data.draw(st.sampled_from(near) | anywhere if near else anywhere, label="end")
            check_scan_conforms(self.data, start, end, impl_module=module)

        @invariant()
        def conforms(self):
            outcome = check_scan_conforms(self.data, impl_module=module)
            self.most_batches = max(self.most_batches, len(outcome.headers))
            event(f"scan stops: {outcome.stop}")

    return FileRecordsMachine


def check_file_records_machine(module=impl.file_records, settings=None) -> None:
    """Run the machine (as a check usable against mutants); raises PropertyViolation."""
    run_state_machine_as_test(
        make_file_records_machine(module),
        settings=settings or hsettings(report_multiple_bugs=False, stateful_step_count=30),
    )
