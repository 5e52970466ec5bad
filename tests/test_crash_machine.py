"""The crash state machine (conformance/crash_machine.py): power losses, I/O errors and corruption
between and inside operations, every property checked at every open — impl on the simulated
backend, and impl on real files loading the materialised crash images."""

from __future__ import annotations

from hypothesis import settings

from conformance.crash_machine import make_crash_machine

SimCrashMachine = make_crash_machine("sim")
OsCrashMachine = make_crash_machine("os")

TestCrashMachineSim = SimCrashMachine.TestCase
TestCrashMachineSim.settings = settings(settings(), stateful_step_count=40)
TestCrashMachineOs = OsCrashMachine.TestCase
TestCrashMachineOs.settings = settings(settings(), max_examples=max(10, settings().max_examples // 5))
