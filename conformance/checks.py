"""Every named check, each runnable against the real implementation module or a mutant of it."""

from __future__ import annotations

from conformance.formats import FORMAT_CHECKS
from conformance.index_checks import INDEX_CHECKS
from conformance.log_checks import LOG_CHECKS

CHECKS = {**FORMAT_CHECKS, **INDEX_CHECKS, **LOG_CHECKS}
