"""Every benchmark module with a ``main`` answers ``--help`` with its usage and does nothing else
(a benchmark must never start a run of minutes when asked what it does)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import benchmarks

# the modules that run on their own (the rest are parts of ``python -m benchmarks``)
MODULES = sorted(
    m.name
    for m in pkgutil.iter_modules(benchmarks.__path__)
    if not m.name.startswith("_") and hasattr(importlib.import_module(f"benchmarks.{m.name}"), "main")
)


def test_the_benchmarks_that_run_on_their_own_are_found():
    assert {"stateful", "kafka_target", "dry_run", "gate"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_help_prints_usage_and_runs_nothing(name, capsys):
    main = importlib.import_module(f"benchmarks.{name}").main
    assert inspect.signature(main).parameters, f"benchmarks.{name}.main takes no argv: --help cannot reach it"
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out
