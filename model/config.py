"""The topic configuration the log layer reads (spec §8), with Kafka's defaults and minimums.

``num.recovery.threads.per.data.dir`` (a broker config, §6.2) is accepted and validated like the
rest so scenarios are checked alike on both sides, and otherwise ignored: how many threads load a
dir's partitions changes nothing a load leaves.  ``transaction.partition.verification.enable`` (a
broker config, KIP-890) is read by the producer state: default false here, where Kafka's is true
(a scenario's transactional appends had no coordinator to verify them before the step that does).
"""

from __future__ import annotations

import attrs

LONG_MAX = 2**63 - 1

DEFAULTS = {
    "segment.bytes": 1073741824,
    "segment.ms": 604800000,
    "segment.jitter.ms": 0,
    "segment.index.bytes": 10485760,
    "index.interval.bytes": 4096,
    "flush.messages": LONG_MAX,
    "retention.ms": 604800000,
    "retention.bytes": -1,
    "file.delete.delay.ms": 60000,
    "delete.retention.ms": 86400000,
    "max.message.bytes": 1048588,
    "preallocate": False,
    "cleanup.policy": "delete",
    "message.timestamp.before.max.ms": LONG_MAX,
    "message.timestamp.after.max.ms": 3600000,  # 4.0 on (KIP-937); before, Long.MAX
    # CreateTime: a batch keeps the producer's timestamps; LogAppendTime: the leader stamps its clock (§4.14)
    "message.timestamp.type": "CreateTime",
    # the codec a leader writes (LogValidator, §4.14): producer keeps the batch's own, any other
    # name recompresses a batch of another codec ("uncompressed": none)
    "compression.type": "producer",
    "num.recovery.threads.per.data.dir": 1,
    "transaction.partition.verification.enable": False,
}
MINIMUMS = {
    "segment.bytes": 14,
    "segment.ms": 1,
    "segment.jitter.ms": 0,
    "segment.index.bytes": 4,
    "index.interval.bytes": 0,
    "flush.messages": 1,
    "retention.ms": -1,
    "file.delete.delay.ms": 0,
    "delete.retention.ms": 0,
    "max.message.bytes": 0,
    "message.timestamp.before.max.ms": 0,
    "message.timestamp.after.max.ms": 0,
    "num.recovery.threads.per.data.dir": 1,
}
POLICIES = ("delete", "compact", "compact,delete", "delete,compact")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")  # BrokerCompressionType's order
# LogConfig's INT settings (the rest are LONG): a value past Int.MAX is refused ("Not a number of
# type INT"), so no segment, index or batch can be 2 GiB or more
INTS = ("segment.bytes", "segment.index.bytes", "index.interval.bytes", "max.message.bytes",
        "num.recovery.threads.per.data.dir")  # fmt: skip
INT_MAX = 2**31 - 1


class ConfigError(ValueError):
    def __init__(self, key: str, value, reason: str):
        self.key, self.value, self.reason = key, value, reason
        super().__init__(f"Invalid value {value!r} for configuration {key}: {reason}")


def _check(key: str, value):
    if key not in DEFAULTS:
        raise ConfigError(key, value, "unknown configuration")
    default = DEFAULTS[key]
    if isinstance(default, bool):
        if type(value) is not bool:
            raise ConfigError(key, value, "expected true or false")
    elif isinstance(default, int):
        if type(value) is not int:
            raise ConfigError(key, value, "expected an integer")
        if value < -(2**63) or value > LONG_MAX:
            raise ConfigError(key, value, "out of the range of a long")
        if key in INTS and not -(2**31) <= value <= INT_MAX:
            raise ConfigError(key, value, "Not a number of type INT")
        if key in MINIMUMS and value < MINIMUMS[key]:
            raise ConfigError(key, value, f"Value must be at least {MINIMUMS[key]}")
    elif key == "message.timestamp.type":
        if value not in TIMESTAMP_TYPES:
            raise ConfigError(key, value, "String must be one of: CreateTime, LogAppendTime")
    elif key == "compression.type":
        if value not in COMPRESSION_TYPES:
            raise ConfigError(key, value, "String must be one of: " + ", ".join(COMPRESSION_TYPES))
    elif value not in POLICIES:
        raise ConfigError(key, value, "expected delete, compact or both")
    return value


@attrs.frozen
class Config:
    values: dict = attrs.field(factory=dict)

    @classmethod
    def of(cls, overrides: dict | None = None) -> Config:
        merged = dict(DEFAULTS)
        for key, value in (overrides or {}).items():
            merged[key] = _check(key, value)
        return cls(merged)

    def updated(self, overrides: dict) -> Config:
        """This config with ``overrides`` in force (a topic's config altered, LogConfig.fromProps
        over the broker's defaults and the topic's overrides)."""
        return Config.of({**self.values, **overrides})

    def __getattr__(self, name: str):
        key = name.replace("_", ".")
        try:
            return self.values[key]
        except KeyError:
            raise AttributeError(name) from None

    def jitter_bound(self) -> int:
        jitter = self.values["segment.jitter.ms"]
        return 0 if jitter == 0 else min(jitter, self.values["segment.ms"])
