"""Iterating the batches of a ``.log`` file as Kafka's ``FileLogInputStream`` does (spec §1.10),
plus ``ensureValid`` on each batch as segment recovery does (§4.6 step 3a).

The outcome is a :class:`FileIteration`: the batches before the stop, the number of valid bytes
(where recovery would truncate), and why iteration stopped:

* ``end`` — position reached ``end`` exactly;
* ``short-tail`` — 1…17 bytes remain (rule 1: never examined, silently ignored);
* ``torn`` — a batch header declares a size that runs past ``end`` (rule 5: silently ignored);
* ``corrupt`` — size field < 14 (rule 4) or, when validating, ``ensureValid`` failed (§1.9);
  ``error`` holds the Kafka exception kind, reason and position.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import attrs

from model.errors import CORRUPT_RECORD, RecordFormatError
from model.records import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, RECORD_OVERHEAD_V0, V2_HEADER_SIZE, Batch

END, SHORT_TAIL, TORN, CORRUPT = "end", "short-tail", "torn", "corrupt"


@attrs.frozen
class FileIteration:
    batches: tuple[Batch, ...]
    valid_bytes: int  # position just after the last batch returned
    stop: str
    error: RecordFormatError | None = None

    @property
    def truncated_bytes(self) -> int:
        """Bytes recovery would remove (§4.6 step 5), relative to the iteration ``end``."""
        return self._end - self.valid_bytes

    _end: int = 0


def iterate_file(data: bytes, start: int = 0, end: int | None = None, *, validate: bool = True) -> FileIteration:
    """Walk the batches of ``data[start:end]`` by the rules of §1.10 (and §1.9 if ``validate``)."""
    end = len(data) if end is None else min(end, len(data))
    batches: list[Batch] = []
    position = start
    while True:
        # Rule 1: a tail of 17 bytes or fewer is never examined.
        if position >= end - HEADER_SIZE_UP_TO_MAGIC:
            stop = END if position >= end else SHORT_TAIL
            return FileIteration(tuple(batches), position, stop, None, end)
        size = struct.unpack_from(">i", data, position + 8)[0]
        # Rule 4: too small to hold even a v0 record (includes zero fill and negative sizes).
        if size < RECORD_OVERHEAD_V0:
            error = RecordFormatError(
                CORRUPT_RECORD, "size-below-minimum", position,
                f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
            )  # fmt: skip
            return FileIteration(tuple(batches), position, CORRUPT, error, end)
        # Rule 5: the declared batch runs past the end: a torn write, treated as end of data.
        if position > end - LOG_OVERHEAD - size:
            return FileIteration(tuple(batches), position, TORN, None, end)
        batch = Batch(position, bytes(data[position : position + LOG_OVERHEAD + size]))
        if validate:
            error = batch.validation_error()
            if error is not None:
                return FileIteration(tuple(batches), position, CORRUPT, error, end)
        batches.append(batch)
        position += LOG_OVERHEAD + size


def framed_batches(data: bytes, start: int = 0) -> tuple[Batch, ...]:
    """The batches from ``start`` as a reader that never calls ``ensureValid`` sees them — Kafka's
    ``batchesFrom`` iterator under ``readNextOffset`` and ``translateOffset`` (§1.10, §4.5): framing
    only, a CRC mismatch goes unnoticed.  A size field below 14 raises, as the iterator does (rule
    4).  A v2 batch too short for its 61-byte header raises too: Kafka reads those 61 bytes at the
    batch's position from the file, past the batch, or fails at the end of the file; the model and
    impl declare it instead of reading a header out of the next batch."""
    return tuple(framed(data, start))


def framed(data: bytes, start: int = 0) -> Iterator[Batch]:
    """:func:`framed_batches` one at a time: an error is raised where the iteration reaches it."""
    walk = iterate_file(data, start, validate=False)
    for batch in walk.batches:
        if batch.is_v2 and batch.size < V2_HEADER_SIZE:
            raise RecordFormatError(
                CORRUPT_RECORD,
                "batch-too-small",
                batch.position,
                f"a v2 batch of {batch.size} bytes has no full header",
            )
        yield batch
    if walk.error is not None:
        raise walk.error


def search_for_offset(batches, target: int) -> Batch | None:
    """FileRecords.searchForOffsetFromPosition as Kafka 4.1+ runs it (KAFKA-18989; §4.5 rule 1 as
    docs/kafka-target.md states it): the first batch whose base offset is ``target``; at the first
    base offset above it, the batch before if that one's last offset reaches ``target``, else that
    one; past the last batch, the last if it reaches ``target``.  Base offsets are asked batch by
    batch, so a legacy wrapper that does not decompress raises (RecordFormatError) only once the
    scan reaches it."""
    previous = None
    for batch in batches:
        base = batch.base_offset()
        if base == target:
            return batch
        if base > target:
            return previous if previous is not None and previous.header().last_offset >= target else batch
        previous = batch
    return previous if previous is not None and previous.header().last_offset >= target else None
