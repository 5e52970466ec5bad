"""The conformance harness: properties, strategies, scenarios, corpus I/O and the ``klc`` CLI.

Only this package sees both ``model`` and ``impl`` (DESIGN.md).
"""
