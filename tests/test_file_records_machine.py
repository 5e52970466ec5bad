"""Stateful conformance of impl's batch scan (impl.file_records) against the model's, over a file that
grows and is damaged step by step."""

from __future__ import annotations

from hypothesis import settings

from conformance.file_records_machine import make_file_records_machine

FileRecordsMachineTest = make_file_records_machine().TestCase
FileRecordsMachineTest.settings = settings(settings(), stateful_step_count=30)
