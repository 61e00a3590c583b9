"""Keeps the local APIServices in place (upstream: kube-aggregator pkg/controllers/autoregister).

Two kinds of APIService are registered here. Those of the built-in group versions are synced once, at start
(label `onstart`): created when missing, their spec put back when it was changed, deleted when this server no
longer serves their group version; after that, users may change or delete them. Those of CRDs (label `true`)
are kept in step for ever: created, reset and deleted as the CRDs come and go. APIServices without the label
are never touched.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..api import errors
from ..api.meta import Object, json_copy
from ..apiextensions.customresource_handler import system_context
from ..apiserver.informers import cached, cached_list, watch_forever
from ..apiserver.registry.rest import DeleteOptions, RESTStore
from ..client.workqueue import RateLimitingQueue, process_items
from ..storage.interface import Preconditions
from . import apiservice as api

log = logging.getLogger("pyk8s.aggregator")


def _managed_as(obj: Object | None) -> str:
    if obj is None:
        return ""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return str(labels.get(api.AUTOMANAGED_LABEL, ""))


def _spec_key(spec: Any) -> dict[str, Any]:
    """A spec for comparison as Go compares the structs: unset and zero fields are the same."""
    if not isinstance(spec, dict):
        return {}
    return {k: v for k, v in spec.items() if v not in (None, False, "", 0, [], {})}


class AutoRegisterController:
    def __init__(self, apiservices: RESTStore) -> None:
        self.apiservices = apiservices
        self.to_sync: dict[str, Object] = {}  # by name: the APIServices this controller wants
        self.synced: set[str] = set()  # names synced successfully at least once
        self.at_start: set[str] = set()  # names that existed when the controller started
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="autoregister")

    # -- what is wanted ----------------------------------------------------------------------------------

    def add_on_start(self, obj: Object) -> None:
        self._want(obj, api.MANAGE_ON_START)

    def add_continuously(self, obj: Object) -> None:
        self._want(obj, api.MANAGE_CONTINUOUSLY)

    def remove(self, name: str) -> None:
        self.to_sync.pop(name, None)
        self.queue.add(name)

    def set_continuous(self, objs: list[Object]) -> None:
        """Make `objs` the continuously managed APIServices: new ones added, missing ones removed."""
        wanted = {api.name_of(o): o for o in objs}
        for name, current in list(self.to_sync.items()):
            if _managed_as(current) == api.MANAGE_CONTINUOUSLY and name not in wanted:
                self.remove(name)
        for name, obj in wanted.items():
            current = self.to_sync.get(name)
            if current is None or _spec_key(current.get("spec")) != _spec_key(obj.get("spec")):
                self.add_continuously(obj)

    def _want(self, obj: Object, managed: str) -> None:
        desired = {**obj, "metadata": {**obj["metadata"]}}
        desired["metadata"]["labels"] = {**(obj["metadata"].get("labels") or {}), api.AUTOMANAGED_LABEL: managed}
        self.to_sync[api.name_of(desired)] = desired
        self.queue.add(api.name_of(desired))

    # -- running -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Sync every APIService once, before the server answers its first request (upstream does it in a
        post-start hook, and readyz waits for it)."""
        self.at_start = {api.name_of(o) for o in cached_list(self.apiservices)}
        for name in sorted(self.at_start | set(self.to_sync)):
            try:
                await self.check(name)
            except errors.StatusError as err:
                log.warning("autoregister: %s: %s", name, err)
                self.queue.add_rate_limited(name)

    async def run(self) -> None:
        def handle(event_type: str, obj: Object) -> None:
            self.queue.add(api.name_of(obj))

        watch = asyncio.create_task(watch_forever(self.apiservices, handle, "autoregister"))
        try:
            await process_items(self.queue, self.check, "autoregister", retry=True, expected=(errors.StatusError,))
        finally:
            watch.cancel()
            self.queue.shut_down()

    async def check(self, name: str) -> None:
        """Bring one APIService to what is wanted of it (upstream checkAPIService, case by case)."""
        desired = self.to_sync.get(name)
        current = cached(self.apiservices, "", name)
        first = name not in self.synced
        await self._check(name, desired, current, first)
        self.synced.add(name)

    async def _check(self, name: str, desired: Object | None, current: Object | None, first: bool) -> None:
        if current is None and desired is None:
            return
        if _managed_as(desired) == api.MANAGE_ON_START and not first:
            return  # synced once: users own it now
        if current is None:
            assert desired is not None
            try:
                await self.apiservices.create("", json_copy(desired), system_context())
            except errors.StatusError as err:
                if err.code != 409:
                    raise
            return
        managed = _managed_as(current)
        if managed not in (api.MANAGE_ON_START, api.MANAGE_CONTINUOUSLY):
            return  # not ours
        if managed == api.MANAGE_ON_START and (name not in self.at_start or not first):
            return
        if desired is None:
            uid = (current.get("metadata") or {}).get("uid")
            opts = DeleteOptions(preconditions=Preconditions(uid=uid))
            try:
                await self.apiservices.delete("", name, opts, system_context())
            except errors.StatusError as err:
                if err.code not in (404, 409):
                    raise
            return
        if _spec_key(current.get("spec")) == _spec_key(desired.get("spec")):
            return

        async def updater(obj: Object | None) -> Object:
            if obj is None:
                raise self.apiservices.not_found(name)
            obj["spec"] = json_copy(desired["spec"])
            return obj

        try:
            await self.apiservices.update("", name, updater, system_context())
        except errors.StatusError as err:
            if err.code not in (404, 409):
                raise
