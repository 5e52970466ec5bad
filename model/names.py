"""File and directory names of the log layer (spec §2.1, §2.3).

Numbers are read as Java's ``Long.parseLong`` / ``Integer.parseInt`` read them: an optional ``+`` or
``-``, then at least one decimal digit, in range.  Java's ``Character.digit`` accepts every Unicode
decimal digit (category Nd) that is a single UTF-16 unit, so ``t-٣`` is partition 3 of topic ``t``;
digits outside the BMP are two surrogates to Java and are refused.
"""

from __future__ import annotations

import re
import unicodedata

from model.errors import KAFKA

# LogManager's dir lock in every data dir (§6.1; docs/scenario-format.md, "The data dir's lock")
LOCK_FILE = ".lock"
SUFFIXES = ("delete", "future", "stray")  # §2.3 rules 2–4: "-delete", "-future", "-stray"
_NOT_SPACE = r"[^ \t\n\x0b\f\r]+"  # Java's \S
_PATTERNS = {s: re.compile(rf"{_NOT_SPACE}-{_NOT_SPACE}\.{_NOT_SPACE}-{s}") for s in SUFFIXES}  # §2.3 rule 5


class NameError_(ValueError):
    """A name Kafka cannot parse: ``kind`` is the Java exception it raises, ``name`` the name given."""

    def __init__(self, kind: str, reason: str, name: str, detail: str):
        self.kind, self.reason, self.name, self.detail = kind, reason, name, detail
        super().__init__(detail)


def java_integer(text: str, bits: int) -> int | None:
    """``Integer.parseInt`` (bits=32) / ``Long.parseLong`` (bits=64); None where Java throws NFE.
    Any Unicode decimal digit of the BMP counts, as Character.digit counts it; leading zeros are
    allowed in any number, so only the significant digits are converted (a number of thousands of
    digits is an overflow, found without converting it)."""
    if not re.fullmatch(r"[+-]?\d+", text) or any(ord(c) > 0xFFFF for c in text):
        return None
    sign, digits = (text[0], text[1:]) if text[0] in "+-" else ("+", text)
    significant = digits.lstrip("".join(c for c in set(digits) if unicodedata.decimal(c) == 0))
    if len(significant) > 19:  # beyond every long
        return None
    value = int(significant or "0") * (-1 if sign == "-" else 1)  # int() reads every Nd digit
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None


def quoted_input(text: str, limit: int = 60) -> str:
    """``For input string: "…"`` as Java words it, cut to ``limit`` characters (with the length)."""
    if len(text) <= limit:
        return f'For input string: "{text}"'
    return f'For input string: "{text[:limit]}…" ({len(text)} characters)'


def filename_prefix(offset: int) -> str:
    """§2.1 rule 1 (LogFileUtils.filenamePrefixFromOffset): decimal, at least 20 digits, a ``-``
    in front of a negative offset (Java's NumberFormat with 20 minimum integer digits)."""
    return ("-" if offset < 0 else "") + str(abs(offset)).rjust(20, "0")


def offset_from_file_name(name: str) -> int:
    """§2.1 rule 2: the characters before the first ``.`` as a signed 64-bit decimal."""
    if "." not in name:
        raise NameError_("StringIndexOutOfBoundsException", "no-dot", name, f"begin 0, end -1, length {len(name)}")
    prefix = name.split(".", 1)[0]
    value = java_integer(prefix, 64)
    if value is None:
        raise NameError_("NumberFormatException", "not-a-number", name, quoted_input(prefix))
    return value


def log_dir_name(topic: str, partition: int) -> str:
    """§2.3 rule 1: ``<topic>-<partition>``."""
    return f"{topic}-{partition}"


def parse_topic_partition(dir_name: str, path: str | None = None) -> tuple[str, int, str]:
    """§2.3 parseTopicPartitionName: ``(topic, partition, kind)``, kind ∈ {"", "delete", "future",
    "stray"}.  Every failure is Kafka's KafkaException, naming ``path`` (the absolute path, when
    known) and the directory name."""
    failure = NameError_(
        KAFKA,
        "not-topic-partition",
        dir_name,
        f"Found directory {path or dir_name}, '{dir_name}' is not in the form of topic-partition or "
        "topic-partition.uniqueId-delete (if marked for deletion).\n"
        "Kafka's log directories (and children) should only contain Kafka topic data.",
    )
    if "-" not in dir_name:  # rule 1 (the empty name included)
        raise failure
    kind = next((s for s in SUFFIXES if dir_name.endswith("-" + s)), "")
    if kind and not _PATTERNS[kind].fullmatch(dir_name):  # rule 2
        raise failure
    name = dir_name.rpartition(".")[0] if kind else dir_name  # rule 3
    topic, _, partition = name.rpartition("-")  # rule 4
    number = java_integer(partition, 32)
    if not topic or number is None:
        raise failure
    return topic, number, kind


def log_delete_dir_name(topic: str, partition: int, unique_id: str) -> str:
    """§2.3 rule 2 (LocalLog.logDeleteDirName): ``<topic>-<partition>.<unique id>-delete``, the
    topic cut so the whole name is at most 255 characters (a file name's limit)."""
    return log_dir_name_with_suffix(topic, partition, unique_id, "delete")


def log_dir_name_with_suffix(topic: str, partition: int, unique_id: str, kind: str) -> str:
    """§2.3 rule 2: ``<topic>-<partition>.<unique id>-<kind>``.  A ``-delete`` or ``-stray`` name
    has its topic cut so the whole is at most 255 characters (LocalLog.logDirNameWithSuffixCappedLength);
    a ``-future`` one is not cut (LocalLog.logFutureDirName)."""
    suffix = f"-{partition}.{unique_id}-{kind}"
    if kind == "future":
        return topic + suffix
    return topic[: max(0, min(len(topic), 255 - len(suffix)))] + suffix
