"""Named properties (DESIGN.md "Properties"), the error a violated one raises, and what the
property families (the modules of this package) judge after each step."""

from __future__ import annotations

import re

import attrs

from conformance import scenario as sc

CONFORMS = "conforms"
DURABLE = "durable"
PREFIX = "prefix"
INDEX_AGREES = "index-agrees"
CLEAN_RESTART = "clean-restart"
IDEMPOTENT_RECOVERY = "idempotent-recovery"
ISOLATED = "isolated"
BAD_INPUT = "bad-input"
READ_COMMITTED = "read-committed"  # no aborted or open transaction's data at read_committed (KIP-98, docs/producer-state.md)

ALL = (CONFORMS, DURABLE, PREFIX, INDEX_AGREES, CLEAN_RESTART, IDEMPOTENT_RECOVERY, ISOLATED, BAD_INPUT, READ_COMMITTED)


class PropertyViolation(AssertionError):
    """A named property failed; ``witness`` is one line a human can act on."""

    def __init__(self, prop: str, witness: str):
        assert prop in ALL, prop
        self.prop = prop
        self.witness = witness
        super().__init__(f"[{prop}] {witness}")


@attrs.frozen
class Observation:
    """What one step left for the property families to judge (each family's ``judge`` takes one
    and yields ``(property, witness or None)`` per check it makes; the runner counts each and
    records the first witness)."""

    step: sc.Step
    index: int  # the step's place in the scenario (−1: the open before any step)
    targets: tuple  # the targets, in the order they were made
    results: dict  # target name → the step's result
    shutdown_at: int | None  # the step index of the graceful shutdown this open follows, if any
    faulted: bool  # a fault step happened earlier in the scenario
    unloadable: frozenset  # partitions the last open left out (their files are not compared)
    corrupted: frozenset  # what corrupt steps damaged: partitions (d0/t-0) and data dirs (d0)
    shutdown_dirs: dict  # data dir → whether the last shutdown wrote its clean-shutdown marker
    load_stats: list  # the verdict's: what each judged clean start cost (impl targets)
    tracker: object = None  # the session's crash bookkeeping (properties.crash_recovery.RecoveryTracker)


def tainted(partition: str, corrupted) -> bool:
    """Whether a ``corrupt`` step damaged this partition (``d0/t-0``): one of its files, or a file
    of its data dir (``d0``: a checkpoint, whose damage reaches every partition of the dir).  The
    damage travels with the partition's data to another data dir (a ``rename_dir`` copy made a
    future replica of it, then promoted): :func:`anywhere` names the partition in every dir."""
    return partition in corrupted or partition.split("/", 1)[0] in corrupted or anywhere(partition) in corrupted


_SET_ASIDE = re.compile(r"\.[0-9a-f]{32}-(delete|future|stray)$")


def anywhere(partition: str) -> str:
    """``d1/t-0.<id>-future`` → ``*/t-0``: the partition, in whatever data dir and under whatever
    suffix its directory has."""
    return "*/" + _SET_ASIDE.sub("", partition.split("/", 1)[-1])
