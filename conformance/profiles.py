"""Hypothesis settings profiles, registered in one place.

* ``dev`` — quick local runs (the default outside CI);
* ``ci`` — the CI conformance gate: derandomized so a green run stays green, no deadline (shared
  CI machines stall), database off (a fresh checkout has none);
* ``nightly`` — a much larger search budget.

Select one with ``HYPOTHESIS_PROFILE``; with ``CI`` set the default is ``ci``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile("dev", max_examples=100, deadline=None, suppress_health_check=_SUPPRESS)
settings.register_profile(
    "ci", max_examples=200, deadline=None, derandomize=True, database=None, print_blob=True,
    suppress_health_check=_SUPPRESS,
)  # fmt: skip
settings.register_profile("nightly", max_examples=5000, deadline=None, suppress_health_check=_SUPPRESS)

PROFILES = ("dev", "ci", "nightly")


def load_profile(name: str | None = None) -> str:
    """Load ``name``, or ``$HYPOTHESIS_PROFILE``, or ``ci`` when ``$CI`` is set, else ``dev``."""
    name = name or os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
    if name not in PROFILES:
        raise ValueError(f"unknown Hypothesis profile {name!r}; choose one of {', '.join(PROFILES)}")
    settings.load_profile(name)
    return name
