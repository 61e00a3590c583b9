"""`APIAggregator`: the aggregator's part of the API server in one object (upstream: kube-aggregator
pkg/apiserver/apiserver.go `APIAggregator`, wired as kubernetes pkg/controlplane/apiserver/aggregator.go does).

The API server builds it once its stores are up, calls `start()` before serving (the local APIServices and the
authentication ConfigMap are in place when the first request comes) and runs `run()` as a task. Per request
it asks `proxies(info)` (is the group version served elsewhere?) and `discovery(request, path)` (the merged
`/apis` documents).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web

from ..api import errors
from ..api.meta import Object
from ..api.resources import ResourceTable
from ..apiserver import discovery as local_discovery
from ..apiserver.certs import PKI
from ..apiserver.informers import cached_list, watch_forever
from ..apiserver.registry.rest import RESTStore
from ..apiserver.request_info import RequestInfo
from ..apiserver.service_resolver import ServiceResolver
from . import apiservice as api
from .autoregister import AutoRegisterController
from .available_controller import AvailableConditionController
from .cluster_authentication_trust import ClusterAuthenticationInfo, ClusterAuthenticationTrustController
from .discovery import DiscoveryManager, aggregated, api_group, api_group_list
from .handler_proxy import ProxyHandler
from .local_apiservices import builtin_apiservices, crd_apiservices
from .options import AggregatorOptions
from .transport import ProxyTransport

log = logging.getLogger("pyk8s.aggregator")

Rest = Callable[[str, str], RESTStore]  # (group/version, plural) -> the store


class APIAggregator:
    def __init__(
        self,
        rest: Rest,
        pki: PKI,
        options: AggregatorOptions,
        served: Callable[[], ResourceTable],
        resolver: ServiceResolver,
    ) -> None:
        """`served` is what this server serves now (built-in and CRD resources); `resolver` is where a Service
        is reached (the API server's one resolver, which conversion webhooks use too)."""
        self.options = options
        self.served = served
        self.apiservices = rest(api.API_VERSION, "apiservices")
        services, endpoints = rest("v1", "services"), rest("v1", "endpoints")
        self.resolver = resolver
        self.transport = ProxyTransport(options.client_certificate(pki))
        self.proxy_handler = ProxyHandler(self.transport, self.resolver)
        self.autoregister = AutoRegisterController(self.apiservices)
        self.availability = AvailableConditionController(
            self.apiservices, services, endpoints, self.resolver, self.transport, options.availability_resync
        )
        self.discovery_manager = DiscoveryManager(self.apiservices, self.resolver, self.transport, self._changed)
        self.trust = ClusterAuthenticationTrustController(rest("v1", "configmaps"), self._authentication_info(pki))
        # The remote APIServices by (group, version): what `proxies` looks at on every request.
        self.remote: dict[tuple[str, str], Object] = {}
        self._generation = 0  # moves whenever an APIService or a remote discovery document changes
        self._cache: dict[str, tuple[int, ResourceTable, bytes]] = {}

    def _authentication_info(self, pki: PKI) -> ClusterAuthenticationInfo:
        opts = self.options
        return ClusterAuthenticationInfo(
            client_ca=pki.ca_cert.read_bytes(),
            username_headers=list(opts.requestheader_username_headers),
            group_headers=list(opts.requestheader_group_headers),
            extra_header_prefixes=list(opts.requestheader_extra_headers_prefix),
            allowed_names=list(opts.requestheader_allowed_names),
            requestheader_ca=opts.requestheader_ca(pki).read_bytes(),
        )

    # -- lifecycle -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        self.options.warn_nonstandard()
        table = self.served()
        for obj in builtin_apiservices(table):
            self.autoregister.add_on_start(obj)
        self.autoregister.set_continuous(crd_apiservices(table))
        await self.autoregister.start()
        try:
            await self.trust.sync()
        except (errors.StatusError, ValueError) as err:  # run() tries again; the server starts regardless
            log.warning("extension-apiserver-authentication: %s", err)
        self._index()

    async def run(self) -> None:
        components = (self.autoregister, self.availability, self.discovery_manager, self.trust)
        tasks = [asyncio.create_task(c.run()) for c in components]
        tasks.append(asyncio.create_task(watch_forever(self.apiservices, self._on_apiservice, "aggregator")))
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.transport.close()

    def custom_resources_changed(self) -> None:
        """The CRDs serve other group versions now: their APIServices follow."""
        self.autoregister.set_continuous(crd_apiservices(self.served()))

    # -- the APIServices -----------------------------------------------------------------------------------

    def _on_apiservice(self, event_type: str, obj: Object) -> None:
        self._index()

    def _index(self) -> None:
        remote: dict[tuple[str, str], Object] = {}
        for obj in cached_list(self.apiservices):
            if api.service_of(obj) is not None:
                spec = api.spec_of(obj)
                remote[(str(spec.get("group", "")), str(spec.get("version", "")))] = obj
        self.remote = remote
        self._changed()

    def _changed(self) -> None:
        self._generation += 1

    # -- requests ------------------------------------------------------------------------------------------

    def proxies(self, info: RequestInfo) -> bool:
        """Whether the request is for a group version an extension server serves (core is always local)."""
        return bool(self.remote) and info.api_prefix == "apis" and (info.api_group, info.api_version) in self.remote

    async def proxy(self, request: web.Request) -> web.StreamResponse:
        info: RequestInfo = request["info"]
        return await self.proxy_handler.serve(request, self.remote[(info.api_group, info.api_version)])

    def discovery(self, request: web.BaseRequest, path: str) -> web.Response | None:
        """`/apis` (legacy or aggregated) and `/apis/<group>` of a group with a remote version, merged; None for
        every other path (this server's own documents serve it)."""
        if path == "/apis":
            accept = request.headers.get("Accept", "").replace(" ", "")
            for version, ctype in (
                ("v2", local_discovery.AGGREGATED_CONTENT_TYPE),
                ("v2beta1", local_discovery.AGGREGATED_V2BETA1_CONTENT_TYPE),
            ):
                if f"v={version};as=APIGroupDiscoveryList" in accept:
                    body = self._cached(
                        version, lambda t, v=version: aggregated(v, t, self._apiservices(), self.discovery_manager.docs)
                    )
                    return web.Response(body=body, headers={"Content-Type": ctype})
            body = self._cached("legacy", lambda t: api_group_list(self._apiservices(), t))
            return web.Response(body=body, content_type="application/json")
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "apis" and any(g == parts[1] for g, _ in self.remote):
            group_doc = api_group(parts[1], self._apiservices(), self.served())
            if group_doc is not None:
                return web.Response(body=group_doc, content_type="application/json")
        return None

    def _apiservices(self) -> list[Object]:
        return cached_list(self.apiservices)

    def _cached(self, key: str, build: Callable[[ResourceTable], bytes]) -> bytes:
        table = self.served()
        hit = self._cache.get(key)
        if hit is not None and hit[0] == self._generation and hit[1] is table:
            return hit[2]
        body = build(table)
        self._cache[key] = (self._generation, table, body)
        return body
