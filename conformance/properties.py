"""Named properties (DESIGN.md "Properties") and the error a violated one raises."""

from __future__ import annotations

CONFORMS = "conforms"
DURABLE = "durable"
PREFIX = "prefix"
INDEX_AGREES = "index-agrees"
CLEAN_RESTART = "clean-restart"
IDEMPOTENT_RECOVERY = "idempotent-recovery"
ISOLATED = "isolated"
BAD_INPUT = "bad-input"

ALL = (CONFORMS, DURABLE, PREFIX, INDEX_AGREES, CLEAN_RESTART, IDEMPOTENT_RECOVERY, ISOLATED, BAD_INPUT)


class PropertyViolation(AssertionError):
    """A named property failed; ``witness`` is one line a human can act on."""

    def __init__(self, prop: str, witness: str):
        assert prop in ALL, prop
        self.prop = prop
        self.witness = witness
        super().__init__(f"[{prop}] {witness}")
