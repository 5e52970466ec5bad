"""Which files of a partition are index files (spec §3)."""

from __future__ import annotations

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


def is_index_file(path: str) -> bool:
    """An offset, time or transaction index, also as a ``.deleted``, ``.swap`` or ``.cleaned`` file."""
    name = path.removesuffix(".deleted").removesuffix(".swap").removesuffix(".cleaned")
    return name.endswith(INDEX_SUFFIXES)
