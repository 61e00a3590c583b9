"""The `kube-system/kube-apiserver-legacy-service-account-token-tracking` ConfigMap (upstream:
pkg/controlplane/controller/legacytokentracking): its `since` date says from when this API server has been
labelling the Secrets of legacy tokens with their last use, which kube-controller-manager's legacy token
cleaner reads before it dares to invalidate unused ones. Created when missing (at most once per half hour,
so that API servers of mixed versions do not fight), its date repaired when unreadable."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable

from ...api import errors
from ...api.meta import Object
from ..informers import cached, watch_forever
from ..registry.rest import Context, RESTStore
from . import UserInfo

log = logging.getLogger("pyk8s.apiserver.authn")

CONFIGMAP_NAME = "kube-apiserver-legacy-service-account-token-tracking"
CONFIGMAP_DATA_KEY = "since"
NAMESPACE = "kube-system"
CREATION_INTERVAL = 30 * 60.0
_DATE = "%Y-%m-%d"


def _today() -> str:
    return dt.datetime.now(dt.UTC).strftime(_DATE)


def _parses(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        dt.datetime.strptime(value, _DATE)
    except ValueError:
        return False
    return True


class LegacyTokenTrackingController:
    def __init__(self, rest: Callable[[str, str], RESTStore], user: UserInfo) -> None:
        self.configmaps = rest("v1", "configmaps")
        self.ctx = Context(user)
        self._changed = asyncio.Event()
        self._last_creation = -CREATION_INTERVAL

    async def run(self) -> None:
        def seen(_type: str, obj: Object) -> None:
            if obj.get("metadata", {}).get("name") == CONFIGMAP_NAME:
                self._changed.set()

        watcher = asyncio.create_task(watch_forever(self.configmaps, seen, "legacy token tracking", NAMESPACE))
        try:
            while True:
                try:
                    delay = await self.sync()
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    log.warning("syncing ConfigMap %s/%s: %s", NAMESPACE, CONFIGMAP_NAME, err)
                    delay = 5.0
                self._changed.clear()
                try:
                    await asyncio.wait_for(self._changed.wait(), delay)
                except TimeoutError:
                    pass
        finally:
            watcher.cancel()

    async def sync(self) -> float | None:
        """One pass; returns when to look again without an event (None: only on the next event)."""
        current = cached(self.configmaps, NAMESPACE, CONFIGMAP_NAME)
        if current is None:
            wait = self._last_creation + CREATION_INTERVAL - time.monotonic()
            if wait > 0:
                return wait
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": CONFIGMAP_NAME, "namespace": NAMESPACE},
                    "data": {CONFIGMAP_DATA_KEY: _today()}}  # fmt: skip
            try:
                await self.configmaps.create(NAMESPACE, body, self.ctx)
            except errors.StatusError as err:
                if err.code != 409:
                    raise
            self._last_creation = time.monotonic()
            return None
        if not _parses((current.get("data") or {}).get(CONFIGMAP_DATA_KEY)):

            async def repair(existing: Object | None) -> Object:
                if existing is None:
                    raise self.configmaps.not_found(CONFIGMAP_NAME)
                existing.setdefault("data", {})[CONFIGMAP_DATA_KEY] = _today()
                return existing

            try:
                await self.configmaps.update(NAMESPACE, CONFIGMAP_NAME, repair, self.ctx)
            except errors.StatusError as err:
                if err.code not in (404, 409):
                    raise
        return None
