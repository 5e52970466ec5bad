"""Every named check, each runnable against the real implementation module or a mutant of it."""

from __future__ import annotations

from conformance.file_records_machine import check_file_records_machine
from conformance.formats import FORMAT_CHECKS
from conformance.index_checks import INDEX_CHECKS
from conformance.log_checks import LOG_CHECKS

CHECKS = {**FORMAT_CHECKS, "file-records-machine": check_file_records_machine, **INDEX_CHECKS, **LOG_CHECKS}
