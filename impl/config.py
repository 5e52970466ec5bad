"""Topic-level log configuration (spec §8) with Kafka's defaults and validation.

Keys are Kafka's topic config names (``segment.bytes``, ``retention.ms``, …) so a scenario file reads
like a topic's ``--config``.  Only what the log layer uses is here.  Two broker configs ride along:
``num.recovery.threads.per.data.dir`` (spec §6.2, §8), read by the LogManager from its default
config only (a topic override of it means nothing), and ``transaction.partition.verification.enable``
(KIP-890), which the producer state reads: off unless a scenario turns it on (Kafka's default is on).
"""

from __future__ import annotations

import attrs

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
# BrokerCompressionType's names, in its order; "producer" keeps the codec a batch came with
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
# LogConfig's INT settings: none can reach 2 GiB, so neither can a segment file
INT_KEYS = frozenset(
    {"segment.bytes", "segment.index.bytes", "index.interval.bytes", "max.message.bytes",
     "num.recovery.threads.per.data.dir"}
)  # fmt: skip


class ConfigError(ValueError):
    """A config value Kafka's validator would refuse: names the key and the value."""

    def __init__(self, key: str, value, reason: str):
        self.key, self.value, self.reason = key, value, reason
        super().__init__(f"Invalid value {value!r} for configuration {key}: {reason}")


# key → (attribute, default, minimum)
_KEYS = {
    "segment.bytes": ("segment_bytes", 1073741824, 14),
    "segment.ms": ("segment_ms", 604800000, 1),
    "segment.jitter.ms": ("segment_jitter_ms", 0, 0),
    "segment.index.bytes": ("segment_index_bytes", 10485760, 4),
    "index.interval.bytes": ("index_interval_bytes", 4096, 0),
    "flush.messages": ("flush_messages", LONG_MAX, 1),
    "retention.ms": ("retention_ms", 604800000, -1),
    "retention.bytes": ("retention_bytes", -1, None),
    "file.delete.delay.ms": ("file_delete_delay_ms", 60000, 0),
    "max.message.bytes": ("max_message_bytes", 1048588, 0),
    "preallocate": ("preallocate", False, None),
    "cleanup.policy": ("cleanup_policy", "delete", None),
    "delete.retention.ms": ("delete_retention_ms", 86400000, 0),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", LONG_MAX, 0),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", 3600000, 0),
    "message.timestamp.type": ("message_timestamp_type", "CreateTime", None),
    "compression.type": ("compression_type", "producer", None),
    "num.recovery.threads.per.data.dir": ("num_recovery_threads_per_data_dir", 1, 1),
    "transaction.partition.verification.enable": ("transaction_partition_verification_enable", False, None),
}


@attrs.frozen
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    retention_ms: int = 604800000
    retention_bytes: int = -1
    file_delete_delay_ms: int = 60000
    max_message_bytes: int = 1048588
    preallocate: bool = False
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86400000  # how long the cleaner keeps a tombstone (KIP-534 delete horizon)
    message_timestamp_before_max_ms: int = LONG_MAX  # LogValidator's bounds on a CreateTime (§4.14)
    message_timestamp_after_max_ms: int = 3600000
    message_timestamp_type: str = "CreateTime"  # LogAppendTime: the leader stamps batches with its clock
    compression_type: str = "producer"  # the codec a leader writes; producer: the batch's own (§4.14)
    num_recovery_threads_per_data_dir: int = 1  # broker config: partitions of one dir loaded in parallel
    # broker config: a client's transactional batch needs a verification guard (KIP-890)
    transaction_partition_verification_enable: bool = False

    @classmethod
    def from_dict(cls, values: dict) -> LogConfig:
        kwargs = {}
        for key, value in values.items():
            if key not in _KEYS:
                raise ConfigError(key, value, "unknown configuration")
            attr, default, minimum = _KEYS[key]
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ConfigError(key, value, "expected true or false")
            elif isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ConfigError(key, value, "expected an integer")
                if not -(2**63) <= value <= LONG_MAX:
                    raise ConfigError(key, value, "out of the range of a long")
                if key in INT_KEYS and not -(2**31) <= value <= INT_MAX:
                    raise ConfigError(key, value, "Not a number of type INT")  # LogConfig's INT settings
                if minimum is not None and value < minimum:
                    raise ConfigError(key, value, f"Value must be at least {minimum}")
            elif key == "message.timestamp.type":
                if value not in ("CreateTime", "LogAppendTime"):
                    raise ConfigError(key, value, "String must be one of: CreateTime, LogAppendTime")
            elif key == "compression.type":
                if value not in COMPRESSION_TYPES:
                    raise ConfigError(key, value, "String must be one of: " + ", ".join(COMPRESSION_TYPES))
            elif value not in ("delete", "compact", "compact,delete", "delete,compact"):
                raise ConfigError(key, value, "expected delete, compact or both")
            kwargs[attr] = value
        return cls(**kwargs)

    def updated(self, overrides: dict) -> LogConfig:
        """This config with ``overrides`` in force (validated as :meth:`from_dict` validates)."""
        changed = LogConfig.from_dict(overrides)
        return attrs.evolve(self, **{_KEYS[k][0]: getattr(changed, _KEYS[k][0]) for k in overrides})

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def compact_enabled(self) -> bool:
        return "compact" in self.cleanup_policy

    def jitter_bound(self) -> int:
        """``randomSegmentJitter``: 0 when ``segment.jitter.ms`` is 0, else the modulus min(jitter, segment.ms)."""
        return 0 if self.segment_jitter_ms == 0 else min(self.segment_jitter_ms, self.segment_ms)
