"""Decoders of Kafka's internal topics for ``klc dump`` (kafka-dump-log's ``--offsets-decoder``,
``--transaction-log-decoder``, ``--cluster-metadata-decoder``).

Each takes a record's key and value bytes and returns ``(key, value)``: a JSON-able object, None
(no key; a null value is a tombstone, ``"<DELETE>"``), or a :class:`NotDecoded` saying why the
bytes are not the format.  Any bytes are accepted; nothing is raised.

Field layouts are those of Kafka's generated message classes (``*.json`` message definitions):
fixed-width big-endian integers; before a message's first flexible version, strings are an int16
length + UTF-8 (−1 = null), arrays and byte strings an int32 count; from it on, lengths are
unsigned varints of length + 1 (0 = null) and every struct ends in tagged fields.
"""

from __future__ import annotations

import base64
import functools
import struct

from operator_tools import message_schemas
from operator_tools.dump_decoders import NotDecoded

DELETE = "<DELETE>"  # a null value: the key's tombstone (what Kafka's parsers print)


class _Reader:
    """Kafka protocol primitives over one byte string; NotDecoded when the bytes run out."""

    def __init__(self, data: bytes, flexible: bool = False):
        self.data, self.pos, self.flexible = data, 0, flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or n > len(self.data) - self.pos:
            raise NotDecoded(f"{n} bytes wanted at byte {self.pos}, {len(self.data) - self.pos} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def _int(self, fmt: str) -> int:
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]

    def int8(self) -> int:
        return self._int(">b")

    def int16(self) -> int:
        return self._int(">h")

    def int32(self) -> int:
        return self._int(">i")

    def int64(self) -> int:
        return self._int(">q")

    def uvarint(self) -> int:
        value = shift = 0
        for _ in range(5):
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
        raise NotDecoded(f"unsigned varint longer than 5 bytes before byte {self.pos}")

    def _length(self) -> int:
        """A string's length, −1 for null."""
        return self.uvarint() - 1 if self.flexible else self.int16()

    def string(self, nullable: bool = False) -> str | None:
        at, n = self.pos, self._length()
        if n < 0:
            if nullable:
                return None
            raise NotDecoded(f"null string at byte {at}")
        try:
            return self._take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise NotDecoded(f"string at byte {at} is not UTF-8") from None

    def count(self, nullable: bool = False) -> int | None:
        """An array's element count (None: a null array)."""
        at = self.pos
        n = self.uvarint() - 1 if self.flexible else self.int32()
        if n < 0:
            if nullable:
                return None
            raise NotDecoded(f"null array at byte {at}")
        if n > len(self.data) - self.pos:  # every element takes a byte at least
            raise NotDecoded(f"array of {n} elements at byte {at} in {len(self.data) - self.pos} bytes")
        return n

    def bytes_(self) -> bytes:
        at = self.pos
        n = self.uvarint() - 1 if self.flexible else self.int32()
        if n < 0:
            raise NotDecoded(f"null bytes at byte {at}")
        return self._take(n)

    def uuid(self) -> str:
        """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, unpadded."""
        return base64.urlsafe_b64encode(self._take(16)).decode("ascii").rstrip("=")

    def tagged_fields(self) -> None:
        """Skipped: the tags these decoders know are all optional."""
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self._take(self.uvarint())

    def end(self) -> None:
        if self.pos != len(self.data):
            raise NotDecoded(f"{len(self.data) - self.pos} bytes left after the fields")


def _decode_side(data: bytes | None, decode, missing):
    """One side of a record: ``missing`` when null, else ``decode(data)`` or the NotDecoded."""
    if data is None:
        return missing
    try:
        return decode(data)
    except NotDecoded as e:
        return e


def _versioned(data: bytes, fields, versions: range, flexible_from: int, label: str) -> dict:
    """An int16 version, then ``fields(reader, version)``: ``{"version", "data"}`` as Kafka's parsers
    print a record value."""
    r = _Reader(data)
    version = r.int16()
    if version not in versions:
        raise NotDecoded(f"{label} version {version} is not one of {versions.start}..{versions.stop - 1}")
    r.flexible = version >= flexible_from
    out = fields(r, version)
    r.tagged_fields()
    r.end()
    return {"version": version, "data": out}


# --- __consumer_offsets (GroupMetadataManager / GroupCoordinatorRecordSerde) ----------------------

OFFSET_COMMIT_KEYS = (0, 1)  # OffsetCommitKey; 0 and 1 share one layout
GROUP_METADATA_KEY = 2  # GroupMetadataKey; 3 and above: the new group coordinator's records (KIP-848)


def _offsets_key(data: bytes) -> dict:
    r = _Reader(data)
    version = r.int16()
    if version in OFFSET_COMMIT_KEYS:
        out = {"group": r.string(), "topic": r.string(), "partition": r.int32()}
    elif version == GROUP_METADATA_KEY:
        out = {"group": r.string()}
    else:
        raise NotDecoded(f"record type {version} is not an offset commit (0, 1) or group metadata (2) key")
    r.end()
    return {"type": version, "data": out}


def _offset_commit_value(r: _Reader, version: int) -> dict:
    """OffsetCommitValue v0–v4 (flexible from 4): offset, leaderEpoch (v3+), metadata,
    commitTimestamp, expireTimestamp (v1 only)."""
    out = {"offset": r.int64()}
    if version >= 3:
        out["leaderEpoch"] = r.int32()
    out["metadata"] = r.string()
    out["commitTimestamp"] = r.int64()
    if version == 1:
        out["expireTimestamp"] = r.int64()
    return out


def _member(r: _Reader, version: int) -> dict:
    """GroupMetadataValue.MemberMetadata; subscription and assignment are printed as hex."""
    out = {"memberId": r.string()}
    if version >= 3:
        out["groupInstanceId"] = r.string(nullable=True)
    out["clientId"] = r.string()
    out["clientHost"] = r.string()
    if version >= 1:
        out["rebalanceTimeout"] = r.int32()
    out["sessionTimeout"] = r.int32()
    out["subscription"] = r.bytes_().hex()
    out["assignment"] = r.bytes_().hex()
    r.tagged_fields()
    return out


def _group_metadata_value(r: _Reader, version: int) -> dict:
    """GroupMetadataValue v0–v4 (flexible from 4)."""
    out = {"protocolType": r.string(), "generation": r.int32()}
    out["protocol"] = r.string(nullable=True)
    out["leader"] = r.string(nullable=True)
    if version >= 2:
        out["currentStateTimestamp"] = r.int64()
    out["members"] = [_member(r, version) for _ in range(r.count())]
    return out


def offsets_record(key: bytes | None, value: bytes | None) -> tuple:
    """A ``__consumer_offsets`` record: the key's version short says which value follows."""
    if key is None:
        return NotDecoded("an offsets record has a key"), _decode_side(value, lambda b: b.hex(), DELETE)
    decoded_key = _decode_side(key, _offsets_key, None)
    if isinstance(decoded_key, NotDecoded):
        return decoded_key, NotDecoded("the key does not say what the value is")
    if decoded_key["type"] in OFFSET_COMMIT_KEYS:
        fields, versions, flexible_from, label = _offset_commit_value, range(0, 5), 4, "OffsetCommitValue"
    else:
        fields, versions, flexible_from, label = _group_metadata_value, range(0, 5), 4, "GroupMetadataValue"
    return decoded_key, _decode_side(value, lambda b: _versioned(b, fields, versions, flexible_from, label), DELETE)


# --- __transaction_state (TransactionLog) ----------------------------------------------------------

TRANSACTION_STATES = {
    0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit", 5: "CompleteAbort",
    6: "Dead", 7: "PrepareEpochFence",
}  # fmt: skip


def _transaction_key(data: bytes) -> dict:
    """TransactionLogKey v0: the transactional id."""
    r = _Reader(data)
    version = r.int16()
    if version != 0:
        raise NotDecoded(f"TransactionLogKey version {version} is not 0")
    out = {"transactionalId": r.string()}
    r.end()
    return {"type": version, "data": out}


def _transaction_value(r: _Reader, version: int) -> dict:
    """TransactionLogValue v0–v1 (flexible from 1; its tagged fields are skipped)."""
    out = {"producerId": r.int64(), "producerEpoch": r.int16(), "transactionTimeoutMs": r.int32()}
    status = r.int8()
    out["state"] = TRANSACTION_STATES.get(status, f"unknown({status})")
    n = r.count(nullable=True)
    partitions = None if n is None else []
    for _ in range(n or 0):
        topic = r.string()
        partitions.append({"topic": topic, "partitionIds": [r.int32() for _ in range(r.count())]})
        r.tagged_fields()
    out["transactionPartitions"] = partitions
    out["transactionLastUpdateTimestampMs"] = r.int64()
    out["transactionStartTimestampMs"] = r.int64()
    return out


def transaction_record(key: bytes | None, value: bytes | None) -> tuple:
    if key is None:
        return NotDecoded("a transaction log record has a key"), _decode_side(value, lambda b: b.hex(), DELETE)
    return (
        _decode_side(key, _transaction_key, None),
        _decode_side(value, lambda b: _versioned(b, _transaction_value, range(0, 2), 1, "TransactionLogValue"), DELETE),
    )


# --- __cluster_metadata, __remote_log_metadata, __share_group_state: by the release's definitions --


def _by_definition(decode, data: bytes):
    """``decode(data)`` by the release's message definitions (operator_tools/message_schemas.py);
    where they cannot be had (no jar, no Maven), the frame and the fields as hex, and why."""
    try:
        return decode(data)
    except message_schemas.SchemaUnavailable as e:
        r = message_schemas.Reader(data)
        return {"frameVersion": r.uvarint(), "apiKey": r.uvarint(), "version": r.uvarint(),
                "fields_hex": data[r.pos :].hex(), "not_decoded": str(e)}  # fmt: skip


def cluster_metadata_record(key: bytes | None, value: bytes | None) -> tuple:
    """KRaft metadata records (MetadataRecordSerde) have no key (kafka-dump-log prints none); a key
    is shown as hex.  The value: its frame, its record type by name, and every field by name."""
    framed = functools.partial(message_schemas.framed, "cluster-metadata")
    return _decode_side(key, lambda b: b.hex(), None), _decode_side(value, lambda b: _by_definition(framed, b), DELETE)


def remote_log_metadata_record(key: bytes | None, value: bytes | None) -> tuple:
    """``__remote_log_metadata`` (RemoteLogMetadataSerde): framed as metadata records; keys are
    not used by tiered storage's topic-based manager (shown as hex)."""
    framed = functools.partial(message_schemas.framed, "remote-log-metadata")
    return _decode_side(key, lambda b: b.hex(), None), _decode_side(value, lambda b: _by_definition(framed, b), DELETE)


def share_group_state_record(key: bytes | None, value: bytes | None) -> tuple:
    """``__share_group_state`` (ShareCoordinatorRecordSerde): the key an int16 record type and its
    key message (ShareSnapshotKey, ShareUpdateKey); the value an int16 version and the value
    message of the key's type.  A value whose key does not decode is not decoded either."""
    topic = "share-group-state"
    if key is None:
        return None, NotDecoded("no key: the record type is in the key")
    try:
        decoded_key, api_key = message_schemas.coordinator_key(topic, key)
    except (NotDecoded, message_schemas.SchemaUnavailable) as e:
        return NotDecoded(str(e)), NotDecoded("the key did not decode: the value's type is unknown")
    value_decode = functools.partial(message_schemas.coordinator_value, topic, api_key=api_key)
    return decoded_key, _decode_side(value, value_decode, DELETE)


TOPIC_DECODERS = {
    "offsets": offsets_record,
    "transaction-log": transaction_record,
    "cluster-metadata": cluster_metadata_record,
    "remote-log-metadata": remote_log_metadata_record,
    "share-group-state": share_group_state_record,
}
