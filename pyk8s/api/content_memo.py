"""Results of pure functions of JSON values, kept by the values' content.

The replicas of a workload repeat one pod spec thousands of times, and what the API server derives from a spec
alone — its validation errors, its QoS class, its unknown fields, its managedFields field set — comes out the
same each time. Keyed by the value's canonical JSON (a microsecond for a pod spec), such a result is worked out
once per distinct spec. Callers keep only immutable results (str, tuple, bytes) and hand out copies of
anything mutable.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import orjson

T = TypeVar("T")


class ContentMemo:
    """One pure function's results by (extra key, content of the value), at most `limit` of them (cleared when
    full: the working set of distinct specs is small, and refilling is what a miss costs anyway)."""

    def __init__(self, limit: int = 2048) -> None:
        self.limit = limit
        self._entries: dict[tuple[Hashable, bytes], Any] = {}

    def get(self, value: Any, compute: Callable[[], T], extra: Hashable = None) -> T:
        """The memoised result for `value` (and `extra`, anything else the result depends on), or
        `compute()`'s, kept. Values that are not plain JSON (integers beyond 64 bits) are computed each time."""
        try:
            key = (extra, orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
        except TypeError:
            return compute()
        try:
            result: T = self._entries[key]
            return result
        except KeyError:
            pass
        result = compute()
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self._entries[key] = result
        return result
