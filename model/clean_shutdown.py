"""The clean-shutdown marker's content (spec §6.4; KIP-966, Kafka 3.7+): the broker epoch the
shutdown wrote, and what a starting broker reads back from it.

Only the marker's presence matters to the load (§6.2 step 2): any content, readable or not, makes
the dir's logs load as cleanly shut down.  The content matters to the broker's registration:
before the load deletes the markers, BrokerServer asks LogManager.readBrokerEpochFromCleanShutdownFiles
for the epoch of the broker's last clean shutdown, and the controller takes an answer as proof
that the broker shut down cleanly (KIP-966's unclean-shutdown detection).

CleanShutdownFileHandler.read decodes the file as UTF-8 (malformed bytes replaced) and maps it with
Jackson's default ObjectMapper onto ``{version: int, brokerEpoch: Long}``, unknown properties
ignored; any exception, or a null ``brokerEpoch``, reads as no epoch.  The Jackson rules this
follows, each checked on Kafka 4.4.0 (``corpora/log/clean-shutdown-marker-content.json``):
whitespace around the root value and anything after it are ignored; a root that is not an object
fails, and ``null`` maps to nothing; a string is coerced when, trimmed, it is a decimal integer (an
empty string is null), a float is truncated towards zero, a number outside the field's range
fails, as do booleans, arrays and objects; a key given twice takes its last value.
"""

from __future__ import annotations

import json
import math
import re

MARKER = ".kafka_cleanshutdown"
INT64 = (-(2**63), 2**63 - 1)
INT32 = (-(2**31), 2**31 - 1)


class Unreadable(Exception):
    """The content Jackson would refuse (or map to no epoch)."""


def content(broker_epoch: int) -> bytes:
    """What LogManager.shutdown writes (CleanShutdownFileHandler.write)."""
    return b'{"version":0,"brokerEpoch":%d}' % broker_epoch


def broker_epoch(data: bytes) -> int | None:
    """CleanShutdownFileHandler.read: the broker epoch in a marker's bytes, or None."""
    try:
        fields = _root_object(data.decode("utf-8", errors="replace"))
        _number(fields.get("version"), INT32)  # a primitive int: null (or missing) is 0
        return _number(fields.get("brokerEpoch"), INT64)
    except Unreadable:
        return None


def previous_broker_epoch(markers: list[bytes | None]) -> int | None:
    """LogManager.readBrokerEpochFromCleanShutdownFiles over the live data dirs in order (``None``
    for a dir without a marker): no answer when any dir has none to give, or when two dirs give
    different epochs — except that an epoch of −1 (unknown) does not count against the next."""
    epoch = -1
    for data in markers:
        current = None if data is None else broker_epoch(data)
        if current is None:
            return None
        if epoch != -1 and current != epoch:
            return None
        epoch = current
    return epoch


def _root_object(text: str) -> dict:
    body = text.lstrip(" \t\r\n")
    if not body:
        raise Unreadable("no content")
    try:
        value, _ = json.JSONDecoder(object_pairs_hook=dict, parse_constant=_no_constant).raw_decode(body)
    except ValueError as e:
        raise Unreadable(str(e)) from None
    if not isinstance(value, dict):  # null maps to no object; any other root fails
        raise Unreadable(f"root is {type(value).__name__}")
    return value


def _no_constant(name: str):
    raise Unreadable(f"non-standard token {name}")  # NaN, Infinity: refused by default


def _number(value, bounds: tuple[int, int]) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or isinstance(value, (list, dict)):
        raise Unreadable(f"cannot map {value!r} to a number")
    if isinstance(value, str):
        value = _coerced(value)
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            raise Unreadable(f"{value!r} is out of range")
        value = math.trunc(value)
    if not bounds[0] <= value <= bounds[1]:
        raise Unreadable(f"{value} is out of range")
    return value


def _coerced(text: str) -> int:
    """A string given for a number: trimmed as Java's String.trim trims, then an integer in
    decimal with an optional sign, or nothing ("7.5", "1e2" fail where the number 7.5 truncates)."""
    digits = text.strip("".join(map(chr, range(33))))
    if not re.fullmatch(r"[+-]?[0-9]+", digits):
        raise Unreadable(f"{text!r} is not an integer")
    return int(digits)
