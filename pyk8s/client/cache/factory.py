"""SharedInformerFactory: one informer per resource (and selector set) for every controller in a process
(upstream: informers.SharedInformerFactory, dynamicinformer.DynamicSharedInformerFactory).

Controllers ask the factory for `for_resource("pods")` and get the same informer, so a process lists and
watches each resource once however many controllers read it. `start()` runs every informer asked for so
far (call it again after asking for more); `wait_for_cache_sync()` waits until each has delivered its first
list.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ...api.resources import Resource
from ..rest import ResourceLike, RESTClient, as_resource
from .listers import GenericLister
from .shared_informer import SharedIndexInformer


class GenericInformer:
    """An informer and a lister over its indexer (upstream: GenericInformer)."""

    def __init__(self, informer: SharedIndexInformer) -> None:
        self.informer = informer
        self.lister = GenericLister(informer.indexer)


class SharedInformerFactory:
    def __init__(
        self,
        client: RESTClient,
        default_resync: float = 0.0,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Callable[[Any], Any] | None = None,
    ) -> None:
        self.client = client
        self.default_resync = default_resync
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.transform = transform
        self._informers: dict[tuple[Any, ...], GenericInformer] = {}
        self._resync: dict[Resource, float] = {}
        self._tasks: dict[tuple[Any, ...], asyncio.Task[None]] = {}

    def set_resync(self, resource: ResourceLike, period: float) -> None:
        """A resync period for one resource's informer, set before asking for it."""
        self._resync[as_resource(resource)] = period

    def for_resource(
        self,
        resource: ResourceLike,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> GenericInformer:
        r = as_resource(resource)
        labels = label_selector if label_selector is not None else self.label_selector
        fields = field_selector if field_selector is not None else self.field_selector
        key = (r.group, r.version, r.plural, self.namespace, labels, fields)
        found = self._informers.get(key)
        if found is None:
            informer = SharedIndexInformer(
                self.client, r, namespace=self.namespace, label_selector=labels, field_selector=fields,
                resync_period=self._resync.get(r, self.default_resync), transform=self.transform,
            )  # fmt: skip
            found = self._informers[key] = GenericInformer(informer)
        return found

    def informer_for(self, resource: ResourceLike, **selectors: Any) -> SharedIndexInformer:
        return self.for_resource(resource, **selectors).informer

    def lister_for(self, resource: ResourceLike, **selectors: Any) -> GenericLister:
        return self.for_resource(resource, **selectors).lister

    def start(self) -> None:
        """Start every informer asked for that is not running yet."""
        for key, generic in self._informers.items():
            if key not in self._tasks:
                self._tasks[key] = generic.informer.start()

    def stop_resource(self, resource: ResourceLike) -> None:
        """Stop and forget the informers of one resource (one a CustomResourceDefinition no longer defines)."""
        r = as_resource(resource)
        for key in [k for k in self._informers if k[:3] == (r.group, r.version, r.plural)]:
            task = self._tasks.pop(key, None)
            if task is not None:
                task.cancel()
            del self._informers[key]

    async def wait_for_cache_sync(self, timeout: float | None = None) -> dict[str, bool]:
        """Wait for each started informer's first list; answers {resource: synced}."""
        started = [(key, self._informers[key].informer) for key in self._tasks]
        results = await asyncio.gather(*(inf.wait_for_sync(timeout) for _, inf in started))
        return {inf.resource.qualified_name: ok for (_, inf), ok in zip(started, results, strict=True)}

    async def shutdown(self) -> None:
        """Stop every informer and wait for them to end."""
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
