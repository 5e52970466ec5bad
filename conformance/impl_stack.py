"""A mutant standing in for the impl module it mutates (DESIGN.md "Mutants").

A mutant is a stand-alone module object (tests/mutants).  :func:`impl_stack` installs it in place of
the module it mutates and re-executes, from their own source, the impl modules that depend on it, so
the whole log stack — segment, log, loader, log manager — runs with the mutation; everything is put
back afterwards.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types

import impl

# impl's modules in dependency order (each may import the ones before it, never one after it at
# import time): a mutant of any of them runs under the whole stack, so format and index mutants are
# targets for scenarios and machines too.  Every impl module that imports one of these is one of
# these (tests/test_mutants.py checks both rules): a module left out keeps the real classes, so a
# cleaning round under a segment mutant used to raise the mutant's LogSegmentOffsetOverflow past a
# cleaner that caught only the real one — a catch that was no catch.
LOG_STACK = (
    "impl.names",
    "impl.codecs",
    "impl.file_records",
    "impl.record_walk",
    "impl.record_writer",
    "impl.index",
    "impl.index_verify",
    "impl.txn_index",
    "impl.checkpoints",
    "impl.leader_epoch",
    "impl.segment",
    "impl.split",
    "impl.producer_state",
    "impl.cleaned_transaction_metadata",
    "impl.cleaner",
    "impl.log_validator",
    "impl.log",
    "impl.loader",
    "impl.clean_shutdown",
    "impl.log_manager",
)


@contextlib.contextmanager
def impl_stack(module: types.ModuleType | None = None):
    """Run the enclosed code with ``module`` (a mutant) standing in for the impl module it mutates."""
    real = getattr(module, "MUTANT_OF", None)
    if real is None:
        yield
        return
    # every real module imported first, so that none is imported under the mutant and left behind
    saved = {name: importlib.import_module(name) for name in LOG_STACK}
    attrs_saved = {name: getattr(impl, name.split(".")[1]) for name in saved}
    try:
        sys.modules[real] = module
        setattr(impl, real.split(".")[1], module)
        after = False
        for name in LOG_STACK:
            if name == real:
                after = True
                continue
            if not after:
                continue
            original = saved[name]
            fresh = types.ModuleType(name)
            fresh.__file__ = original.__file__
            with open(original.__file__, encoding="utf-8") as f:
                code = compile(f.read(), original.__file__, "exec")
            sys.modules[name] = fresh
            exec(code, fresh.__dict__)
            setattr(impl, name.split(".")[1], fresh)
        yield
    finally:
        for name, mod in saved.items():
            sys.modules[name] = mod
            setattr(impl, name.split(".")[1], attrs_saved[name])
