"""The log state machine (conformance/log_machine.py): impl on the simulated backend and on real
files, against the model, every property after every step."""

from __future__ import annotations

from hypothesis import settings

from conformance.log_machine import make_log_machine
from conformance.profiles import FreshCases

SimMachine = make_log_machine("sim")
OsMachine = make_log_machine("os")


# The gate's budgets are a share of the profile's: the nightly profile searches 25 times as far,
# and each mutant's own check (tests/test_mutants.py) keeps proving the machine can fail.
class TestLogMachineSim(FreshCases, SimMachine.TestCase):
    settings = settings(settings(), max_examples=max(10, settings().max_examples // 2))


class TestLogMachineOs(FreshCases, OsMachine.TestCase):
    settings = settings(settings(), max_examples=max(10, settings().max_examples // 8))
