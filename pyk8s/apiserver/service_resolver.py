"""Where the API server reaches a Service it calls out to: an APIService's extension server, a CRD's
conversion webhook (upstream: kube-aggregator pkg/apiserver/resolvers.go, k8s.io/apiserver pkg/util/proxy
ResolveCluster / ResolveEndpoint, and kube-apiserver's buildServiceResolver, which builds the one resolver
both use).

With `--enable-aggregator-routing` a Service is reached at one of its endpoints' addresses; without it at
its cluster IP and port. `default/kubernetes:443` is this server itself. pyk8s runs no service proxy, so a
cluster IP is reachable only when it is a loopback address: pyk8s therefore turns aggregator routing on by
default (upstream leaves it off), and a Service whose Endpoints list the loopback address a server listens on
is the way in.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..api.meta import Object

Lookup = Callable[[str, str], Object | None]  # (namespace, name) -> the object in the watch cache


class ResolveError(Exception):
    """The Service cannot be routed to (upstream's error texts)."""


class ServiceResolver(Protocol):
    def resolve(self, namespace: str, name: str, port: int) -> str:
        """`https://<host>:<port>` for the Service's `port`, or ResolveError."""
        ...


def _join(host: str, port: int | str) -> str:
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def _service(services: Lookup, namespace: str, name: str) -> dict[str, Any]:
    svc = services(namespace, name)
    if svc is None:
        raise ResolveError(f'service "{name}" not found')
    spec = svc.get("spec")
    return spec if isinstance(spec, dict) else {}


def _service_port(spec: dict[str, Any], name: str, port: int) -> dict[str, Any]:
    for p in spec.get("ports") or ():
        if isinstance(p, dict) and p.get("port") == port:
            return p
    raise ResolveError(f'no service port {port} found for service "{name}"')


_ROUTABLE_TYPES = ("ClusterIP", "LoadBalancer", "NodePort")


class ClusterIPServiceResolver:
    """The Service's cluster IP, or an ExternalName's name (upstream NewClusterIPServiceResolver)."""

    def __init__(self, services: Lookup) -> None:
        self.services = services

    def resolve(self, namespace: str, name: str, port: int) -> str:
        spec = _service(self.services, namespace, name)
        kind = spec.get("type") or "ClusterIP"
        if kind == "ClusterIP" and spec.get("clusterIP") == "None":
            raise ResolveError('cannot route to service with ClusterIP "None"')
        if kind in _ROUTABLE_TYPES:
            svc_port = _service_port(spec, name, port)
            return _join(str(spec.get("clusterIP", "")), svc_port["port"])
        if kind == "ExternalName":
            return _join(str(spec.get("externalName", "")), port)
        raise ResolveError(f'unsupported service type "{kind}"')


class EndpointServiceResolver:
    """One address of the Service's endpoints behind `port`, picked at random as upstream does (upstream
    NewEndpointServiceResolver)."""

    def __init__(self, services: Lookup, endpoints: Lookup) -> None:
        self.services = services
        self.endpoints = endpoints

    def resolve(self, namespace: str, name: str, port: int) -> str:
        spec = _service(self.services, namespace, name)
        kind = spec.get("type") or "ClusterIP"
        if kind not in _ROUTABLE_TYPES:
            raise ResolveError(f'unsupported service type "{kind}"')
        svc_port = _service_port(spec, name, port)
        eps = self.endpoints(namespace, name)
        if eps is None:
            raise ResolveError(f'endpoints "{name}" not found')
        subsets = [s for s in eps.get("subsets") or () if isinstance(s, dict)]
        if not subsets:
            raise ResolveError(f'no endpoints available for service "{name}"')
        start = random.randrange(len(subsets))
        for i in range(len(subsets)):
            subset = subsets[(start + i) % len(subsets)]
            addresses = subset.get("addresses") or []
            if not addresses:
                continue
            for p in subset.get("ports") or ():
                if p.get("name", "") == svc_port.get("name", ""):
                    return _join(str(random.choice(addresses).get("ip", "")), p.get("port", 0))
        raise ResolveError(f'no endpoints available for service "{name}"')


class LoopbackServiceResolver:
    """`default/kubernetes:443` is this server, at the address it serves on (upstream
    NewLoopbackServiceResolver); every other Service goes to `delegate`."""

    def __init__(self, delegate: ServiceResolver, own_url: Callable[[], str]) -> None:
        self.delegate = delegate
        self.own_url = own_url

    def resolve(self, namespace: str, name: str, port: int) -> str:
        if namespace == "default" and name == "kubernetes" and port == 443:
            parts = urlsplit(self.own_url())
            return f"https://{parts.netloc}"
        return self.delegate.resolve(namespace, name, port)


def build_resolver(
    services: Lookup, endpoints: Lookup, aggregator_routing: bool, own_url: Callable[[], str]
) -> ServiceResolver:
    """What kube-apiserver builds (upstream buildServiceResolver); `services` and `endpoints` read the watch
    cache."""
    base: ServiceResolver = (
        EndpointServiceResolver(services, endpoints) if aggregator_routing else ClusterIPServiceResolver(services)
    )
    return LoopbackServiceResolver(base, own_url)
