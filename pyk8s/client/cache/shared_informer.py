"""SharedIndexInformer: one list+watch of a resource, one Indexer, many event handlers (upstream:
tools/cache/shared_informer.go, controller.go).

The informer pops the DeltaFIFO's deltas into its Indexer and turns each into a notification: add,
update(old, new) or delete. Each handler has its own listener (an unbounded buffer and a task), so a slow
handler never delays the others nor the informer, and each handler sees every object's notifications in
order. A handler added after the informer started first receives an add for every object already held.
Periodic resyncs re-deliver the held objects as updates (old == new) to the handlers that asked for them.
Handlers may be plain functions or coroutines; they should be quick (enqueue a key into a workqueue).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...api.resources import Resource
from ..rest import ResourceLike, RESTClient, as_resource
from .delta_fifo import DeletedFinalStateUnknown, Delta, DeltaFIFO, DeltaType, FIFOClosedError
from .indexer import Indexer, IndexFunc
from .reflector import Reflector

log = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0
Handler = Callable[..., Any]


@dataclass
class ResourceEventHandler:
    """Callbacks for one consumer (upstream: ResourceEventHandlerFuncs). `on_add(obj, is_in_initial_list)`,
    `on_update(old, new)`, `on_delete(obj)`: obj may be a `DeletedFinalStateUnknown` tombstone. Any may be
    None; each may be a coroutine function."""

    on_add: Handler | None = None
    on_update: Handler | None = None
    on_delete: Handler | None = None


def drop_managed_fields(obj: Any) -> Any:
    """A transform that keeps informer memory down: managedFields are never needed by controllers."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if meta and "managedFields" in meta:
        del meta["managedFields"]
    return obj


class _Listener:
    """One handler's buffer and delivery task (upstream: processorListener)."""

    def __init__(
        self, handler: ResourceEventHandler, resync_period: float, informer_synced: Callable[[], bool]
    ) -> None:
        self.handler = handler
        self.resync_period = resync_period
        self.next_resync = time.monotonic() + resync_period if resync_period else 0.0
        self._buffer: deque[tuple[Any, ...]] = deque()
        self._wakeup = asyncio.Event()
        self._initial_pending = 0
        self._informer_synced = informer_synced
        self.task: asyncio.Task[None] | None = None

    def add(self, notification: tuple[Any, ...]) -> None:
        if notification[0] == "add" and notification[2]:
            self._initial_pending += 1
        self._buffer.append(notification)
        self._wakeup.set()

    def has_synced(self) -> bool:
        return self._informer_synced() and self._initial_pending == 0

    async def run(self) -> None:
        h = self.handler
        while True:
            while not self._buffer:
                self._wakeup.clear()
                await self._wakeup.wait()
            note = self._buffer.popleft()
            kind = note[0]
            try:
                if kind == "add":
                    result = h.on_add(note[1], note[2]) if h.on_add else None
                elif kind == "update":
                    result = h.on_update(note[1], note[2]) if h.on_update else None
                else:
                    result = h.on_delete(note[1]) if h.on_delete else None
                # Most handlers are plain functions returning None; inspect.isawaitable costs an ABC check.
                if result is not None and inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event handler failed on %s", kind)
            finally:
                if kind == "add" and note[2]:
                    self._initial_pending -= 1

    def should_resync(self, now: float) -> bool:
        return bool(self.resync_period) and now >= self.next_resync

    def determine_next_resync(self, now: float) -> None:
        self.next_resync = now + self.resync_period


class ResourceEventHandlerRegistration:
    """What `add_event_handler` returns: `has_synced()` turns true once this handler has been given every
    object of the informer's first list (or of the state when it was added)."""

    def __init__(self, listener: _Listener) -> None:
        self._listener = listener

    def has_synced(self) -> bool:
        return self._listener.has_synced()


class SharedIndexInformer:
    def __init__(
        self,
        client: RESTClient,
        resource: ResourceLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Callable[[Any], Any] | None = None,
        page_size: int | None = None,
    ) -> None:
        self.client = client
        self.resource: Resource = as_resource(resource)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.default_resync_period = resync_period
        self.resync_check_period = resync_period
        self.indexer = Indexer(indexers)
        self.transform = transform
        self.page_size = page_size
        self.fifo: DeltaFIFO | None = None
        self.reflector: Reflector | None = None
        self._listeners: list[_Listener] = []
        self._syncing: list[_Listener] = []
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._stopped = False

    # -- handlers -------------------------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: ResourceEventHandler | None = None,
        resync_period: float | None = None,
        *,
        on_add: Handler | None = None,
        on_update: Handler | None = None,
        on_delete: Handler | None = None,
    ) -> ResourceEventHandlerRegistration:
        """Register a handler (or the three callbacks); returns its registration."""
        if self._stopped:
            raise RuntimeError(f"informer for {self.resource.qualified_name} has stopped; handler not added")
        handler = handler or ResourceEventHandler(on_add, on_update, on_delete)
        period = self.default_resync_period if resync_period is None else resync_period
        if period:
            period = max(period, MINIMUM_RESYNC_PERIOD)
            if self._started:
                # The reflector's check period is fixed once it runs; a faster handler gets the check period.
                period = max(period, self.resync_check_period) if self.resync_check_period else 0.0
            elif not self.resync_check_period or period < self.resync_check_period:
                self.resync_check_period = period
        listener = _Listener(handler, period, self.has_synced)
        if self._started:
            # The current state first, as adds: a late handler starts from what everyone else already knows.
            for obj in self.indexer.list():
                listener.add(("add", obj, True))
            listener.task = asyncio.get_running_loop().create_task(listener.run())
        self._listeners.append(listener)
        return ResourceEventHandlerRegistration(listener)

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration) -> None:
        listener = registration._listener
        if listener in self._listeners:
            self._listeners.remove(listener)
            if listener in self._syncing:
                self._syncing.remove(listener)
            if listener.task is not None:
                listener.task.cancel()

    def _distribute(self, notification: tuple[Any, ...], sync: bool) -> None:
        for listener in self._syncing if sync else self._listeners:
            listener.add(notification)

    def _should_resync(self) -> bool:
        now = time.monotonic()
        self._syncing = [lst for lst in self._listeners if lst.should_resync(now)]
        for lst in self._syncing:
            lst.determine_next_resync(now)
        return bool(self._syncing)

    # -- running --------------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        return self.fifo is not None and self.fifo.has_synced()

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version if self.reflector else ""

    def start(self) -> asyncio.Task[None]:
        """Run in the background (idempotent); returns the task."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self.run(), name=f"informer {self.resource.qualified_name}"
            )
        return self._task

    async def run(self) -> None:
        """List, watch and deliver until cancelled."""
        if self._started:
            raise RuntimeError("informer already started")
        self._started = True
        self.fifo = DeltaFIFO(known_objects=self.indexer, transformer=self.transform)
        kwargs: dict[str, Any] = {} if self.page_size is None else {"page_size": self.page_size}
        self.reflector = Reflector(
            self.client, self.resource, self.fifo, namespace=self.namespace, label_selector=self.label_selector,
            field_selector=self.field_selector, resync_period=self.resync_check_period,
            should_resync=self._should_resync, **kwargs,
        )  # fmt: skip
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            listener.task = loop.create_task(listener.run())
        reflector = loop.create_task(self.reflector.run(), name=f"reflector {self.resource.qualified_name}")
        try:
            while True:
                await self.fifo.pop(self._handle_deltas)
        except FIFOClosedError:
            pass
        finally:
            self._stopped = True
            reflector.cancel()
            for listener in self._listeners:
                if listener.task is not None:
                    listener.task.cancel()
            await asyncio.gather(reflector, *(lst.task for lst in self._listeners if lst.task), return_exceptions=True)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until the first list has been delivered into the indexer; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.has_synced():
            if self._task is not None and self._task.done():
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    def _handle_deltas(self, deltas: list[Delta], is_in_initial_list: bool) -> None:
        for d in deltas:
            try:
                self._handle_delta(d, is_in_initial_list)
            except Exception:
                # A failing index function must not end the informer: the cache would freeze silently.
                log.exception("informer for %s: processing a %s delta failed", self.resource.qualified_name, d.type)

    def _handle_delta(self, d: Delta, is_in_initial_list: bool) -> None:
        indexer = self.indexer
        obj = d.object
        if d.type is DeltaType.DELETED:
            if isinstance(obj, DeletedFinalStateUnknown):
                indexer.delete_key(obj.key)
            else:
                indexer.delete(obj)
            self._distribute(("delete", obj), False)
            return
        old = indexer.get(obj)
        if old is not None:
            indexer.update(obj)
            sync = d.type is DeltaType.SYNC or (
                d.type is DeltaType.REPLACED and _resource_version(old) == _resource_version(obj)
            )
            self._distribute(("update", old, obj), sync)
        else:
            indexer.add(obj)
            self._distribute(("add", obj, is_in_initial_list), False)


def _resource_version(obj: Any) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
