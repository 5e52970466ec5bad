"""Segment file names and partition directory names (spec §2.1, §2.3), scanned by hand.

Numbers follow Java's ``parseInt``/``parseLong``: optional sign, then BMP decimal digits of any
script (``Character.digit``), in range.
"""

from __future__ import annotations

import unicodedata

_JAVA_SPACE = frozenset(" \t\n\x0b\f\r")
_SUFFIXES = ("-delete", "-future", "-stray")


class BadName(ValueError):
    """``kind``: the Java exception Kafka raises for this name; ``name``: the name."""

    def __init__(self, kind: str, reason: str, name: str, detail: str):
        self.kind, self.reason, self.name, self.detail = kind, reason, name, detail
        super().__init__(detail)


def parse_java_number(text: str, bits: int) -> int | None:
    """The value Java's parser returns, or None where it throws NumberFormatException.  Linear in
    the text and bounded: the scan stops at the first digit past the type's range."""
    negative = text[:1] == "-"
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits:
        return None
    bound = (1 << (bits - 1)) - (0 if negative else 1)
    if len(digits) <= 40 and digits.isascii() and digits.isdigit():  # ASCII digits: every segment name
        value = int(digits)
        return None if value > bound else -value if negative else value
    value = 0
    for c in digits:
        if not c.isdecimal() or ord(c) > 0xFFFF:  # Character.digit: any decimal digit of the BMP
            return None
        value = value * 10 + unicodedata.decimal(c)
        if value > bound:
            return None
    return -value if negative else value


def quoted_input(text: str, limit: int = 60) -> str:
    """``For input string: "…"`` as Java words it, cut to ``limit`` characters (with the length)."""
    if len(text) <= limit:
        return f'For input string: "{text}"'
    return f'For input string: "{text[:limit]}…" ({len(text)} characters)'


def offset_from_file_name(name: str) -> int:
    dot = name.find(".")
    if dot < 0:
        raise BadName("StringIndexOutOfBoundsException", "no-dot", name, f"begin 0, end -1, length {len(name)}")
    value = parse_java_number(name[:dot], 64)
    if value is None:
        raise BadName("NumberFormatException", "not-a-number", name, quoted_input(name[:dot]))
    return value


def log_dir_name(topic: str, partition: int) -> str:
    return topic + "-" + str(partition)


def parse_topic_partition(dir_name: str, path: str | None = None) -> tuple[str, int, str]:
    """(topic, partition, kind) with kind "", "delete", "future" or "stray"; else KafkaException."""
    suffix = next((s for s in _SUFFIXES if dir_name.endswith(s)), None)
    if suffix is None:
        base, kind = dir_name, ""
    elif _suffixed(dir_name[: -len(suffix)]):
        base, kind = dir_name[: dir_name.rfind(".")], suffix[1:]
    else:
        base, kind = "", ""
    dash = base.rfind("-")
    partition = parse_java_number(base[dash + 1 :], 32) if dash > 0 else None
    if partition is None:
        raise BadName(
            "KafkaException",
            "not-topic-partition",
            dir_name,
            f"Found directory {path or dir_name}, '{dir_name}' is not in the form of topic-partition or "
            "topic-partition.uniqueId-delete (if marked for deletion).\nKafka's log directories (and "
            "children) should only contain Kafka topic data.",
        )
    return base[:dash], partition, kind


def _suffixed(core: str) -> bool:
    """``core`` (the name without its suffix) is A-B.C with A, B, C non-empty and free of Java
    whitespace: the earliest usable '-' and the latest usable '.' decide."""
    if any(c in _JAVA_SPACE for c in core):
        return False
    dash = core.find("-", 1)
    dot = core.rfind(".", 0, len(core) - 1)
    return dash > 0 and dot >= dash + 2


def log_delete_dir_name(topic: str, partition: int, unique_id: str) -> str:
    """§2.3 rule 2 (LocalLog.logDeleteDirName): ``<topic>-<partition>.<unique id>-delete``, the
    topic cut so the name stays within a file name's 255 characters."""
    return _capped(topic, partition, unique_id, "delete")


def log_stray_dir_name(topic: str, partition: int, unique_id: str) -> str:
    """§2.3 rule 2 (LocalLog.logStrayDirName): ``<topic>-<partition>.<unique id>-stray``, cut alike."""
    return _capped(topic, partition, unique_id, "stray")


def _capped(topic: str, partition: int, unique_id: str, kind: str) -> str:
    suffix = f"-{partition}.{unique_id}-{kind}"
    keep = max(0, min(len(topic), 255 - len(suffix)))
    return topic[:keep] + suffix
