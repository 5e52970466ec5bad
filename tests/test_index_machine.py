"""Stateful conformance of the mmapped indexes (impl) against the model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.index_machine import make_index_machine

IndexMachineTest = make_index_machine().TestCase
IndexMachineTest.settings = settings(settings(), stateful_step_count=30)


def test_a_lazy_index_over_a_file_a_corrupt_reopen_reset():
    """A one-slot offset index holding a negative position is corrupt at its reopen, and reset in
    memory; the lazy index then reads the file, whose slot stays (Kafka: one entry).  The machine
    compared the in-memory reset with what the lazy index read (found by the index machine, stop
    41, seed 1: "(1, 8, 1, True) in impl, (0, 8, 1, False) in model")."""

    @given(st.just(None))
    @settings(max_examples=1, database=None)
    def run(_):
        state = make_index_machine()()
        state.create(kind="offset", base=0, slots=1, extra=0)
        state.append(delta=0, pos_delta=-1)
        state.lazy_first_access(fresh=False, order=[0])
        state.conforms()
        state.teardown()

    run()
