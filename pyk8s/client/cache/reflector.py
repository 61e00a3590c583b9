"""The Reflector: keeps a store equal to the server's state of one resource by listing, then watching
(upstream: tools/cache/reflector.go, ListAndWatch).

It asks first for a WatchList (a watch with `sendInitialEvents=true`: the current state as events, ended by a
bookmark annotated `k8s.io/initial-events-end`, which then goes on as a watch), hands that state to the
store's `replace` and keeps the same stream; a server that does not offer WatchList (it answers the request
with an error) gets the classic path from then on: a list (in pages, first at resourceVersion "0" so the
watch cache answers) and a watch from the list's resourceVersion, with bookmarks. Either way it remembers the
resourceVersion of every event. A watch that ends is reopened from that resourceVersion; one that answers 410 (the version was
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
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


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
        watch_list: bool = True,
    ) -> None:
        """`watch_list`: try a WatchList before listing (client-go's WatchListClient); it turns itself off for a
        server that refuses one."""
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
        self.watch_list = watch_list
        self.watch_lists = 0  # how many times it synced through a WatchList

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

    def _whole(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An object as handlers and listers want it: items of a List and objects of some watch events carry no
        apiVersion and kind of their own."""
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        return obj

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
        items = [self._whole(item) for page in pages for item in page.get("items") or ()]
        return items, list_rv

    async def _watch_list(self) -> Any:
        """Sync the store through a WatchList and return its stream, open, to go on watching; None when the
        server does not offer WatchList (then this reflector lists from now on) or the resourceVersion is gone."""
        timeout = int(MIN_WATCH_TIMEOUT * (1 + random.random()))
        rv = "" if self._last_sync_unavailable else self.last_sync_resource_version
        watch = self.client.watch(
            self.resource, self.namespace, resource_version=rv or None, label_selector=self.label_selector,
            field_selector=self.field_selector, allow_watch_bookmarks=True, timeout_seconds=timeout,
            send_initial_events=True, resource_version_match="NotOlderThan",
        )  # fmt: skip
        state: dict[tuple[str, str], Any] = {}  # the initial events, applied in order (upstream's temporary store)
        try:
            async for event in watch:
                obj = event.object
                meta = obj.get("metadata") or {}
                if event.type == "BOOKMARK":
                    if (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                        rv = str(meta.get("resourceVersion") or "")
                        self.store.replace(list(state.values()), rv)
                        self.last_sync_resource_version = rv
                        self._last_sync_unavailable = False
                        self.watch_lists += 1
                        return watch
                    continue
                self._whole(obj)
                key = (meta.get("namespace") or "", meta.get("name") or "")
                if event.type == "DELETED":
                    state.pop(key, None)
                else:
                    state[key] = obj
        except errors.Gone:
            self._last_sync_unavailable = True
            watch.close()
            return None
        except errors.StatusError as err:
            # 4xx: a server without WatchList (upstream before 1.27 answers resourceVersionMatch is forbidden).
            if 400 <= err.code < 500 and err.code != 429:
                log.info("%s: the server does not offer WatchList (%s); listing from now on", self.name, err.message)
                self.watch_list = False
            watch.close()
            if self.watch_list:
                raise
            return None
        except BaseException:
            watch.close()
            raise
        # The stream ended before its initial events did (a timeout, a server going away): try again.
        watch.close()
        raise ConnectionError("the WatchList ended before its initial events were all sent")

    async def list_and_watch(self) -> None:
        watch = await self._watch_list() if self.watch_list else None
        if watch is None:
            await self.list()
        while True:
            if watch is None:
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
                watch = None

    async def _watch_handler(self, watch: Any) -> int:
        """Apply a watch's events to the store; returns how many arrived."""
        count = 0
        store = self.store
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
                self._whole(obj)
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
