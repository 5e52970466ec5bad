"""Segment file names and partition directory names (spec §2.1, §2.3), scanned by hand."""

from __future__ import annotations

_DIGITS = frozenset("0123456789")
_JAVA_SPACE = frozenset(" \t\n\x0b\f\r")


class BadName(ValueError):
    """``kind``: the Java exception Kafka raises for this name."""

    def __init__(self, kind: str, name: str, message: str):
        self.kind, self.name = kind, name
        super().__init__(message)


def filename_prefix(offset: int) -> str:
    return str(offset).zfill(20) if offset >= 0 else "-" + str(-offset).zfill(20)


def _java_int(text: str, bits: int) -> int | None:
    body = text[1:] if text[:1] in "+-" else text
    if not body or any(c not in _DIGITS for c in body):
        return None
    value = int(text)
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


def offset_from_file_name(name: str) -> int:
    dot = name.find(".")
    if dot < 0:
        raise BadName("StringIndexOutOfBoundsException", name, f"file name {name!r} has no '.'")
    value = _java_int(name[:dot], 64)
    if value is None:
        raise BadName("NumberFormatException", name, f'For input string: "{name[:dot]}"')
    return value


def parse_topic_partition(dir_name: str) -> tuple[str, int, str]:
    error = BadName(
        "KafkaException",
        dir_name,
        f"Found directory {dir_name}, '{dir_name}' is not in the form of topic-partition or "
        "topic-partition.uniqueId-delete (if marked for deletion).",
    )
    if not dir_name or "-" not in dir_name:
        raise error
    kind, name = "", dir_name
    for suffix in ("delete", "future", "stray"):
        if dir_name.endswith("-" + suffix):
            if not _suffixed(dir_name, suffix):
                raise error
            kind, name = suffix, dir_name[: dir_name.rindex(".")]
            break
    dash = name.rfind("-")
    topic, partition = name[:dash], name[dash + 1 :]
    value = _java_int(partition, 32) if topic and partition else None
    if value is None:
        raise error
    return topic, value, kind


def _suffixed(name: str, suffix: str) -> bool:
    """The whole name matches (\\S+)-(\\S+)\\.(\\S+)-<suffix>: A-B.C-<suffix> with A, B, C non-empty
    and free of (Java's) whitespace."""
    end = len(name) - len(suffix) - 1  # the '-' before the suffix, counting from the full name
    core = name[:end]
    if not core or any(c in _JAVA_SPACE for c in core):
        return False
    dot = core.rfind(".")
    while dot > 0:
        if dot < len(core) - 1:
            left = core[:dot]
            dash = left.rfind("-")
            while dash > 0:
                if dash < len(left) - 1:
                    return True
                dash = left.rfind("-", 0, dash)
        dot = core.rfind(".", 0, dot)
    return False
