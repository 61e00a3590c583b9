"""Automatic compaction, as kube-apiserver does it (upstream: etcd3/compact.go).

Every interval the compactor takes the compactors' lease (a compare-and-swap on a version number that
the backend keeps: `compact_rev_key` in etcd) and, if it won, compacts to the revision it recorded at the
previous interval. History is therefore kept for one to two intervals (5 to 10 minutes by default), and
when several API servers share one etcd only one of them compacts per interval.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from .errors import StorageError
from .interface import KV

log = logging.getLogger(__name__)

DEFAULT_COMPACTION_INTERVAL = 300.0


class Compactor:
    """Compacts `kv` every `interval` seconds to the revision seen one interval earlier."""

    def __init__(
        self, kv: KV, interval: float = DEFAULT_COMPACTION_INTERVAL, on_compacted: Callable[[int], None] | None = None
    ) -> None:
        self.kv = kv
        self.interval = interval
        self.on_compacted = on_compacted
        self.compacted_revision = 0
        self._version = 0
        self._last_revision = 0

    async def tick(self) -> None:
        """One round: claim the lease, compact to the revision recorded last round if it was won."""
        claimed, self._version, current = await self.kv.claim_compaction(self._version, self._last_revision)
        if claimed and self._last_revision:
            await self.kv.compact(self._last_revision)
            self.compacted_revision = self._last_revision
            if self.on_compacted is not None:
                self.on_compacted(self._last_revision)
            log.debug("compacted storage to revision %d", self._last_revision)
        self._last_revision = current

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.tick()
            except StorageError as e:
                log.warning("storage compaction failed: %s", e)
