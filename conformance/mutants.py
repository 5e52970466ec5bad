"""Mutants by name, for ``klc replay --mutant`` and ``klc campaign --target mutant:NAME``.

The catalogue lives in ``tests/mutants/`` of the source checkout (DESIGN.md "Mutants": never a flag in
production code); this module finds it beside the installed ``conformance`` package — an editable
install, or the code a campaign ships to its executors — and runs code with a mutant standing in for
the impl module it edits (:func:`conformance.impl_stack.impl_stack`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys

from conformance.impl_stack import LOG_STACK, impl_stack

TARGETS_HELP = "impl, model, kafka, kafka:VERSION or mutant:NAME"


class MutantError(ValueError):
    """An unknown mutant, or one the log stack cannot run."""


class TargetError(ValueError):
    """A target name that is none of ``TARGETS_HELP``."""


def parse_target(target: str) -> tuple[tuple[str, ...], str | None]:
    """``impl`` → model against impl; ``model`` → the model alone (impl only makes the crash images);
    ``kafka`` → model against Kafka's jars (docs/kafka-target.md); ``mutant:NAME`` → model against
    the mutant.  Returns (runner targets, mutant name)."""
    if target == "impl":
        return ("model", "impl"), None
    if target == "model":
        return ("model",), None
    if target == "kafka" or (target.startswith("kafka:") and len(target) > len("kafka:")):
        return ("model", target), None  # kafka:VERSION: that release (docs/kafka-target.md)
    if target.startswith("mutant:") and len(target) > len("mutant:"):
        name = target.split(":", 1)[1]
        get(name)  # unknown or not runnable: MutantError now, not inside an executor
        return ("model", "impl"), name
    raise TargetError(f"unknown target {target!r}; use {TARGETS_HELP}")


def catalogue() -> dict:
    """Every mutant, by name (``tests.mutants.ALL_MUTANTS``)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "tests", "mutants", "__init__.py")
    if "tests.mutants" in sys.modules:
        return sys.modules["tests.mutants"].ALL_MUTANTS
    if os.path.exists(path):
        spec = importlib.util.spec_from_file_location("klc_mutants", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault("klc_mutants", module)
        spec.loader.exec_module(sys.modules["klc_mutants"])
        return sys.modules["klc_mutants"].ALL_MUTANTS
    try:
        return importlib.import_module("tests.mutants").ALL_MUTANTS
    except ImportError:
        raise MutantError(
            f"the mutant catalogue is not installed: it lives in tests/mutants/ of a source checkout "
            f"(looked for {path}); install the project with `pip install -e .`"
        ) from None


def runnable() -> list[str]:
    """Mutants scenarios can run: those of a module in the impl stack (today every one)."""
    return sorted(name for name, m in catalogue().items() if m.module in LOG_STACK)


def get(name: str):
    mutants = catalogue()
    if name not in mutants:
        raise MutantError(f"unknown mutant {name!r}; the mutants are: {', '.join(runnable())}")
    mutant = mutants[name]
    if mutant.module not in LOG_STACK:
        raise MutantError(f"mutant {name!r} edits {mutant.module}, which is not in the impl stack (LOG_STACK)")
    return mutant


@contextlib.contextmanager
def mutant_stack(name: str | None):
    """Run the enclosed code against the named mutant (``None``: the real impl)."""
    if name is None:
        yield
        return
    with impl_stack(get(name).load()):
        yield
