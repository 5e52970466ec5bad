"""The conformance harness: properties, strategies, scenarios, corpus I/O and the ``klc`` CLI.

Only this package sees both ``model`` and ``impl`` (DESIGN.md).
"""

from conformance import faults as _faults  # noqa: E402,F401 — the fault steps join scenario.STEPS
