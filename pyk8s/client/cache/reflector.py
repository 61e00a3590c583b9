"""The Reflector: keeps a store equal to the server's state of one resource by listing, then watching
(upstream: tools/cache/reflector.go, ListAndWatch).

It lists (in pages, first at resourceVersion "0" so the watch cache answers), hands the list to the store's
`replace`, then watches from the list's resourceVersion with bookmarks, remembering the resourceVersion of
every event. A watch that ends is reopened from that resourceVersion; one that answers 410 (the version was
compacted away) leads to a relist; any other failure to a backoff (800 ms doubling to 30 s, with jitter,
reset after two quiet minutes) and then a relist. So the store never silently misses a change: either the
watch resumes exactly where it stopped, or a relist replaces the store and tombstones what vanished.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import random
import time
from typing import Any, Protocol

from ...api import errors
from ...api.resources import Resource
from ..flowcontrol import Backoff
from ..rest import ResourceLike, RESTClient, as_resource

log = logging.getLogger(__name__)

# Watches are closed by the client after 5-10 minutes, so that load spreads over API servers (upstream).
MIN_WATCH_TIMEOUT = 300
DEFAULT_PAGE_SIZE = 500


class ReflectorStore(Protocol):
    def add(self, obj: Any) -> None: ...
    def update(self, obj: Any) -> None: ...
    def delete(self, obj: Any) -> None: ...
    def replace(self, objs: builtins.list[Any], resource_version: str) -> None: ...
    def resync(self) -> None: ...


class Reflector:
    def __init__(
        self,
        client: RESTClient,
        resource: ResourceLike,
        store: ReflectorStore,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float = 0.0,
        should_resync: Any = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        name: str = "",
        backoff: Backoff | None = None,
    ) -> None:
        self.client = client
        self.resource: Resource = as_resource(resource)
        self.store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_period = resync_period
        self.should_resync = should_resync
        self.page_size = page_size
        self.name = name or f"{self.resource.qualified_name}"
        self.backoff = backoff or Backoff()
        self.last_sync_resource_version = ""
        # Set when the server said our resourceVersion is gone: the next list must be a fresh, consistent one.
        self._last_sync_unavailable = False
        self.lists = 0  # how many times it listed (a relist after 410 or an error shows here)
        self.watching = False

    async def run(self) -> None:
        """List and watch until cancelled."""
        resync = asyncio.create_task(self._resync_loop()) if self.resync_period > 0 else None
        try:
            while True:
                try:
                    await self.list_and_watch()
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # every failure means: back off, then relist
                    delay = self.backoff.next()
                    log.warning("%s: list and watch failed (%s); retrying in %.1fs", self.name, err, delay)
                    await asyncio.sleep(delay)
        finally:
            if resync is not None:
                resync.cancel()
                await asyncio.gather(resync, return_exceptions=True)

    def _relist_resource_version(self) -> str:
        if self._last_sync_unavailable:
            return ""  # a consistent read from storage
        return self.last_sync_resource_version or "0"

    async def list(self) -> None:
        rv = self._relist_resource_version()
        try:
            items, list_rv = await self._list_pages(rv)
        except errors.Gone:
            # The resourceVersion we asked for (or a page's continue token) is compacted away.
            self._last_sync_unavailable = True
            items, list_rv = await self._list_pages("")
        self.lists += 1
        self._last_sync_unavailable = False
        self.store.replace(items, list_rv)
        self.last_sync_resource_version = list_rv

    async def _list_pages(self, rv: str) -> tuple[builtins.list[Any], str]:
        pages: builtins.list[dict[str, Any]] = []
        try:
            async for page in self.client.list_pages(
                self.resource, self.namespace, label_selector=self.label_selector, field_selector=self.field_selector,
                limit=self.page_size, resource_version=rv or None,
            ):  # fmt: skip
                pages.append(page)
        except errors.Gone:
            if not pages:
                raise
            # The snapshot behind our continue token was compacted mid-list: one unpaged list instead, as
            # upstream's pager does (FullListIfExpired).
            pages = [
                await self.client.list(
                    self.resource, self.namespace, label_selector=self.label_selector,
                    field_selector=self.field_selector, resource_version=rv or None,
                )
            ]  # fmt: skip
        list_rv = str((pages[0].get("metadata") or {}).get("resourceVersion") or "")
        api_version, kind = self.resource.api_version, self.resource.kind
        items: builtins.list[Any] = []
        for page in pages:
            for item in page.get("items") or ():
                # Items in a List carry no kind; handlers and listers want whole objects.
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                items.append(item)
        return items, list_rv

    async def list_and_watch(self) -> None:
        await self.list()
        while True:
            timeout = int(MIN_WATCH_TIMEOUT * (1 + random.random()))
            watch = self.client.watch(
                self.resource, self.namespace, resource_version=self.last_sync_resource_version,
                label_selector=self.label_selector, field_selector=self.field_selector,
                allow_watch_bookmarks=True, timeout_seconds=timeout,
            )  # fmt: skip
            started = time.monotonic()
            try:
                events = await self._watch_handler(watch)
                if events == 0 and time.monotonic() - started < 1.0:
                    # A watch the server ends at once with nothing in it: don't spin, back off.
                    await asyncio.sleep(self.backoff.next())
            except errors.Gone as err:
                # Our resourceVersion was compacted: relist (from the cache if it still can answer it).
                log.info("%s: watch closed with: %s", self.name, err.message)
                return
            except ConnectionError as err:
                # The server went away: try the watch again from where we were, after a backoff; it is
                # the cheapest path back and loses nothing, since the resourceVersion pins our place.
                delay = self.backoff.next()
                log.info("%s: watch failed (%s); rewatching in %.1fs", self.name, err, delay)
                await asyncio.sleep(delay)
            except errors.StatusError as err:
                # Any other error the watch answers with (a 429, a 500): upstream watches again after a
                # backoff rather than paying for a relist; the resourceVersion still pins our place.
                delay = self.backoff.next()
                log.info("%s: watch answered %s; rewatching in %.1fs", self.name, err.message, delay)
                await asyncio.sleep(delay)
            finally:
                self.watching = False
                watch.close()

    async def _watch_handler(self, watch: Any) -> int:
        """Apply a watch's events to the store; returns how many arrived."""
        count = 0
        store = self.store
        api_version, kind = self.resource.api_version, self.resource.kind
        async for event in watch:
            count += 1
            self.watching = True
            obj = event.object
            meta = obj.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or "")
            typ = event.type
            if typ == "BOOKMARK":
                pass
            else:
                obj.setdefault("apiVersion", api_version)
                obj.setdefault("kind", kind)
                if typ == "ADDED":
                    store.add(obj)
                elif typ == "MODIFIED":
                    store.update(obj)
                elif typ == "DELETED":
                    store.delete(obj)
                else:
                    log.warning("%s: unknown watch event type %r", self.name, typ)
                    continue
            if rv:
                self.last_sync_resource_version = rv
        return count

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.resync_period)
            if self.should_resync is None or self.should_resync():
                self.store.resync()
