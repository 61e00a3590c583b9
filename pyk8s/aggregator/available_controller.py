"""The `Available` condition of every APIService (upstream: kube-aggregator
pkg/controllers/status/local/local_available_controller.go and status/remote/remote_available_controller.go).

A local APIService is always available. A remote one is checked in steps, each with its reason when it
fails: its Service exists (ServiceNotFound); for a ClusterIP Service, it has the APIService's port
(ServicePortError) and Endpoints (EndpointsNotFound) with an address behind that port (MissingEndpoints); and
`GET /apis/<group>/<version>` on the resolved address answers 2xx within 5 s (FailedDiscoveryCheck; five tries
at once, one success is enough). Then it is Available (Passed). An APIService is checked when it, its
Service or its Endpoints change, every 30 s besides, and again soon after a failed discovery check (backing
off from 5 ms to 30 s).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp

from ..api import errors
from ..api.meta import Object
from ..apiextensions.customresource_handler import system_context
from ..apiserver.informers import cached, cached_list, watch_forever
from ..apiserver.registry.rest import RESTStore
from ..apiserver.service_resolver import ServiceResolver
from ..client.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue, process_items
from . import apiservice as api
from .transport import DialError, ProxyTransport, check_loopback, describe

log = logging.getLogger("pyk8s.aggregator")

CHECK_TIMEOUT = 5.0  # the discovery client's timeout
CHECK_DEADLINE = 6.0  # the insurance upstream adds around it for slow dials
CHECK_ATTEMPTS = 5
WORKERS = 5
# The identity of the discovery check: the aggregator, as a cluster admin so that it is always allowed.
CHECK_USER = "system:kube-aggregator"
CHECK_GROUP = "system:masters"


class DiscoveryCheckFailed(Exception):
    """A failed discovery check: the APIService is checked again after a back-off."""


class AvailableConditionController:
    def __init__(
        self,
        apiservices: RESTStore,
        services: RESTStore,
        endpoints: RESTStore,
        resolver: ServiceResolver,
        transport: ProxyTransport,
        resync: float,
    ) -> None:
        self.apiservices = apiservices
        self.services = services
        self.endpoints = endpoints
        self.resolver = resolver
        self.transport = transport
        self.resync = resync
        limiter = ItemExponentialFailureRateLimiter(0.005, 30.0)
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(limiter, "RemoteAvailabilityController")
        self._by_service: dict[tuple[str, str], set[str]] = {}  # (namespace, name) -> APIService names

    # -- events ------------------------------------------------------------------------------------------

    def _on_apiservice(self, event_type: str, obj: Object) -> None:
        if api.service_of(obj) is not None or event_type == "DELETED":
            self._rebuild_index()
        self.queue.add(api.name_of(obj))

    def _on_service_or_endpoints(self, event_type: str, obj: Object) -> None:
        md = obj.get("metadata") or {}
        for name in self._by_service.get((md.get("namespace", ""), md.get("name", "")), ()):
            self.queue.add(name)

    def _rebuild_index(self) -> None:
        index: dict[tuple[str, str], set[str]] = {}
        for obj in cached_list(self.apiservices):
            service = api.service_of(obj)
            if service is not None:
                index.setdefault((service.get("namespace", ""), service.get("name", "")), set()).add(api.name_of(obj))
        self._by_service = index

    async def run(self) -> None:
        self._rebuild_index()
        what = "apiservice availability"
        tasks = [
            asyncio.create_task(watch_forever(self.apiservices, self._on_apiservice, what)),
            asyncio.create_task(watch_forever(self.services, self._on_service_or_endpoints, what)),
            asyncio.create_task(watch_forever(self.endpoints, self._on_service_or_endpoints, what)),
            asyncio.create_task(self._resync()),
        ]
        workers = [
            asyncio.create_task(process_items(self.queue, self.sync, what, retry=True,
                                              expected=(DiscoveryCheckFailed, errors.StatusError)))
            for _ in range(WORKERS)
        ]  # fmt: skip
        try:
            await asyncio.gather(*workers)
        finally:
            for t in tasks + workers:
                t.cancel()
            self.queue.shut_down()

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.resync)
            for obj in cached_list(self.apiservices):
                self.queue.add(api.name_of(obj))

    # -- one APIService ----------------------------------------------------------------------------------

    async def sync(self, name: str) -> None:
        original = cached(self.apiservices, "", name)
        if original is None:
            return
        service = api.service_of(original)
        if service is None:
            await self._write(original, api.local_available_condition())
            return
        cond, failure = await self.check(original, service)
        await self._write(original, cond)
        if failure:
            raise DiscoveryCheckFailed(failure)  # checked again after a back-off

    async def check(self, obj: Object, service: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The Available condition a remote APIService should have, and the discovery failure if that was it."""
        ns, svc_name = service.get("namespace", ""), service.get("name", "")
        port = api.service_port(service)
        where = f'service/{svc_name} in "{ns}"'
        svc = cached(self.services, ns, svc_name)
        if svc is None:
            return api.new_condition("False", "ServiceNotFound", f"{where} is not present"), ""
        spec = svc.get("spec") or {}
        if (spec.get("type") or "ClusterIP") == "ClusterIP":
            port_name = next((str(p.get("name", "")) for p in spec.get("ports") or () if p.get("port") == port), None)
            if port_name is None:
                return api.new_condition("False", "ServicePortError", f"{where} is not listening on port {port}"), ""
            eps = cached(self.endpoints, ns, svc_name)
            if eps is None:
                return api.new_condition("False", "EndpointsNotFound",
                                         f"cannot find endpoints for {where}"), ""  # fmt: skip
            if not any(
                subset.get("addresses") and any(p.get("name", "") == port_name for p in subset.get("ports") or ())
                for subset in eps.get("subsets") or ()
            ):
                message = f"endpoints for {where} have no addresses with port name {errors.go_quote(port_name)}"
                return api.new_condition("False", "MissingEndpoints", message), ""
        failure = await self.discovery_check(obj, service)
        if failure:
            return api.new_condition("False", "FailedDiscoveryCheck", failure), failure
        return api.new_condition("True", "Passed", "all checks passed"), ""

    async def discovery_check(self, obj: Object, service: dict[str, Any]) -> str:
        """The empty string when one of the tries got a 2xx, else the last error."""
        group, version = api.spec_of(obj).get("group", ""), api.spec_of(obj).get("version", "")
        path = f"/api/{version}" if api.name_of(obj) == api.LEGACY_NAME else f"/apis/{group}/{version}"
        results = await asyncio.gather(*(self._try(service, path) for _ in range(CHECK_ATTEMPTS)))
        return "" if any(r == "" for r in results) else results[-1]

    async def _try(self, service: dict[str, Any], path: str) -> str:
        try:
            base = self.resolver.resolve(service.get("namespace", ""), service.get("name", ""),
                                         api.service_port(service))  # fmt: skip
        except Exception as err:  # the resolver's error is the message, as upstream's
            return str(err)
        url = base + path
        try:
            return await asyncio.wait_for(self._get(url), CHECK_DEADLINE)
        except TimeoutError:
            return f"timed out waiting for {url}"

    async def _get(self, url: str) -> str:
        # Upstream's check does not verify the backend: it only asks whether something answers there.
        headers = {"X-Remote-User": CHECK_USER, "X-Remote-Group": CHECK_GROUP}
        try:
            check_loopback(url)
            async with self.transport.session.get(
                url, headers=headers, ssl=self.transport.tls(b"", insecure=True), allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=CHECK_TIMEOUT),
            ) as resp:  # fmt: skip
                if not 200 <= resp.status < 300:
                    return f"bad status from {url}: {resp.status}"
                return ""
        except TimeoutError:
            detail = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
            return f'failing or missing response from {url}: Get "{url}": {detail}'
        except (aiohttp.ClientError, DialError, OSError) as err:
            return f'failing or missing response from {url}: Get "{url}": {describe(err, url)}'

    async def _write(self, original: Object, cond: dict[str, Any]) -> None:
        """Set the condition and write the status, unless nothing changed (upstream updateAPIServiceStatus)."""
        updated: Object = {**original, "status": {"conditions": [dict(c) for c in api.conditions_of(original)]}}
        api.set_condition(updated, cond)
        if updated["status"] == (original.get("status") or {}):
            return
        before = api.condition(original)
        if before is None or before.get("status") != cond["status"]:
            log.info("changing APIService availability: %s %s -> %s (%s: %s)", api.name_of(original),
                     before.get("status") if before else "Unknown", cond["status"], cond.get("reason"),
                     cond.get("message"))  # fmt: skip
        name = api.name_of(original)

        async def updater(current: Object | None) -> Object:
            if current is None:
                raise self.apiservices.not_found(name)
            api.set_condition(current, cond)
            return current

        try:
            await self.apiservices.update("", name, updater, system_context(), subresource="status")
        except errors.StatusError as err:
            if err.code != 404:
                raise
