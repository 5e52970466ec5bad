"""File and directory names of the log layer (spec §2.1, §2.3)."""

from __future__ import annotations

import re

from model.errors import KAFKA

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_S = r"[^ \t\n\x0b\f\r]+"  # Java's \S
# §2.3 rule 5, matched against the whole name (Matcher.matches)
SUFFIXES = {k: re.compile(rf"({_S})-({_S})\.({_S})-{k}") for k in ("delete", "future", "stray")}


class NameError_(ValueError):
    """A name Kafka cannot parse: ``kind`` is the Java exception it raises."""

    def __init__(self, kind: str, name: str, message: str):
        self.kind, self.name = kind, name
        super().__init__(message)


def filename_prefix(offset: int) -> str:
    """§2.1 rule 1: decimal, zero-padded to at least 20 digits."""
    return f"{offset:020d}" if offset >= 0 else f"-{-offset:020d}"


def _parse_long(text: str, kind_name: str, lo: int, hi: int) -> int:
    # Long.parseLong / Integer.parseInt: optional sign, ASCII digits only, in range
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise NameError_("NumberFormatException", text, f'For input string: "{text}"')
    value = int(text)
    if not lo <= value <= hi:
        raise NameError_("NumberFormatException", text, f'For input string: "{text}" (out of {kind_name} range)')
    return value


def offset_from_file_name(name: str) -> int:
    """§2.1 rule 2: the characters before the first '.' as a signed 64-bit decimal."""
    if "." not in name:
        raise NameError_("StringIndexOutOfBoundsException", name, f"file name {name!r} has no '.'")
    return _parse_long(name[: name.index(".")], "long", LONG_MIN, LONG_MAX)


def parse_topic_partition(dir_name: str) -> tuple[str, int, str]:
    """§2.3 parseTopicPartitionName: (topic, partition, kind), kind ∈ {"", delete, future, stray}."""

    def fail():
        return NameError_(
            KAFKA,
            dir_name,
            f"Found directory {dir_name}, '{dir_name}' is not in the form of topic-partition or "
            "topic-partition.uniqueId-delete (if marked for deletion).",
        )

    if not dir_name or "-" not in dir_name:
        raise fail()
    kind, name = "", dir_name
    for suffix, pattern in SUFFIXES.items():
        if dir_name.endswith("-" + suffix):
            if not pattern.fullmatch(dir_name):
                raise fail()
            kind, name = suffix, dir_name[: dir_name.rindex(".")]
            break
    cut = name.rfind("-")
    topic, partition = name[:cut], name[cut + 1 :]
    if not topic or not partition:
        raise fail()
    try:
        return topic, _parse_long(partition, "int", INT_MIN, INT_MAX), kind
    except NameError_:
        raise fail() from None
