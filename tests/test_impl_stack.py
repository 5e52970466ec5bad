"""A mutant runs under the whole impl stack (conformance.impl_stack): every module that
imports the mutated one is executed afresh against it, and the real modules come back afterwards.

A module left out of LOG_STACK kept the real classes: impl.cleaner, imported lazily by impl.log, caught
the real LogSegmentOffsetOverflow while the segments under a segment mutant raised the mutant stack's
own, so a cleaning round of an overflowing legacy segment failed under every segment mutant, in any
process that had imported the cleaner before (the time-to-catch benchmark's workers): a catch that
was no catch.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import sys

import impl
from conformance.impl_stack import LOG_STACK, impl_stack
from tests.mutants import ALL_MUTANTS

IMPL = pathlib.Path(impl.__file__).parent


def _imports(path: pathlib.Path, top_level_only: bool) -> set[str]:
    """The impl modules ``path`` imports (at import time only, or anywhere in it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("impl"):
            if node.module == "impl":
                found.update(f"impl.{a.name}" for a in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("impl."))
    return found


def test_the_stack_is_in_import_order():
    for i, name in enumerate(LOG_STACK):
        later = set(LOG_STACK[i + 1 :])
        path = IMPL / f"{name.split('.')[1]}.py"
        assert not _imports(path, top_level_only=True) & later, f"{name} imports a module after it in LOG_STACK"


def test_every_module_that_imports_the_stack_is_in_it():
    for path in sorted(IMPL.glob("*.py")):
        name = f"impl.{path.stem}"
        if _imports(path, top_level_only=False) & set(LOG_STACK):
            assert name in LOG_STACK, f"{name} imports a stacked module but is not in LOG_STACK"


def test_a_segment_mutant_reaches_the_cleaner_and_the_real_modules_come_back():
    # imported before the stack, as a process that ran the real impl first (a benchmark worker) has them
    before = {name: importlib.import_module(name) for name in LOG_STACK}
    mutant = ALL_MUTANTS["roll-ignores-an-unsound-full-index"]
    assert mutant.module == "impl.segment"
    with impl_stack(mutant.load()):
        segment, cleaner, log = (sys.modules[f"impl.{n}"] for n in ("segment", "cleaner", "log"))
        assert segment is not before["impl.segment"]
        assert cleaner is not before["impl.cleaner"]
        assert cleaner.LogSegmentOffsetOverflow is segment.LogSegmentOffsetOverflow
        assert cleaner.LogSegment is segment.LogSegment
        assert log.LogSegment is segment.LogSegment
    assert {name: sys.modules[name] for name in LOG_STACK} == before
    assert impl.cleaner is before["impl.cleaner"]
