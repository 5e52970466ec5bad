"""Declared errors of the implementation: malformed log bytes (:class:`LogFormatError`), refused
index operations (:class:`IndexFailure`), refused log operations (:class:`LogError`).

For malformed bytes, ``kind`` is the Kafka exception class the same input would raise
(CorruptRecordException, ...), ``reason`` a stable code, ``position`` the byte position of the
offending batch in its file.
"""

from __future__ import annotations


class LogError(Exception):
    """An operation Kafka refuses: ``kind`` is Kafka's exception class (OffsetOutOfRangeException, …)."""

    def __init__(self, kind: str, message: str, fields: dict | None = None):
        self.kind = kind
        self.fields = fields or {}  # what the exception carries for its caller (an append's offsets)
        super().__init__(f"{kind}: {message}")


class LogFormatError(Exception):
    def __init__(self, kind: str, reason: str, position: int, detail: str = "", file: str | None = None):
        self.kind = kind
        self.reason = reason
        self.position = position
        self.detail = detail
        self.file = file
        super().__init__(kind, reason, position)

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        text = f"{where}byte position {self.position}: {self.kind} ({self.reason})"
        return f"{text}: {self.detail}" if self.detail else text


class IndexFailure(Exception):
    """An index operation refused, or an index file judged corrupt: ``kind`` is the Kafka exception
    class (InvalidOffsetException, CorruptIndexException, ...), ``reason`` a stable code."""

    def __init__(self, kind: str, reason: str, detail: str = "", file: str | None = None):
        self.kind = kind
        self.reason = reason
        self.detail = detail
        self.file = file
        super().__init__(kind, reason, detail)

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        return f"{where}{self.kind} ({self.reason})" + (f": {self.detail}" if self.detail else "")
