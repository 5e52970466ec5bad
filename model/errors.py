"""The model's declared error types: malformed bytes, refused index operations, refused log operations.

Kafka reports format problems with a handful of exception classes (spec §0.5, §9.5).  The model keeps
Kafka's class name as ``kind`` (so a recovery rule such as "catch CorruptRecordException or
InvalidRecordException" reads as in the spec) and adds a stable ``reason`` code that the conformance
suite compares with the implementation's.
"""

from __future__ import annotations

CORRUPT_RECORD = "CorruptRecordException"
INVALID_RECORD = "InvalidRecordException"
KAFKA = "KafkaException"
# snappy-java's SnappyError: a java.lang.Error, which what catches Exception lets through (a split's
# cleanup of its new segments, LocalLog.splitOverflowedSegment)
SNAPPY_ERROR = "SnappyError"
ILLEGAL_ARGUMENT = "IllegalArgumentException"


class LogError(Exception):
    """An operation Kafka refuses; ``kind`` is Kafka's exception class."""

    def __init__(self, kind: str, message: str, fields: dict | None = None):
        self.kind = kind
        self.fields = fields or {}  # what the exception carries for its caller (an append's offsets)
        super().__init__(f"{kind}: {message}")


class RecordFormatError(Exception):
    """Bytes that are not a valid batch/record: ``kind`` (Kafka class), ``reason``, ``position``.

    ``position`` is the byte position in the file (or buffer) of the batch being read; ``file`` is
    filled in by whoever knows it.
    """

    def __init__(self, kind: str, reason: str, position: int, detail: str = "", file: str | None = None):
        self.kind = kind
        self.reason = reason
        self.position = position
        self.detail = detail
        self.file = file
        super().__init__(self.describe())

    def describe(self) -> str:
        where = f"{self.file}: " if self.file else ""
        text = f"{where}byte position {self.position}: {self.kind} ({self.reason})"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return self.describe()


# Index-level exception kinds (spec §3, §9.5)
INVALID_OFFSET = "InvalidOffsetException"
INDEX_OFFSET_OVERFLOW = "IndexOffsetOverflowException"
ILLEGAL_STATE = "IllegalStateException"
CORRUPT_INDEX = "CorruptIndexException"
BUFFER_OVERFLOW = "BufferOverflowException"


class IndexFailure(Exception):
    """An index operation Kafka would refuse, or an index file Kafka would judge corrupt.

    ``kind`` is Kafka's exception class, ``reason`` a stable code shared by name with ``impl``.
    """

    def __init__(self, kind: str, reason: str, detail: str = "", file: str | None = None):
        self.kind = kind
        self.reason = reason
        self.detail = detail
        self.file = file
        super().__init__(f"{file + ': ' if file else ''}{kind} ({reason}){': ' + detail if detail else ''}")
