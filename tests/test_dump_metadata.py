"""The internal-topic decoders that read the release's own message definitions
(operator_tools/message_schemas.py), checked against the release's own classes: the kafka-metadata
jar's ``MetadataRecordType`` enumeration, and its JSON converters on records of every type at every
version, written by Kafka and decoded here."""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.cli import main
from operator_tools import message_schemas as ms
from operator_tools.dump_topics import cluster_metadata_record, remote_log_metadata_record, share_group_state_record

JAVA = Path(__file__).parent / "java" / "MetadataRecords.java"
ITU = "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions"
JARS = (
    ("org/apache/kafka/kafka-metadata", "4.4.0"), ("org/apache/kafka/kafka-clients", "4.4.0"),
    ("org/apache/kafka/kafka-server-common", "4.4.0"), ("com/fasterxml/jackson/core/jackson-databind", "2.21.7"),
    ("com/fasterxml/jackson/core/jackson-core", "2.21.7"), ("com/fasterxml/jackson/core/jackson-annotations", "2.21"),
)  # fmt: skip


def _classpath() -> str:
    paths = []
    for group, version in JARS:
        artifact = group.rsplit("/", 1)[1]
        path = Path(ms.M2) / group / version / f"{artifact}-{version}.jar"
        if not path.is_file():
            ms.jar(artifact, version) if group.startswith("org/apache/kafka") else None
        if not path.is_file():
            pytest.skip(f"{path} not in the local Maven repository")
        paths.append(str(path))
    return os.pathsep.join(paths)


def _java(*args: str, stdin: str = "") -> list[str]:
    if shutil.which("java") is None:
        pytest.skip("no java")
    done = subprocess.run(
        ["java", "-cp", _classpath(), str(JAVA), *args], input=stdin, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def _value(rng: random.Random, kind: str, f: dict, version: int, structs: dict):
    """A random value of a field's type, as Kafka's JSON converters read it."""
    if version in ms._versions(f.get("nullableVersions")) and rng.random() < 0.2:
        return None
    if kind == "bool":
        return rng.random() < 0.5
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
    if kind in bits:
        return rng.randrange(-(1 << (bits[kind] - 1)), 1 << (bits[kind] - 1))
    if kind in ("uint16", "uint32"):
        return rng.randrange(0, 1 << int(kind[4:]))
    if kind == "float64":
        return rng.choice([0.5, -2.25, 1e10])
    if kind == "string":
        return "".join(rng.choice("abcxyz-_.é中") for _ in range(rng.randrange(6)))
    if kind in ("bytes", "records"):
        return base64.b64encode(rng.randbytes(rng.randrange(5))).decode()
    if kind == "uuid":
        return base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")
    if kind.startswith("[]"):
        return [
            _value(rng, kind[2:], {**f, "nullableVersions": "none"}, version, structs) for _ in range(rng.randrange(3))
        ]
    fields = f.get("fields") or structs[kind]["fields"]
    return _struct(rng, fields, version, structs)


def _struct(rng, fields, version, structs) -> dict:
    return {
        ms.camel(f["name"]): _value(rng, f["type"], f, version, structs)
        for f in fields
        if version in ms._versions(f.get("versions"))
    }


def test_every_record_type_of_the_release_is_known_by_name():
    """The definitions read from the jar name exactly MetadataRecordType's constants: api key,
    record class and supported versions (RegisterControllerRecord is 27, not 26)."""
    theirs = {}
    for line in _java("types"):
        api_key, name, low, high = line.split()
        theirs[int(api_key)] = (name, range(int(low), int(high) + 1))
    ours = {k: (d["name"], ms._versions(d["validVersions"])) for k, d in ms.by_api_key("cluster-metadata").items()}
    assert ours == theirs and theirs[27][0] == "RegisterControllerRecord"


def test_records_kafka_writes_decode_to_what_kafka_reads_in_them():
    """Every type at every version: random field values, written by Kafka's own classes, decoded
    here field by field to what Kafka's JSON converter says they hold."""
    rng = random.Random(56)
    cases = []
    for api_key, d in sorted(ms.by_api_key("cluster-metadata").items()):
        structs = {s["name"]: s for s in d.get("commonStructs", ())}
        for version in ms._versions(d["validVersions"]):
            for _ in range(3):
                cases.append((api_key, version, _struct(rng, d["fields"], version, structs)))
    answers = _java(stdin="".join(f"{k} {v} {json.dumps(j)}\n" for k, v, j in cases))
    assert len(answers) == len(cases)
    checked = 0
    for (api_key, version, _), answer in zip(cases, answers, strict=True):
        wire, kafka = answer.split("\t", 1)
        assert wire != "ERROR", (api_key, version, kafka)
        frame = bytes([1, api_key, version]) + bytes.fromhex(wire)  # one-byte varints here
        _, decoded = cluster_metadata_record(None, frame)
        assert decoded["type"] == ms.by_api_key("cluster-metadata")[api_key]["name"]
        assert decoded["data"] == json.loads(kafka), (api_key, version)
        checked += 1
    assert checked == len(cases) > 27 * 3


def test_the_real_snapshot_decodes_every_record(shared_dir):
    """A KRaft snapshot of the real broker: every record decodes, fields by name, none as hex."""
    snapshot = shared_dir / "real-data" / ITU / "clean-2f57540f" / "kafka-data" / "__cluster_metadata-0"
    path = snapshot / "00000000000000021265-0000000006.checkpoint"
    out = CliRunner().invoke(main, ["dump", "--json", "--cluster-metadata-decoder", str(path)]).output
    values = [r["value_decoded"] for line in out.splitlines() for r in json.loads(line).get("records", ())
              if "control_type" not in r]  # fmt: skip
    assert len(values) > 100 and all("data" in v and "fields_hex" not in v for v in values)
    kinds = {v["type"] for v in values}
    assert {"RegisterBrokerRecord", "RegisterControllerRecord", "PartitionRecord", "TopicRecord"} <= kinds
    broker = next(v for v in values if v["type"] == "RegisterBrokerRecord")["data"]
    assert broker["brokerId"] == 1 and broker["endPoints"][0]["port"] == 9092


def test_bad_metadata_bytes_are_not_decoded_with_the_reason():
    _, v = cluster_metadata_record(None, bytes([1, 99, 0]))
    assert "api key 99 is no record type" in str(v)
    _, v = cluster_metadata_record(None, bytes([1, 2, 0, 5]))  # a TopicRecord cut short
    assert "bytes wanted" in str(v)
    _, v = cluster_metadata_record(None, bytes([0, 2, 0]))
    assert "frame version 0" in str(v)


def test_remote_log_metadata_and_share_group_state_decoders():
    """Records of the two 4.x internal topics, built by their definitions' wire rules."""
    remote = ms.by_api_key("remote-log-metadata")
    assert {d["name"] for d in remote.values()} >= {
        "RemoteLogSegmentMetadataRecord",
        "RemotePartitionDeleteMetadataRecord",
    }
    delete = next(k for k, d in remote.items() if d["name"] == "RemotePartitionDeleteMetadataRecord")
    d = remote[delete]
    version = max(ms._versions(d["validVersions"]))
    flexible = version in ms._versions(d["flexibleVersions"])
    assert flexible  # the value below is written compact
    topic_id = bytes(range(16))
    # TopicIdPartition {name "t" (compact), id, partition 7, no tagged fields}, brokerId 3, eventTimestampMs 9,
    # state 1, no tagged fields
    body = b"\x02t" + topic_id + (7).to_bytes(4, "big") + b"\x00" + (3).to_bytes(4, "big") + (9).to_bytes(8, "big")
    body += b"\x01\x00"
    _, v = remote_log_metadata_record(None, bytes([1, delete, version]) + body)
    assert v["type"] == "RemotePartitionDeleteMetadataRecord", v
    assert v["data"]["topicIdPartition"]["name"] == "t" and v["data"]["brokerId"] == 3
    share = ms.by_api_key("share-group-state", "coordinator-key")
    assert {d["name"] for d in share.values()} == {"ShareSnapshotKey", "ShareUpdateKey"}
    key = (1).to_bytes(2, "big") + (1).to_bytes(2, "big") + b"g" + topic_id + (4).to_bytes(4, "big")
    k, v = share_group_state_record(key, None)
    assert k == {
        "type": 1,
        "name": "ShareUpdateKey",
        "data": {"groupId": "g", "topicId": "AAECAwQFBgcICQoLDA0ODw", "partition": 4},
    }
    assert v == "<DELETE>"
