"""The index checks pass on impl (the state machine itself runs in test_index_machine.py)."""

from __future__ import annotations

from conformance.index_checks import check_index_files_arbitrary_bytes, check_lazy_index_schedules


def test_lazy_index_schedules():
    check_lazy_index_schedules()


def test_index_files_arbitrary_bytes():
    check_index_files_arbitrary_bytes()
