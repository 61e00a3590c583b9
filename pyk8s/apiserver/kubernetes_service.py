"""The `kubernetes` Service in `default` (upstream: pkg/controlplane/controller/kubernetesservice and the
apiserver's endpoint reconciler): the first IP of the service range, port 443 named `https` targeting the API
server's secure port, with an Endpoints and an EndpointSlice (both named `kubernetes`) listing this API server, so
that in-cluster clients and `kubectl get svc,endpoints` find it as on any cluster. Written at start and put back
as this server has it (its port may differ from the last run's)."""

from __future__ import annotations

import logging
from typing import Any

from ..api import errors
from ..api.meta import Object
from .registry.rest import Context, RESTStore

log = logging.getLogger(__name__)

NAME = "kubernetes"
NAMESPACE = "default"
SERVICE_IP = "10.96.0.1"  # the first address of the service range (10.96.0.0/12)


def desired(address: str, port: int) -> dict[str, dict[str, Any]]:
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": SERVICE_IP, "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    }  # fmt: skip
    endpoints = {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": address}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    }  # fmt: skip
    endpoint_slice = {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"kubernetes.io/service-name": NAME}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }  # fmt: skip
    return {"services": service, "endpoints": endpoints, "endpointslices": endpoint_slice}


async def reconcile(stores: dict[str, RESTStore], address: str, port: int, ctx: Context) -> None:
    """Create the three objects, or rewrite the parts this server owns when they differ."""
    for plural, want in desired(address, port).items():
        store = stores[plural]

        async def merge(current: Object | None, want: dict[str, Any] = want) -> Object:
            if current is None:
                return want
            merged = dict(current)
            for key, value in want.items():
                if key == "metadata":
                    merged["metadata"] = {**current["metadata"], "labels": value["labels"]}
                elif key == "spec":
                    # The cluster IP is kept as allocated; the rest is ours.
                    merged["spec"] = {**current.get("spec", {}), **{k: v for k, v in value.items() if k != "clusterIP"}}
                elif key not in ("apiVersion", "kind"):
                    merged[key] = value
            return merged

        try:
            await store.update(NAMESPACE, NAME, merge, ctx, force_allow_create=True)
        except errors.StatusError as err:
            log.warning("could not reconcile %s %s/%s: %s", plural, NAMESPACE, NAME, err)
