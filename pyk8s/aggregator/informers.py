"""The aggregator's controllers watch the stores of this process as upstream's watch through informers: every
event, the current objects first as ADDED, to a handler, with the watch started again whenever it ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..api.meta import Object
from ..apiserver.registry.rest import ListOptions, RESTStore

log = logging.getLogger("pyk8s.aggregator")

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
