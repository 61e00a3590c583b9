"""Discovery documents, all built from the resource table: the aggregated form kubectl 1.32 asks for
(`apidiscovery.k8s.io/v2` APIGroupDiscoveryList) and the legacy `/api`, `/apis`, `/apis/<group>`,
`/api/v1`, `/apis/<group>/<version>` documents (kopf uses those)."""

from __future__ import annotations

from typing import Any

import orjson

from ..api.resources import Resource, ResourceTable

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def _sub_kind(r: Resource, sub: Any) -> dict[str, str]:
    if sub.kind:
        return {
            "group": sub.group if sub.group is not None else r.group,
            "version": sub.version or r.version,
            "kind": sub.kind,
        }
    return {"group": r.group, "version": r.version, "kind": r.kind}


def _aggregated_resource(r: Resource) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular_name,
        "verbs": sorted(r.verbs),
    }
    if r.short_names:
        out["shortNames"] = list(r.short_names)
    if r.categories:
        out["categories"] = list(r.categories)
    if r.subresources:
        out["subresources"] = [
            {"subresource": s.name, "responseKind": _sub_kind(r, s), "verbs": sorted(s.verbs)} for s in r.subresources
        ]
    return out


def _aggregated_group(table: ResourceTable, group: str) -> dict[str, Any]:
    versions = []
    for v in table.versions[group]:
        resources = sorted(table.in_group_version(group, v), key=lambda r: r.plural)
        versions.append(
            {"version": v, "resources": [_aggregated_resource(r) for r in resources], "freshness": "Current"}
        )
    return {"metadata": {"name": group, "creationTimestamp": None}, "versions": versions}


def aggregated(table: ResourceTable, legacy: bool, version: str = "v2") -> bytes:
    """The APIGroupDiscoveryList for `/api` (legacy=True) or `/apis`."""
    groups = [""] if legacy else [g for g in table.groups() if g]
    doc = {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": [_aggregated_group(table, g) for g in groups],
    }
    return orjson.dumps(doc)


def api_versions(server_address: str) -> bytes:
    return orjson.dumps(
        {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        }
    )


def _group_doc(table: ResourceTable, group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in table.versions[group]]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list(table: ResourceTable) -> bytes:
    groups = [_group_doc(table, g) for g in table.groups() if g]
    return orjson.dumps({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


def api_group(table: ResourceTable, group: str) -> bytes | None:
    if group not in table.versions or not group:
        return None
    return orjson.dumps({"kind": "APIGroup", "apiVersion": "v1", **_group_doc(table, group)})


def api_resource_list(table: ResourceTable, group: str, version: str) -> bytes | None:
    resources = sorted(table.in_group_version(group, version), key=lambda r: r.plural)
    if not resources:
        return None
    items: list[dict[str, Any]] = []
    for r in resources:
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular_name,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": sorted(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        items.append(entry)
        for s in r.subresources:
            k = _sub_kind(r, s)
            sub: dict[str, Any] = {
                "name": f"{r.plural}/{s.name}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": k["kind"],
                "verbs": sorted(s.verbs),
            }
            if s.kind and (k["group"] != r.group or k["version"] != r.version):
                sub["group"], sub["version"] = k["group"], k["version"]
            items.append(sub)
    gv = f"{group}/{version}" if group else version
    return orjson.dumps({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items})
