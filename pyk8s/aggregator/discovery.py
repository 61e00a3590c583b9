"""Discovery with the extension servers' groups in it (upstream: kube-aggregator pkg/apiserver/handler_apis.go
and handler_discovery.go; k8s.io/apiserver pkg/endpoints/discovery/aggregated for the ordering).

`/apis` and `/apis/<group>` list every APIService's group version, ordered as upstream sorts APIServices
(group priority, then name; within a group version priority, then Kubernetes' version order), with the
aggregator's own group first; group versions this server serves without an APIService (a CRD's, just created)
are listed with the priorities they would get. The aggregated document (`apidiscovery.k8s.io` v2 and v2beta1)
has this server's groups and, for every remote APIService, the resources its server lists in its own
discovery, downloaded when the APIService changes and every minute; a download that fails leaves the group
version listed as Stale, which clients report as unavailable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson

from ..api.meta import Object
from ..api.resources import ResourceTable
from ..apiserver import discovery as local_discovery
from ..apiserver.informers import cached_list, watch_forever
from ..apiserver.registry.rest import RESTStore
from ..apiserver.service_resolver import ResolveError, ServiceResolver
from ..client.workqueue import RateLimitingQueue, process_items
from . import apiservice as api
from .local_apiservices import priorities_of
from .transport import DialError, ProxyTransport, check_loopback

log = logging.getLogger("pyk8s.aggregator")

DOWNLOAD_TIMEOUT = 5.0
REFRESH_INTERVAL = 60.0  # upstream: every remote APIService's discovery is refreshed once a minute
DISCOVERY_USER = "system:kube-aggregator"
AGGREGATED_ACCEPT = f"{local_discovery.AGGREGATED_CONTENT_TYPE},{local_discovery.AGGREGATED_V2BETA1_CONTENT_TYPE}"


# -- legacy discovery: /apis and /apis/<group> from the APIServices -------------------------------------------


def _group_version(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def _group_doc(members: list[Object]) -> dict[str, Any]:
    """upstream convertToDiscoveryAPIGroup: members sorted, the first is the preferred version."""
    group = str(api.spec_of(members[0]).get("group", ""))
    versions = [_group_version(group, str(api.spec_of(m).get("version", ""))) for m in members]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def with_local_entries(apiservices: list[Object], table: ResourceTable) -> list[Object]:
    """The APIServices, plus a stand-in for each group version `table` serves that has none."""
    named = {(str(api.spec_of(s).get("group", "")), str(api.spec_of(s).get("version", ""))) for s in apiservices}
    out = list(apiservices)
    custom = {(r.group, r.version) for r in table.resources if r.custom}
    for group in table.groups():
        if not group or group == api.GROUP:
            continue
        for version in table.versions[group]:
            if (group, version) not in named:
                out.append(api.make(group, version, *priorities_of(group, version, (group, version) in custom)))
    return out


def own_group() -> dict[str, Any]:
    versions = [_group_version(api.GROUP, api.VERSION)]
    return {"name": api.GROUP, "versions": versions, "preferredVersion": versions[0]}


def api_group_list(apiservices: list[Object], table: ResourceTable) -> bytes:
    """`/apis`: the aggregator's group, then every group with an APIService (upstream apisHandler)."""
    groups = [own_group()]
    for members in api.sorted_by_group_and_version(with_local_entries(apiservices, table)):
        if api.spec_of(members[0]).get("group"):
            groups.append(_group_doc(members))
    return orjson.dumps({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


def api_group(group: str, apiservices: list[Object], table: ResourceTable) -> bytes | None:
    """`/apis/<group>` from the group's APIServices (upstream apiGroupHandler); None when it has none."""
    members = [s for s in with_local_entries(apiservices, table) if api.spec_of(s).get("group") == group]
    if not members:
        return None
    doc = _group_doc(api.sorted_by_group_and_version(members)[0])
    return orjson.dumps({"kind": "APIGroup", "apiVersion": "v1", **doc})


# -- aggregated discovery --------------------------------------------------------------------------------------


def _kube_order(version: str) -> tuple[int, int, int, str]:
    from ..apiextensions.customresource_handler import version_order  # see apiservice.sorted_by_group_and_version

    return version_order(version)


def aggregated(
    version: str, table: ResourceTable, apiservices: list[Object], remote: dict[str, dict[str, Any]]
) -> bytes:
    """The APIGroupDiscoveryList for `/apis`: this server's group versions and the remote ones `remote` holds
    (by APIService name), a remote one taking the place of a local one of the same group version; groups by
    their highest group priority then name, versions by priority then version order (upstream
    calculateAPIGroupsLocked)."""
    custom = {(r.group, r.version) for r in table.resources if r.custom}
    entries: dict[str, dict[str, tuple[dict[str, Any], int, int]]] = {}  # group -> version -> (doc, gp, vp)
    for item in orjson.loads(local_discovery.aggregated(table, False, version))["items"]:
        group = item["metadata"]["name"]
        for v in item.get("versions") or ():
            gp, vp = priorities_of(group, v["version"], (group, v["version"]) in custom)
            entries.setdefault(group, {})[v["version"]] = (v, gp, vp)
    for s in apiservices:
        doc = remote.get(api.name_of(s))
        if doc is None or api.service_of(s) is None:
            continue
        spec = api.spec_of(s)
        gp, vp = int(spec.get("groupPriorityMinimum") or 0), int(spec.get("versionPriority") or 0)
        entries.setdefault(str(spec.get("group", "")), {})[str(spec.get("version", ""))] = (doc, gp, vp)

    def group_key(item: tuple[str, dict[str, tuple[dict[str, Any], int, int]]]) -> tuple[int, str]:
        name, versions = item
        return -max(gp for _, gp, _ in versions.values()), name

    items = []
    for group, versions in sorted(entries.items(), key=group_key):
        ordered = sorted(versions.items(), key=lambda kv: (-kv[1][2], _kube_order(kv[0])))
        items.append(
            {"metadata": {"name": group, "creationTimestamp": None}, "versions": [doc for _, (doc, _, _) in ordered]}
        )
    return orjson.dumps(
        {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}", "metadata": {},
         "items": items}
    )  # fmt: skip


def resources_from_legacy(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An APIResourceList's resources in the aggregated form (upstream ConvertGroupVersionIntoToDiscovery):
    subresources under their parent, a parent made up for a subresource without one."""
    out: list[dict[str, Any]] = []
    parents: dict[str, dict[str, Any]] = {}
    for r in resources:
        name = str(r.get("name", ""))
        if "/" in name:
            continue
        entry: dict[str, Any] = {
            "resource": name,
            "responseKind": {"group": r.get("group", ""), "version": r.get("version", ""), "kind": r.get("kind", "")},
            "scope": "Namespaced" if r.get("namespaced") else "Cluster",
            "singularResource": r.get("singularName", ""),
            "verbs": r.get("verbs"),
        }
        for key in ("shortNames", "categories"):
            if r.get(key):
                entry[key] = r[key]
        out.append(entry)
        parents[name] = entry
    for r in resources:
        parent_name, slash, sub = str(r.get("name", "")).partition("/")
        if not slash:
            continue
        parent = parents.get(parent_name)
        if parent is None:
            scope = "Namespaced" if r.get("namespaced") else "Cluster"
            parent = {"resource": parent_name, "responseKind": {}, "scope": scope, "singularResource": "",
                      "verbs": None}  # fmt: skip
            out.append(parent)
            parents[parent_name] = parent
        kind = r.get("kind", "")
        response = {"group": r.get("group", ""), "version": r.get("version", ""), "kind": kind} if kind else {}
        parent.setdefault("subresources", []).append({"subresource": sub, "responseKind": response,
                                                      "verbs": r.get("verbs")})  # fmt: skip
    return out


def _is_aggregated(content_type: str) -> bool:
    params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in content_type.split(";")[1:])}
    return params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList"


class DownloadError(Exception):
    pass


class DiscoveryManager:
    """The remote APIServices' discovery, kept up to date (upstream discoveryManager)."""

    def __init__(
        self,
        apiservices: RESTStore,
        resolver: ServiceResolver,
        transport: ProxyTransport,
        on_change: Callable[[], None],
    ) -> None:
        self.apiservices = apiservices
        self.resolver = resolver
        self.transport = transport
        self.on_change = on_change
        self.docs: dict[str, dict[str, Any]] = {}  # APIService name -> its APIVersionDiscovery
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="discovery-manager")

    def _on_event(self, event_type: str, obj: Object) -> None:
        self.queue.add(api.name_of(obj))

    async def run(self) -> None:
        tasks = [
            asyncio.create_task(watch_forever(self.apiservices, self._on_event, "discovery manager")),
            asyncio.create_task(self._refresh()),
        ]
        workers = [asyncio.create_task(process_items(self.queue, self.sync, "discovery manager")) for _ in range(2)]
        try:
            await asyncio.gather(*workers)
        finally:
            for t in tasks + workers:
                t.cancel()
            self.queue.shut_down()

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_INTERVAL)
            for obj in cached_list(self.apiservices):
                if api.service_of(obj) is not None:
                    self.queue.add(api.name_of(obj))

    async def sync(self, name: str) -> None:
        entry = self.apiservices.cacher.get(self.apiservices.key("", name))
        obj = entry.obj if entry is not None else None
        if obj is None or api.service_of(obj) is None:
            if self.docs.pop(name, None) is not None:
                self.on_change()
            return
        doc = await self.download(obj)
        if self.docs.get(name) != doc:
            self.docs[name] = doc
            self.on_change()

    async def download(self, obj: Object) -> dict[str, Any]:
        """The APIVersionDiscovery of the APIService's group version from its server: Current, or Stale with no
        resources when the server could not be asked."""
        group, version = str(api.spec_of(obj).get("group", "")), str(api.spec_of(obj).get("version", ""))
        try:
            found = await self._download(obj, group, version)
        except (DownloadError, ResolveError, DialError, aiohttp.ClientError, OSError, TimeoutError, ValueError) as err:
            log.info("discovery of %s: %s", api.name_of(obj), err)
            return {"version": version, "freshness": "Stale"}
        return {**found, "version": version, "freshness": "Current"}

    async def _get(self, obj: Object, path: str, headers: dict[str, str]) -> tuple[int, str, bytes]:
        service = api.service_of(obj) or {}
        base = self.resolver.resolve(service.get("namespace", ""), service.get("name", ""), api.service_port(service))
        check_loopback(base)
        ctx, server_name = self.transport.tls_for(obj)
        async with self.transport.session.get(
            base + path, headers=headers, ssl=ctx, server_hostname=server_name, allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT),
        ) as resp:  # fmt: skip
            return resp.status, resp.headers.get("Content-Type", ""), await resp.read()

    async def _download(self, obj: Object, group: str, version: str) -> dict[str, Any]:
        headers = {"Accept": AGGREGATED_ACCEPT, "X-Remote-User": DISCOVERY_USER, "X-Remote-Group": "system:masters"}
        status, ctype, body = await self._get(obj, "/apis", headers)
        if status == 503:
            raise DownloadError(f"service returned non-success response code: {status}")
        if status == 200 and _is_aggregated(ctype):
            for item in orjson.loads(body).get("items") or ():
                if (item.get("metadata") or {}).get("name") != group:
                    continue
                for v in item.get("versions") or ():
                    if v.get("version") == version:
                        return _with_response_kinds(v)
            return {}
        # An older server: its legacy document for the group version.
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        status, _, body = await self._get(obj, path, {"Accept": "application/json", "X-Remote-User": DISCOVERY_USER})
        if status != 200:
            raise DownloadError(f"failed to download legacy discovery for {path}: {body.decode(errors='replace')}")
        resources = resources_from_legacy(orjson.loads(body).get("resources") or [])
        return {"resources": resources} if resources else {}


def _with_response_kinds(v: dict[str, Any]) -> dict[str, Any]:
    """Every resource and subresource with a responseKind, empty when the server left it out (upstream does
    this for clients of 1.26 that need one)."""
    for r in v.get("resources") or ():
        r.setdefault("responseKind", {})
        for s in r.get("subresources") or ():
            s.setdefault("responseKind", {})
    return {k: val for k, val in v.items() if k not in ("version", "freshness")}
