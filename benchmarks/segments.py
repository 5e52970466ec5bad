"""In-memory ``.log`` segments for the benchmarks, written by the model's encoder.

Every batch is a real v2 batch from ``model.records.build_batch_v2`` (uncompressed, CreateTime,
consecutive offsets, increasing timestamps), each with its own pseudo-random keys and values of
jittered length, so batch sizes vary around the target and no two batches share bytes.  A seeded
generator keeps runs reproducible.  The segment is built once per run, outside any timing.
"""

from __future__ import annotations

import random

import attrs

from model.records import build_batch_v2

CRC_START = 21  # v2: CRC-32C covers [attributes, end of batch) (spec §1.5)
BASE_TIMESTAMP = 1_700_000_000_000


@attrs.frozen
class Segment:
    """A built segment: its bytes and where every batch sits (``positions[i]``, ``sizes[i]``)."""

    label: str
    data: bytes
    positions: tuple[int, ...]
    sizes: tuple[int, ...]

    @property
    def batches(self) -> int:
        return len(self.positions)

    @property
    def mean_batch_bytes(self) -> float:
        return len(self.data) / len(self.positions)

    def crc_ranges(self) -> list[tuple[int, int]]:
        """The byte range each batch's CRC-32C covers: [position + 21, position + size)."""
        return [(p + CRC_START, p + s) for p, s in zip(self.positions, self.sizes, strict=True)]

    def prefix(self, nbytes: int) -> Segment:
        """The leading whole batches holding at most ``nbytes`` (at least one batch)."""
        n = 1
        while n < len(self.positions) and self.positions[n] + self.sizes[n] <= nbytes:
            n += 1
        end = self.positions[n - 1] + self.sizes[n - 1]
        return Segment(self.label, self.data[:end], self.positions[:n], self.sizes[:n])


def build_segment(
    label: str, total_bytes: int, batch_bytes: int, records_per_batch: int, seed: int = 0, producer_id: int | None = None
) -> Segment:
    """Batches of about ``batch_bytes`` (``records_per_batch`` records each) until the segment holds
    at least ``total_bytes``; with ``producer_id`` every batch is an idempotent producer's (epoch 0,
    sequences following the offsets), as Kafka's producers write by default since 3.0 (KIP-679)."""
    rng = random.Random(seed)
    # Per-record framing is ~20 bytes (length, attributes, deltas, key/value lengths, header count).
    value_len = max(1, (batch_bytes - 61) // records_per_batch - 20 - 12)
    pool = rng.randbytes(total_bytes + 4 * batch_bytes)  # fresh bytes for every value, never reused
    cursor = 0
    out = bytearray()
    positions: list[int] = []
    sizes: list[int] = []
    offset = 0
    timestamp = BASE_TIMESTAMP
    while len(out) < total_bytes:
        entries = []
        for _ in range(records_per_batch):
            n = rng.randint(value_len * 3 // 4, value_len * 5 // 4)
            if cursor + n + 12 > len(pool):
                cursor = 0
            key, value = pool[cursor : cursor + 12], pool[cursor + 12 : cursor + 12 + n]
            cursor += n + 12
            timestamp += rng.randint(0, 3)
            entries.append((timestamp, key, value))
        fields = {} if producer_id is None else {"producer_id": producer_id, "producer_epoch": 0, "base_sequence": offset % 2**31}
        batch = build_batch_v2(offset, entries, partition_leader_epoch=0, **fields)
        positions.append(len(out))
        sizes.append(len(batch))
        out += batch
        offset += records_per_batch
    return Segment(label, bytes(out), tuple(positions), tuple(sizes))


if __name__ == "__main__":  # a part of ``python -m benchmarks``, not a benchmark of its own
    import sys

    print(f"benchmarks.segments: {__doc__.strip().splitlines()[0]}\nIts figures are measured by: python -m benchmarks [--help]")
    sys.exit(0 if sys.argv[1:] in ([], ["--help"], ["-h"]) else 2)
