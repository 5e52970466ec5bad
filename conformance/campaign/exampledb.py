"""A Hypothesis example database over a campaign's results table (HypoFuzz-style sharing).

Every failing task row carries the key Hypothesis filed its failing example under (``db_key``, from
the campaign machine's class name, which encodes the task's target and rates) and the example's
choice sequence (``choices``).  :class:`CampaignDatabase` serves them read-only, so a plain
``pytest`` run replays what a campaign found — ``tests/test_campaign_finds.py`` rebuilds each task's
machine and runs it on this database with only Hypothesis's ``reuse`` phase.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis.database import ExampleDatabase

from conformance.campaign import table


class CampaignDatabase(ExampleDatabase):
    """Read-only: ``fetch`` yields the failing examples of every row filed under the key; ``save``,
    ``delete`` and ``move`` do nothing (the results table is only written by campaigns)."""

    def __init__(self, results_dir: str):
        super().__init__()
        self.results_dir = results_dir
        self._by_key: dict[bytes, list[bytes]] = {}
        for row in table.read(results_dir):
            if row.get("db_key") and row.get("choices"):
                values = self._by_key.setdefault(bytes.fromhex(row["db_key"]), [])
                values.extend(bytes.fromhex(c) for c in row["choices"] if bytes.fromhex(c) not in values)

    def __repr__(self) -> str:
        return f"CampaignDatabase({self.results_dir!r})"

    def fetch(self, key: bytes) -> Iterable[bytes]:
        yield from self._by_key.get(key, ())

    def save(self, key: bytes, value: bytes) -> None:
        pass

    def delete(self, key: bytes, value: bytes) -> None:
        pass
