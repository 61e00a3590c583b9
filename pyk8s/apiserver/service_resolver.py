"""Where the API server reaches a Service it calls out to (a CRD's conversion webhook, an aggregated API
server): an address of one of the Service's ready endpoints (upstream: kube-aggregator's
NewEndpointServiceResolver, what kube-apiserver's `--enable-aggregator-routing` selects). pyk8s always
resolves this way: cluster IPs are data that nothing connects to, so a Service is reached through the
loopback addresses its Endpoints list.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from .registry.rest import RESTStore


class ServiceResolutionError(Exception):
    """The Service, its port or a ready endpoint is missing (upstream's messages)."""


class EndpointServiceResolver:
    def __init__(self, services: RESTStore, endpoints: RESTStore) -> None:
        self.services = services
        self.endpoints = endpoints

    async def resolve(self, namespace: str, name: str, port: int) -> str:
        """`https://<address>:<port>` of an endpoint behind the Service's `port`."""
        try:
            svc = await self.services.get(namespace, name)
        except errors.StatusError as err:
            if err.code == 404:
                raise ServiceResolutionError(f'service "{name}" not found') from None
            raise
        spec: dict[str, Any] = svc.get("spec") or {}
        if spec.get("type") == "ExternalName":
            host = spec.get("externalName", "")
            return f"https://{host}:{port}"
        svc_port = next((p for p in spec.get("ports") or () if p.get("port") == port), None)
        if svc_port is None:
            raise ServiceResolutionError(f"no service port {port} found for service {name!r}".replace("'", '"'))
        try:
            ep = await self.endpoints.get(namespace, name)
        except errors.StatusError as err:
            if err.code == 404:
                raise ServiceResolutionError(f'no endpoints available for service "{name}"') from None
            raise
        for subset in ep.get("subsets") or ():
            ports = subset.get("ports") or []
            match = next((p for p in ports if p.get("name", "") == svc_port.get("name", "")), None)
            if match is None and len(ports) == 1 and not svc_port.get("name"):
                match = ports[0]
            addresses = subset.get("addresses") or []
            if match is not None and addresses:
                host = addresses[0].get("ip", "")
                host = f"[{host}]" if ":" in host else host
                return f"https://{host}:{match.get('port')}"
        raise ServiceResolutionError(f'no endpoints available for service "{name}"')
