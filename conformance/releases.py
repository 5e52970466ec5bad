"""What a Kafka release does differently from the pinned one by design, one row each.

The model is Kafka 4.4.0's log layer.  An older release differs from it in ways no bug explains: a
format or a default changed on purpose.  Judged against the model as they are, those differences
hide what a corpus case is about (a KAFKA-6388 case fails on 2.1.1 at the clean-shutdown marker's
content, not at the roll it pins).  Each row names the difference, the first release without it,
why it changed, and how the comparison leaves it out; a target running an older release carries
the names of its rows (``Target.differences``) and :mod:`conformance.properties.conforms` drops
exactly those aspects for that pair, nothing else.  A difference not in this table is judged as a
disagreement.
"""

from __future__ import annotations

import attrs

from conformance.targets.kafka_jvm import RELEASE
from model.names import LOCK_FILE as LOCK

MARKER = ".kafka_cleanshutdown"


@attrs.frozen
class Difference:
    name: str
    until: tuple[int, int, int]  # the first release that does as the model does
    what: str  # what the older releases do
    source: str  # the KIP, JIRA key or class that changed it
    left_out: str  # what the comparison leaves out for such a release


EMPTY_MARKER = "empty-clean-shutdown-marker"
PRODUCERS_NOT_SHOWN = "producer-state-not-shown"
UNWRITTEN_CHECKPOINT = "unwritten-checkpoint-of-a-dir-without-logs"
LOCK_KEPT = "lock-file-kept-by-a-shutdown"
CHECKPOINTS = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint")
NO_ENTRIES = b"0\n0\n"  # version 0, no entry

TABLE = (
    Difference(
        EMPTY_MARKER,
        (3, 7, 0),
        "the clean-shutdown marker is an empty file; 3.7 writes the broker epoch in it as JSON",
        "KIP-966; storage CleanShutdownFileHandler (3.7.0)",
        "the marker's content (its presence is compared)",
    ),
    Difference(
        UNWRITTEN_CHECKPOINT,
        (2, 7, 0),
        "a data dir holding no log keeps its offset checkpoints as their constructor created them, "
        "empty: the checkpoint tasks write only the dirs found in logsByDir; 2.7 writes every live "
        "dir's, an empty one as version 0 with no entry",
        "LogManager.checkpointLogStartOffsetsInDir (2.7.0)",
        "the difference between an empty offset checkpoint and one with no entry",
    ),
    Difference(
        LOCK_KEPT,
        (3, 8, 0),
        "a graceful shutdown (and the failure handler taking a dir offline) unlocks the data dir's "
        "lock and leaves its .lock file; 3.8 deletes it",
        "KAFKA-16391 (FileLock.destroy, 3.8.0)",
        "the data dirs' .lock files",
    ),
    Difference(
        PRODUCERS_NOT_SHOWN,
        (3, 1, 0),
        "the adapter of the Scala kafka.log.Log (1.1–3.0) does not read the producer state out of it",
        "docs/kafka-target.md, the Scala kafka.log.Log generation",
        "the producers of every partition's state and the producer .snapshot files",
    ),
)


# Before 3.0.0 no flush fsyncs a partition directory (KAFKA-3968): held to the model's durability
# promises step by step (model.durability), every flush of a new segment would report that one bug
# and hide the bug a case pins (KAFKA-10471's on 2.7.2).  Such releases are judged for durability by
# crash images only, which show KAFKA-3968 where a case cuts one (corpora/KAFKA-3968).
DIRECTORY_FSYNCED_SINCE = (3, 0, 0)


def holds_durability_promises(release: str | None) -> bool:
    """Whether a kafka target of ``release`` is held to the durability promises after every step."""
    m = RELEASE.fullmatch(release or "")
    return release is None or m is None or (int(m[1]), int(m[2]), int(m[3])) >= DIRECTORY_FSYNCED_SINCE


def differences(release: str | None) -> frozenset[str]:
    """The rows that apply to ``release`` (None: the pinned release, none)."""
    if release is None:
        return frozenset()
    m = RELEASE.fullmatch(release)
    if m is None:
        return frozenset()
    version = (int(m[1]), int(m[2]), int(m[3]))
    return frozenset(d.name for d in TABLE if version < d.until)


def comparable_files(files: dict[str, bytes], left_out: frozenset[str]) -> dict[str, bytes]:
    """The files with the aspects of ``left_out`` removed."""
    if EMPTY_MARKER in left_out:
        files = {p: b"" if p.rsplit("/", 1)[-1] == MARKER else d for p, d in files.items()}
    if LOCK_KEPT in left_out:
        files = {p: d for p, d in files.items() if p.rsplit("/", 1)[-1] != LOCK}
    if UNWRITTEN_CHECKPOINT in left_out:
        files = {p: NO_ENTRIES if p.rsplit("/", 1)[-1] in CHECKPOINTS and d == b"" else d for p, d in files.items()}
    return files
