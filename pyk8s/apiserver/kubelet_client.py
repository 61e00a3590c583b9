"""How the API server reaches a node's kubelet (upstream: pkg/kubelet/client/kubelet_client.go
`NodeConnectionInfoGetter`): the node's address and `status.daemonEndpoints.kubeletEndpoint.Port`, over HTTPS
without verifying the kubelet's serving certificate, as kube-apiserver does without
--kubelet-certificate-authority.

Addresses are taken in the order InternalIP, ExternalIP (kubeadm's --kubelet-preferred-address-types, which
needs no DNS; upstream's default puts Hostname first). pyk8s sends nothing off this machine, so an address
outside 127.0.0.0/8 (or ::1) is refused with a 400 rather than connected to.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ..api import errors

PREFERRED_ADDRESS_TYPES = ("InternalIP", "ExternalIP")
DEFAULT_KUBELET_PORT = 10250  # upstream --kubelet-port


@dataclass(frozen=True)
class ConnectionInfo:
    host: str
    port: int

    def url(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}{path}"


def _go_addresses(addresses: list[Any]) -> str:
    return "[" + " ".join("{" + f"{a.get('type', '')} {a.get('address', '')}" + "}" for a in addresses) + "]"


def connection_info(node: dict[str, Any]) -> ConnectionInfo:
    """Where the kubelet of `node` listens; a Status error if it has no usable address or a non-loopback one."""
    name = (node.get("metadata") or {}).get("name", "")
    status = node.get("status") or {}
    addresses = [a for a in status.get("addresses") or () if isinstance(a, dict)]
    host = next((a.get("address", "") for t in PREFERRED_ADDRESS_TYPES for a in addresses if a.get("type") == t), None)
    if not host:
        # A plain error upstream (NoMatchError), which its handler answers as a 500 with no reason.
        raise errors.StatusError(500, "", f"no preferred addresses found; known addresses: {_go_addresses(addresses)}")
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise errors.bad_request(
            f"node {errors.go_quote(name)} has kubelet address {host}, which is not a loopback address: "
            "pyk8s connects only to 127.0.0.0/8 and ::1"
        )
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        port = DEFAULT_KUBELET_PORT
    return ConnectionInfo(host, port)


def generic_server_response(code: int, resource: str, name: str, body: str) -> errors.StatusError:
    """A backend's error answer as the API server relays it (apimachinery NewGenericServerResponse, with no
    verb, as generic/rest's response checker calls it)."""
    reason, message = {
        404: ("NotFound", "the server could not find the requested resource"),
        409: ("Conflict", "the server reported a conflict"),
        401: ("Unauthorized", "the server has asked for the client to provide credentials"),
        403: ("Forbidden", body),
        405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
        422: ("Invalid", "the server rejected our request due to an error in our request"),
        429: ("TooManyRequests", "the server has received too many requests and has asked us to try again later"),
        503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
        504: (
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
        ),
    }.get(code, ("", f"the server responded with the status code {code} but did not return more information"))
    if code >= 500 and code not in (503, 504):
        reason = "InternalError"
        message = f"an error on the server ({errors.go_quote(body)}) has prevented the request from succeeding"
    message = f"{message} ( {resource} {name})"
    return errors.StatusError(code, reason, message, details={"name": name, "kind": resource})


def response_error(code: int, body: str, resource: str, name: str) -> errors.StatusError:
    """What a non-2xx answer of the kubelet becomes (upstream GenericHttpResponseChecker): 500 an InternalError
    and 400 a BadRequest carrying its text, anything else the generic answer for its code."""
    if code == 500:
        return errors.internal_error(body)
    if code == 400:
        return errors.bad_request(body)
    return generic_server_response(code, resource, name, body)
