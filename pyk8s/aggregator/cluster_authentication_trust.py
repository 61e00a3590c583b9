"""The `kube-system/extension-apiserver-authentication` ConfigMap: how clients and the front proxy are
authenticated here, for extension API servers and the other components to trust the same (upstream:
kubernetes pkg/controlplane/controller/clusterauthenticationtrust).

`client-ca-file` is the client CA; with a request-header CA come `requestheader-client-ca-file` and the
header names and allowed names as JSON arrays. What the ConfigMap already holds is kept and what this server
has is added (CA certificates merged without duplicates or expired ones, lists without repeats), so that
servers of several configurations can share it. Written at start, when the ConfigMap changes, and every
minute.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ..api import errors
from ..api.meta import Object
from ..apiextensions.customresource_handler import system_context
from ..apiserver.informers import watch_forever
from ..apiserver.registry.rest import RESTStore

log = logging.getLogger("pyk8s.aggregator")

NAMESPACE = "kube-system"
NAME = "extension-apiserver-authentication"
RESYNC = 60.0


@dataclass
class ClusterAuthenticationInfo:
    client_ca: bytes = b""
    username_headers: list[str] = field(default_factory=list)
    uid_headers: list[str] = field(default_factory=list)
    group_headers: list[str] = field(default_factory=list)
    extra_header_prefixes: list[str] = field(default_factory=list)
    allowed_names: list[str] = field(default_factory=list)
    requestheader_ca: bytes = b""


def _json_list(values: list[str]) -> str:
    return json.dumps(values, separators=(",", ":"))


def _parse_list(text: str) -> list[str]:
    if not text:
        return []
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"not a JSON list of strings: {text!r}")
    return value


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _combine_certificates(first: bytes, second: bytes) -> bytes:
    """The certificates of both PEM bundles, in order, without duplicates or ones expired more than five minutes
    ago (upstream combineCertLists)."""
    slack = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    seen: set[bytes] = set()
    out: list[bytes] = []
    for bundle in (first, second):
        if not bundle:
            continue
        for cert in x509.load_pem_x509_certificates(bundle):
            der = cert.public_bytes(serialization.Encoding.DER)
            if cert.not_valid_after_utc <= slack or der in seen:
                continue
            seen.add(der)
            out.append(cert.public_bytes(serialization.Encoding.PEM))
    return b"".join(out)


def info_from(data: dict[str, str]) -> ClusterAuthenticationInfo:
    """What a ConfigMap's data says (upstream getClusterAuthenticationInfoFor)."""
    return ClusterAuthenticationInfo(
        client_ca=data.get("client-ca-file", "").encode(),
        username_headers=_parse_list(data.get("requestheader-username-headers", "")),
        uid_headers=_parse_list(data.get("requestheader-uid-headers", "")),
        group_headers=_parse_list(data.get("requestheader-group-headers", "")),
        extra_header_prefixes=_parse_list(data.get("requestheader-extra-headers-prefix", "")),
        allowed_names=_parse_list(data.get("requestheader-allowed-names", "")),
        requestheader_ca=data.get("requestheader-client-ca-file", "").encode(),
    )


def combine(existing: ClusterAuthenticationInfo, required: ClusterAuthenticationInfo) -> ClusterAuthenticationInfo:
    return ClusterAuthenticationInfo(
        client_ca=_combine_certificates(existing.client_ca, required.client_ca),
        username_headers=_union(existing.username_headers, required.username_headers),
        uid_headers=_union(existing.uid_headers, required.uid_headers),
        group_headers=_union(existing.group_headers, required.group_headers),
        extra_header_prefixes=_union(existing.extra_header_prefixes, required.extra_header_prefixes),
        allowed_names=_union(existing.allowed_names, required.allowed_names),
        requestheader_ca=_combine_certificates(existing.requestheader_ca, required.requestheader_ca),
    )


def data_for(info: ClusterAuthenticationInfo) -> dict[str, str]:
    """The ConfigMap's data (upstream getConfigMapDataFor), keys in the order Go's JSON writes a map's."""
    data: dict[str, str] = {}
    if info.client_ca:
        data["client-ca-file"] = info.client_ca.decode()
    if info.requestheader_ca:
        data["requestheader-allowed-names"] = _json_list(info.allowed_names)
        data["requestheader-client-ca-file"] = info.requestheader_ca.decode()
        data["requestheader-extra-headers-prefix"] = _json_list(info.extra_header_prefixes)
        data["requestheader-group-headers"] = _json_list(info.group_headers)
        data["requestheader-uid-headers"] = _json_list(info.uid_headers)
        data["requestheader-username-headers"] = _json_list(info.username_headers)
    return dict(sorted(data.items()))


class ClusterAuthenticationTrustController:
    def __init__(self, configmaps: RESTStore, required: ClusterAuthenticationInfo) -> None:
        self.configmaps = configmaps
        self.required = required
        self._wake = asyncio.Event()

    async def sync(self) -> None:
        """Write the ConfigMap when what it should hold differs from what it holds."""

        async def updater(current: Object | None) -> Object:
            cm: dict[str, Any] = current or {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": NAME, "namespace": NAMESPACE}}  # fmt: skip
            data = cm.get("data") or {}
            cm["data"] = data_for(combine(info_from(data), self.required))
            return cm

        entry = self.configmaps.cacher.get(self.configmaps.key(NAMESPACE, NAME))
        if entry is not None and (entry.obj.get("data") or {}) == data_for(
            combine(info_from(entry.obj.get("data") or {}), self.required)
        ):
            return
        log.info("writing updated authentication info to %s configmaps/%s", NAMESPACE, NAME)
        await self.configmaps.update(NAMESPACE, NAME, updater, system_context(), force_allow_create=True)

    async def run(self) -> None:
        def handle(event_type: str, obj: Object) -> None:
            if (obj.get("metadata") or {}).get("name") == NAME:
                self._wake.set()

        watch = asyncio.create_task(watch_forever(self.configmaps, handle, "cluster_authentication_trust", NAMESPACE))
        try:
            while True:
                self._wake.clear()
                pause = RESYNC
                try:
                    await self.sync()
                except (errors.StatusError, ValueError) as err:
                    log.warning("cluster_authentication_trust_controller: %s", err)
                    pause = 1.0
                try:
                    await asyncio.wait_for(self._wake.wait(), pause)
                except TimeoutError:
                    pass
        finally:
            watch.cancel()
