"""The log state machine (conformance/log_machine.py): impl on the simulated backend and on real
files, against the model, every property after every step."""

from __future__ import annotations

from hypothesis import settings

from conformance.log_machine import make_log_machine
from conformance.profiles import FreshCases

SimMachine = make_log_machine("sim")
OsMachine = make_log_machine("os")


# half the profile's budget in the gate (a quarter on real files): what keeps the gate within its
# 10 minutes; the nightly profile searches 50 times as far
class TestLogMachineSim(FreshCases, SimMachine.TestCase):
    settings = settings(settings(), max_examples=max(10, settings().max_examples // 2))


class TestLogMachineOs(FreshCases, OsMachine.TestCase):
    settings = settings(settings(), max_examples=max(10, settings().max_examples // 4))
