"""The API server's own informers: what runs inside the API server reads its watch caches directly, as
upstream's in-process components read shared informers over a loopback client.

- `cached` / `cached_list`: a lister's Get and List, from the watch cache.
- `watch_forever`: every event of a store to a handler, the current objects first as ADDED, the watch started
  again whenever it ends (the aggregator's controllers, the legacy token tracking).
- `CacheFollower`: an in-memory index for what must decide within a request without awaiting anything (the RBAC
  and Node authorizers): every event of each store goes to `apply`, and `sync()` applies what is queued at once,
  so a request sees every change the caches already have, whether or not the follower's task has run since. A
  watch that ends (a consumer too slow, whose oldest event the cache dropped; a cache that stopped) is started
  again from the current objects, swapped in after `reset(kind)` with no await in between, so no request sees a
  gap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from ..api.meta import Object
from ..storage.cacher import CacheWatcher
from .registry.rest import ListOptions, RESTStore

log = logging.getLogger(__name__)

Apply = Callable[[str, str, Object | None], None]  # (kind, event type, object)
Handler = Callable[[str, Object], None]


async def watch_forever(rest: RESTStore, handle: Handler, what: str, namespace: str = "") -> None:
    """Hand every event of `rest` (in `namespace`, "" for all) to `handle(type, object)`, for ever."""
    while True:
        try:
            watcher = await rest.watch(namespace, ListOptions())
            async for ev in watcher:
                if ev.object is not None:
                    handle(ev.type, ev.object)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: restarting its watch", what)
            await asyncio.sleep(1)


def cached(rest: RESTStore, namespace: str, name: str) -> Object | None:
    """An object from the watch cache (upstream: a lister's Get), None when there is none."""
    entry = rest.cacher.get(rest.key(namespace, name))
    return entry.obj if entry is not None else None


def cached_list(rest: RESTStore, namespace: str = "") -> list[Object]:
    entries, _ = rest.cacher.list(rest.resource.collection_key(namespace))
    return [en.obj for en in entries]


class CacheFollower:
    def __init__(self, stores: Mapping[str, RESTStore], apply: Apply, reset: Callable[[str], None], what: str) -> None:
        self.stores = stores
        self.apply = apply
        self.reset = reset
        self.what = what  # who follows, for the log
        self._watchers: dict[str, CacheWatcher] = {}

    async def start(self) -> None:
        """Take the current objects of every store, and open the watches that follow them."""
        for kind, store in self.stores.items():
            await store.cacher.wait_ready()
            self._watchers[kind] = w = await store.watch("", ListOptions())
            self._drain(kind, w)

    async def run(self) -> None:
        """Follow the watches for ever."""
        await asyncio.gather(*(self._follow(kind) for kind in self.stores))

    def sync(self) -> None:
        """Apply the events already queued."""
        for kind, w in self._watchers.items():
            if not w.queue.empty():
                self._drain(kind, w)

    def _drain(self, kind: str, w: CacheWatcher) -> None:
        while (ev := w.next_nowait()) is not None:
            self.apply(kind, ev.type, ev.object)

    async def _follow(self, kind: str) -> None:
        store = self.stores[kind]
        while True:
            w = self._watchers[kind]
            try:
                async for ev in w:
                    self.apply(kind, ev.type, ev.object)
            except asyncio.CancelledError:
                w.stop()
                raise
            except Exception:
                log.exception("%s: the watch of %s failed", self.what, kind)
            await asyncio.sleep(0.05)  # a cache that ends every watch at once is not asked in a tight loop
            while True:
                try:
                    nw = await store.watch("", ListOptions())
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    log.warning("%s: re-watching %s: %s", self.what, kind, err)
                    await asyncio.sleep(1)
            self.reset(kind)
            self._watchers[kind] = nw
            self._drain(kind, nw)
