"""What an API server serves, asked once and kept: a cached discovery client and a RESTMapper over it.

`DiscoveryClient` (upstream: client-go discovery.DiscoveryClient wrapped in the in-memory cache,
discovery/cached/memory) asks `/api` and `/apis` for the aggregated discovery document
(`apidiscovery.k8s.io/v2` APIGroupDiscoveryList: every group, version and resource in two requests). A server
that answers with the legacy documents instead (APIVersions, APIGroupList) is asked the legacy way: one
APIResourceList per group version. The answer is kept until `invalidate()`.

`RESTMapper` (upstream: restmapper.DeferredDiscoveryRESTMapper with the shortcut expander in front) turns
what a manifest says (apiVersion and kind) or what a user types (`deploy`, `deployments.apps`,
`deployments.v1.apps`) into a `Resource` (plural, scope). A miss refreshes discovery once before it becomes
an error, since a CustomResourceDefinition may have been created since the last fetch; the error reads as
kubectl's: `no matches for kind "Foo" in version "example.com/v1"`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..api.errors import StatusError
from ..api.resources import Resource, find_by_name
from .rest import RESTClient

AGGREGATED_ACCEPT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
# A refresh caused by a miss is not repeated for further misses until the cache is this old: a manifest with
# fifty objects of an unknown kind costs one extra fetch, not fifty.
MISS_REFRESH_AFTER = 10.0


class DiscoveryError(Exception):
    """Discovery could not be read from the server."""


class NoKindMatchError(LookupError):
    """No resource serves this kind (upstream: meta.NoKindMatchError, with its wording)."""

    def __init__(self, group: str, kind: str, searched_versions: Iterable[str] = ()) -> None:
        self.group = group
        self.kind = kind
        self.searched_versions = [v for v in searched_versions if v]
        super().__init__(str(self))

    def __str__(self) -> str:
        gvs = sorted({f"{self.group}/{v}" if self.group else v for v in self.searched_versions})
        if not gvs:
            return f'no matches for kind "{self.kind}" in group "{self.group}"'
        if len(gvs) == 1:
            return f'no matches for kind "{self.kind}" in version "{gvs[0]}"'
        return f'no matches for kind "{self.kind}" in versions {_go_list(gvs)}'


class NoResourceMatchError(LookupError):
    """No resource answers to this name (upstream: meta.NoResourceMatchError; kubectl's wording)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f'the server doesn\'t have a resource type "{name}"')


def _go_list(items: list[str]) -> str:
    return "[" + " ".join(f'"{i}"' for i in items) + "]"


@dataclass
class APIGroupResources:
    """One API group as discovery describes it: its versions, preferred first, and each version's resources
    (upstream: restmapper.APIGroupResources)."""

    name: str
    versions: list[str] = field(default_factory=list)
    resources: dict[str, list[Resource]] = field(default_factory=dict)

    @property
    def preferred_version(self) -> str:
        return self.versions[0] if self.versions else ""


class DiscoveryClient:
    """Discovery of one server through a `RESTClient`, fetched on first use and cached until `invalidate()`."""

    def __init__(self, client: RESTClient) -> None:
        self.client = client
        self._groups: list[APIGroupResources] | None = None
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()
        self.fetches = 0  # how many times the server was asked (tests and debugging read it)

    @property
    def fetched_at(self) -> float:
        """`time.monotonic()` of the last fetch; 0 when nothing is cached."""
        return self._fetched_at if self._groups is not None else 0.0

    def invalidate(self) -> None:
        """Forget the cached answer; the next call asks the server again."""
        self._groups = None

    async def server_groups_and_resources(self) -> list[APIGroupResources]:
        """Every group the server serves, in discovery order, with its resources."""
        groups = self._groups
        if groups is not None:
            return groups
        async with self._lock:
            if self._groups is None:
                self._groups = await self._fetch()
                self._fetched_at = time.monotonic()
                self.fetches += 1
            return self._groups

    async def _fetch(self) -> list[APIGroupResources]:
        core, named = await asyncio.gather(self._get_aggregated("/api"), self._get_aggregated("/apis"))
        groups: list[APIGroupResources] = []
        legacy_paths: list[tuple[APIGroupResources, str, str]] = []
        for doc, is_core in ((core, True), (named, False)):
            kind = doc.get("kind")
            if kind == "APIGroupDiscoveryList":
                groups.extend(_from_aggregated(doc))
            elif is_core and kind == "APIVersions":
                g = APIGroupResources("", [str(v) for v in doc.get("versions") or []])
                groups.append(g)
                legacy_paths += [(g, v, f"/api/{v}") for v in g.versions]
            elif not is_core and kind == "APIGroupList":
                for entry in doc.get("groups") or []:
                    g = _legacy_group(entry)
                    groups.append(g)
                    legacy_paths += [(g, v, f"/apis/{g.name}/{v}") for v in g.versions]
            else:
                raise DiscoveryError(f"unexpected discovery document at {'/api' if is_core else '/apis'}: {kind!r}")
        if legacy_paths:
            lists = await asyncio.gather(*(self._get_legacy(p) for _, _, p in legacy_paths))
            for (g, version, _), resource_list in zip(legacy_paths, lists, strict=True):
                g.resources[version] = _from_resource_list(g.name, version, resource_list)
        return groups

    async def _get_aggregated(self, path: str) -> dict[str, Any]:
        try:
            doc = await self.client.request("GET", path, accept=AGGREGATED_ACCEPT)
        except (StatusError, ConnectionError) as err:
            raise DiscoveryError(f"GET {path}: {err}") from err
        if not isinstance(doc, dict):
            raise DiscoveryError(f"GET {path}: not a discovery document")
        return doc

    async def _get_legacy(self, path: str) -> dict[str, Any]:
        try:
            doc = await self.client.request("GET", path)
        except (StatusError, ConnectionError) as err:
            raise DiscoveryError(f"GET {path}: {err}") from err
        return doc if isinstance(doc, dict) else {}


def _resource(group: str, version: str, raw: dict[str, Any], kind: str) -> Resource:
    return Resource(
        group=group,
        version=version,
        kind=kind,
        plural=str(raw.get("resource") or raw.get("name") or ""),
        namespaced=bool(raw.get("namespaced")) if "namespaced" in raw else raw.get("scope") == "Namespaced",
        short_names=tuple(raw.get("shortNames") or ()),
        categories=tuple(raw.get("categories") or ()),
        verbs=tuple(raw.get("verbs") or ()),
        singular=str(raw.get("singularResource") or raw.get("singularName") or ""),
    )


def _from_aggregated(doc: dict[str, Any]) -> list[APIGroupResources]:
    out: list[APIGroupResources] = []
    for item in doc.get("items") or []:
        name = str((item.get("metadata") or {}).get("name") or "")
        g = APIGroupResources(name)
        for v in item.get("versions") or []:
            version = str(v.get("version") or "")
            if not version:
                continue
            g.versions.append(version)
            resources = []
            for raw in v.get("resources") or []:
                kind = str((raw.get("responseKind") or {}).get("kind") or "")
                if raw.get("resource") and kind:
                    resources.append(_resource(name, version, raw, kind))
            g.resources[version] = resources
        out.append(g)
    return out


def _legacy_group(entry: dict[str, Any]) -> APIGroupResources:
    name = str(entry.get("name") or "")
    versions = [str(v.get("version") or "") for v in entry.get("versions") or [] if v.get("version")]
    preferred = str((entry.get("preferredVersion") or {}).get("version") or "")
    if preferred in versions:
        versions.remove(preferred)
        versions.insert(0, preferred)
    return APIGroupResources(name, versions)


def _from_resource_list(group: str, version: str, doc: dict[str, Any]) -> list[Resource]:
    out = []
    for raw in doc.get("resources") or []:
        name = str(raw.get("name") or "")
        if not name or "/" in name:  # subresources are not mapped
            continue
        out.append(_resource(group, version, raw, str(raw.get("kind") or "")))
    return out


class RESTMapper:
    """Kinds and resource names to `Resource`s, from discovery (upstream: DeferredDiscoveryRESTMapper)."""

    def __init__(self, discovery: DiscoveryClient | RESTClient) -> None:
        self.discovery = discovery if isinstance(discovery, DiscoveryClient) else DiscoveryClient(discovery)
        self._miss_refreshed_at = -1.0

    def invalidate(self) -> None:
        self.discovery.invalidate()

    async def _retry_on_miss(self, fetches_before: int) -> bool:
        """Refresh discovery after a miss, unless the lookup itself just fetched it or a miss already
        refreshed it a moment ago."""
        fetched = self.discovery.fetched_at
        if self.discovery.fetches != fetches_before:
            return False
        if fetched and fetched == self._miss_refreshed_at and time.monotonic() - fetched < MISS_REFRESH_AFTER:
            return False
        self.discovery.invalidate()
        await self.discovery.server_groups_and_resources()
        self._miss_refreshed_at = self.discovery.fetched_at
        return True

    async def rest_mapping(self, kind: str, api_version: str) -> Resource:
        """The resource serving `kind` at `api_version` ("v1", "apps/v1"; a bare group means its preferred
        version). NoKindMatchError when nothing does, after one refresh of discovery."""
        group, _, version = api_version.rpartition("/") if "/" in api_version else ("", "", api_version)
        before = self.discovery.fetches
        found = _mapping(await self.discovery.server_groups_and_resources(), group, kind, version)
        if found is None and await self._retry_on_miss(before):
            found = _mapping(await self.discovery.server_groups_and_resources(), group, kind, version)
        if found is None:
            raise NoKindMatchError(group, kind, [version])
        return found

    async def resource_for(self, name: str) -> Resource:
        """The resource a user means by `name`: a short name, plural, singular or kind, optionally qualified
        as `plural.group` or `plural.version.group`."""
        before = self.discovery.fetches
        found = _by_name(await self.discovery.server_groups_and_resources(), name)
        if found is None and await self._retry_on_miss(before):
            found = _by_name(await self.discovery.server_groups_and_resources(), name)
        if found is None:
            raise NoResourceMatchError(name)
        return found

    async def resources(self) -> list[Resource]:
        """Every resource served, core group first, each group's preferred version first."""
        return [
            r
            for g in await self.discovery.server_groups_and_resources()
            for v in g.versions
            for r in g.resources.get(v, [])
        ]


def _mapping(groups: list[APIGroupResources], group: str, kind: str, version: str) -> Resource | None:
    for g in groups:
        if g.name != group:
            continue
        versions = [version] if version else g.versions
        for v in versions:
            for r in g.resources.get(v, []):
                if r.kind == kind:
                    return r
    return None


def _by_name(groups: list[APIGroupResources], name: str) -> Resource | None:
    return find_by_name([r for g in groups for v in g.versions for r in g.resources.get(v, [])], name)
