"""Stateful conformance of the mmapped indexes (impl) against the model."""

from __future__ import annotations

from hypothesis import settings

from conformance.index_machine import make_index_machine

IndexMachineTest = make_index_machine().TestCase
IndexMachineTest.settings = settings(settings(), stateful_step_count=30)
