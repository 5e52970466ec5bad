"""The clean-shutdown marker (spec §6.4): written at a graceful shutdown with the broker epoch
(KIP-966, Kafka 3.7+), its presence read at startup, its content read by the broker before the
load deletes it (LogManager.readBrokerEpochFromCleanShutdownFiles).

The content is mapped as Kafka's CleanShutdownFileHandler maps it — Jackson's default
ObjectMapper onto ``{int version, Long brokerEpoch}`` with unknown properties ignored — and any
failure is no epoch.  The Jackson rules, checked on Kafka 4.4.0
(``corpora/log/clean-shutdown-marker-content.json``): the root value must be an object (``null``
gives none), what follows it is not read, scalars are coerced (a string holding a decimal integer parses,
an empty one is null, a float truncates), a value out of the field's range or of another kind fails.
"""

from __future__ import annotations

import json
import math
import re

MARKER = ".kafka_cleanshutdown"
_LONG = 2**63
_INT = 2**31
_WS = " \t\r\n"
# Kafka reads the whole file; a marker is one short line, and what follows its JSON object is never
# read, so the first MiB decides (bounded memory: a marker grown by damage is not read whole)
READ_LIMIT = 1 << 20


def marker_content(broker_epoch: int) -> bytes:
    return b'{"version":0,"brokerEpoch":%d}' % broker_epoch


def read_broker_epoch(data: bytes) -> int | None:
    """CleanShutdownFileHandler.read: the epoch, or None when it cannot be had."""
    text = data.decode("utf-8", "replace").lstrip(_WS)
    try:
        root, _ = json.JSONDecoder(parse_constant=_refuse).raw_decode(text)
    except ValueError:
        return None
    if type(root) is not dict:
        return None
    if not _fits(root.get("version"), _INT):  # a primitive: absent or null reads 0
        return None
    epoch = root.get("brokerEpoch")
    return None if epoch in (None, "") or not _fits(epoch, _LONG) else _as_integer(epoch)


def combined(epochs: list[int | None]) -> int | None:
    """readBrokerEpochFromCleanShutdownFiles: each live dir's in order; any missing, or two
    known (not −1) that differ, gives none."""
    seen = -1
    for epoch in epochs:
        if epoch is None or (seen != -1 and epoch != seen):
            return None
        seen = epoch
    return seen


def _refuse(token: str):
    raise ValueError(token)


_INTEGER_TEXT = re.compile(r"[\x00-\x20]*([+-]?[0-9]+)[\x00-\x20]*")


def _as_integer(value) -> int:
    """A number, or a string holding a decimal integer (Java-trimmed), as the integer Jackson
    makes of it (a float truncated); ValueError for what is none (NaN, the infinities, "7.5")."""
    if isinstance(value, str):
        match = _INTEGER_TEXT.fullmatch(value)
        if match is None:
            raise ValueError(f"{value!r} is no integer")
        return int(match.group(1))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is no integer")
        return math.trunc(value)
    return value


def _fits(value, bound: int) -> bool:
    if value is None or value == "":
        return True
    if type(value) is bool or not isinstance(value, (int, float, str)):
        return False
    try:
        return -bound <= _as_integer(value) <= bound - 1
    except ValueError:
        return False
