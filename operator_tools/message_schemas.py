"""Records of Kafka's internal topics decoded by the release's own message definitions.

Kafka generates its record classes from JSON message definitions and ships those definitions in
its jars: ``common/metadata/*.json`` in kafka-metadata (``__cluster_metadata``: one per
``MetadataRecordType``), ``message/Remote*.json`` in kafka-storage (``__remote_log_metadata``),
``common/message/Share*.json`` in kafka-share-coordinator (``__share_group_state``).  This module
reads them from the pinned release's jars in the local Maven repository (fetching a jar there with
``mvn dependency:get`` on first use), and decodes any version of any record type field by field,
with the field names the definitions give (lowerCamelCase, as Kafka's JSON converters print them).

The wire rules are the message protocol's: fixed-width big-endian integers; before a message's
first flexible version, strings are an int16 length + UTF-8 (−1 null), arrays and bytes an int32
count; from it, unsigned varints of length + 1 (0 null); every struct of a flexible version ends
in tagged fields (count, then per field its tag, size and bytes), where a field with a tag is read.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import struct
import subprocess
import zipfile

from operator_tools.dump_decoders import NotDecoded

GROUP = "org/apache/kafka"
RELEASE = "4.4.0"  # the pinned Kafka release (kafka-target/pom.xml; conformance/targets/kafka_jvm.PINNED)
M2 = os.environ.get("KLC_M2_REPOSITORY", os.path.join(os.path.expanduser("~"), ".m2", "repository"))

# topic → (artifact, folder of its definitions in the jar, definitions' "type", file name filter)
TOPICS = {
    "cluster-metadata": ("kafka-metadata", "common/metadata/", "metadata", None),
    "remote-log-metadata": ("kafka-storage", "message/", "metadata", "Remote"),
    "share-group-state": ("kafka-share-coordinator", "common/message/", None, "Share"),
}


class SchemaUnavailable(RuntimeError):
    """The release's jar holding the definitions could not be found or fetched."""


def jar(artifact: str, release: str = RELEASE) -> str:
    """The jar's path in the local Maven repository, fetched there first if missing."""
    path = os.path.join(M2, GROUP, artifact, release, f"{artifact}-{release}.jar")
    if not os.path.isfile(path):
        get = [
            "mvn",
            "-q",
            "-B",
            "dependency:get",
            f"-Dartifact=org.apache.kafka:{artifact}:{release}",
            "-Dtransitive=false",
        ]
        try:
            subprocess.run(get, capture_output=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SchemaUnavailable(
                f"{artifact}-{release}.jar is not in {M2} and Maven could not fetch it: {e}"
            ) from None
    if not os.path.isfile(path):
        raise SchemaUnavailable(f"{artifact}-{release}.jar is not in {M2} and `mvn dependency:get` did not fetch it")
    return path


_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*')


def parse_definition(text: str) -> dict:
    """A message definition: JSON with ``//`` comments (outside strings) dropped."""
    return json.loads(_COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text))


@functools.cache
def definitions(topic: str, release: str = RELEASE) -> dict[str, dict]:
    """Every message definition of ``topic``'s records in the release's jar, by name."""
    artifact, folder, kind, prefix = TOPICS[topic]
    out = {}
    with zipfile.ZipFile(jar(artifact, release)) as z:
        for name in z.namelist():
            base = name[len(folder) :]
            if not name.startswith(folder) or "/" in base or not base.endswith(".json"):
                continue
            if prefix and not base.startswith(prefix):
                continue
            d = parse_definition(z.read(name).decode("utf-8"))
            if kind is None or d.get("type") == kind:
                out[d["name"]] = d
    return out


@functools.cache
def by_api_key(topic: str, kind: str | None = None, release: str = RELEASE) -> dict[int, dict]:
    """The topic's definitions by api key (of one ``type`` when given: coordinator key or value)."""
    return {d["apiKey"]: d for d in definitions(topic, release).values() if kind is None or d.get("type") == kind}


def _versions(spec: str | None) -> range:
    """``"0+"``, ``"1-3"``, ``"2"`` or ``"none"`` as a range of versions."""
    if not spec or spec == "none":
        return range(0)
    if spec.endswith("+"):
        return range(int(spec[:-1]), 1 << 15)
    low, _, high = spec.partition("-")
    return range(int(low), int(high or low) + 1)


def camel(name: str) -> str:
    return name[:1].lower() + name[1:]


class Reader:
    """The protocol's primitives over one byte string; NotDecoded when the bytes run out."""

    def __init__(self, data: bytes, pos: int = 0):
        self.data, self.pos = data, pos

    def take(self, n: int) -> bytes:
        if n < 0 or n > len(self.data) - self.pos:
            raise NotDecoded(f"{n} bytes wanted at byte {self.pos}, {len(self.data) - self.pos} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def fixed(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def uvarint(self) -> int:
        value = shift = 0
        for _ in range(5):
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
        raise NotDecoded(f"unsigned varint longer than 5 bytes before byte {self.pos}")

    def varint(self) -> int:
        u = self.uvarint()
        return (u >> 1) ^ -(u & 1)

    def length(self, flexible: bool, wide: bool) -> int:
        """A length or count; −1 for null (compact: varint − 1; else int16 for strings, int32 otherwise)."""
        if flexible:
            return self.uvarint() - 1
        return self.fixed(">i") if wide else self.fixed(">h")


_FIXED = {"bool": ">?", "int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I", "int64": ">q",
          "float64": ">d"}  # fmt: skip


class Message:
    """One definition, decoding any of its versions."""

    def __init__(self, definition: dict):
        self.d = definition
        self.name = definition["name"]
        self.valid = _versions(definition.get("validVersions"))
        self.flexible_from = _versions(definition.get("flexibleVersions"))
        self.structs = {s["name"]: s for s in definition.get("commonStructs", ())}

    def decode(self, data: bytes, version: int, pos: int = 0) -> dict:
        """The fields of ``data[pos:]`` at ``version``; NotDecoded if it is not that, or bytes remain."""
        if version not in self.valid:
            raise NotDecoded(f"{self.name} version {version} is not one of {self.d.get('validVersions')}")
        r = Reader(data, pos)
        out = self._struct(r, self.d["fields"], version, version in self.flexible_from)
        if r.pos != len(data):
            raise NotDecoded(f"{len(data) - r.pos} bytes left after the fields of {self.name} v{version}")
        return out

    def _struct(self, r: Reader, fields: list, version: int, flexible: bool) -> dict:
        out, tagged = {}, {}
        for f in fields:
            if version not in _versions(f.get("versions")):
                continue
            if "tag" in f and version in _versions(f.get("taggedVersions")):
                tagged[f["tag"]] = f
                continue
            out[camel(f["name"])] = self._field(r, f, version, flexible)
        if flexible:
            for _ in range(r.uvarint()):
                tag, size = r.uvarint(), r.uvarint()
                at = r.pos
                raw = r.take(size)
                f = tagged.get(tag)
                if f is None:  # a tag this release does not define: kept, as hex
                    out.setdefault("_unknownTaggedFields", {})[str(tag)] = raw.hex()
                    continue
                sub = Reader(r.data[: at + size], at)
                out[camel(f["name"])] = self._field(sub, f, version, flexible)
                if sub.pos != at + size:
                    raise NotDecoded(f"tagged field {f['name']} at byte {at}: {at + size - sub.pos} bytes left")
        return out

    def _field(self, r: Reader, f: dict, version: int, flexible: bool):
        nullable = version in _versions(f.get("nullableVersions"))
        return self._value(r, f["type"], f, version, flexible, nullable)

    def _value(self, r: Reader, kind: str, f: dict, version: int, flexible: bool, nullable: bool):
        at = r.pos
        if kind in _FIXED:
            return r.fixed(_FIXED[kind])
        if kind == "uuid":
            return base64.urlsafe_b64encode(r.take(16)).decode("ascii").rstrip("=")
        if kind == "string":
            n = r.length(flexible, wide=False)
            if n < 0:
                return self._null(nullable, f, at)
            try:
                return r.take(n).decode("utf-8")
            except UnicodeDecodeError:
                raise NotDecoded(f"{f['name']} at byte {at} is not UTF-8") from None
        if kind in ("bytes", "records"):
            n = r.length(flexible, wide=True)
            # as Kafka's JSON converters print bytes (Jackson's BinaryNode): standard base64
            return self._null(nullable, f, at) if n < 0 else base64.b64encode(r.take(n)).decode("ascii")
        if kind.startswith("[]"):
            n = r.length(flexible, wide=True)
            if n < 0:
                return self._null(nullable, f, at)
            if n > len(r.data) - r.pos:
                raise NotDecoded(f"{f['name']}: {n} elements at byte {at} in {len(r.data) - r.pos} bytes")
            return [self._value(r, kind[2:], f, version, flexible, False) for _ in range(n)]
        fields = f.get("fields") or self.structs.get(kind, {}).get("fields")
        if fields is None:
            raise NotDecoded(f"{self.name}: field {f['name']} has a type {kind!r} this decoder does not know")
        return self._struct(r, fields, version, flexible)

    def _null(self, nullable: bool, f: dict, at: int):
        if not nullable:
            raise NotDecoded(f"{f['name']} at byte {at} is null, which its version does not allow")
        return None


@functools.cache
def message(topic: str, api_key: int, kind: str | None = None) -> Message | None:
    d = by_api_key(topic, kind).get(api_key)
    return None if d is None else Message(d)


FRAME_VERSION = 1  # AbstractApiMessageSerde's frame: 0 was KRaft's 2.8 preview, refused since


def framed(topic: str, data: bytes) -> dict:
    """A value framed as AbstractApiMessageSerde frames it (``__cluster_metadata``,
    ``__remote_log_metadata``): unsigned varints frame version, api key, record version, then
    the record, decoded by its definition."""
    r = Reader(data)
    frame = r.uvarint()
    if frame != FRAME_VERSION:
        raise NotDecoded(f"frame version {frame}; only {FRAME_VERSION} is in use")
    api_key, version = r.uvarint(), r.uvarint()
    out = {"frameVersion": frame, "apiKey": api_key}
    m = message(topic, api_key)
    if m is None:
        known = ", ".join(str(k) for k in sorted(by_api_key(topic)))
        raise NotDecoded(f"api key {api_key} is no record type of Kafka {RELEASE} (those are {known})")
    return out | {"type": m.name, "version": version, "data": m.decode(data, version, r.pos)}


def coordinator_key(topic: str, data: bytes) -> tuple[dict, int]:
    """A coordinator record's key (CoordinatorRecordSerde): int16 record type, the key at v0."""
    r = Reader(data)
    api_key = r.fixed(">h")
    m = message(topic, api_key, "coordinator-key")
    if m is None:
        raise NotDecoded(f"record type {api_key} is no {topic} key of Kafka {RELEASE}")
    return {"type": api_key, "name": m.name, "data": m.decode(data, 0, r.pos)}, api_key


def coordinator_value(topic: str, data: bytes, api_key: int) -> dict:
    """A coordinator record's value: int16 version, then the value of the key's record type."""
    r = Reader(data)
    version = r.fixed(">h")
    m = message(topic, api_key, "coordinator-value")
    if m is None:
        raise NotDecoded(f"record type {api_key} has no {topic} value in Kafka {RELEASE}")
    return {"version": version, "name": m.name, "data": m.decode(data, version, r.pos)}
