"""Where the API server would connect to reach a node's kubelet: loopback addresses only, in any spelling."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from pyk8s.api import errors
from pyk8s.apiserver.kubelet_client import DEFAULT_KUBELET_PORT, ConnectionInfo, connection_info


def node(*addresses: tuple[str, str], port: Any = 10250) -> dict[str, Any]:
    return {
        "metadata": {"name": "n"},
        "status": {
            "addresses": [{"type": t, "address": a} for t, a in addresses],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        },
    }


@pytest.mark.parametrize(
    "address",
    [
        "localhost",
        "127.0.0.1.nip.io",
        "::ffff:10.0.0.1",
        "10.0.0.1",
        "127.1",
        " 127.0.0.1",
        "fe80::1",
        # the unspecified addresses, as a node might report them (nothing here binds them)
        str(ipaddress.IPv4Address(0)),
        str(ipaddress.IPv6Address(0)),
    ],
)
def test_anything_not_a_loopback_ip_is_refused(address: str) -> None:
    with pytest.raises(errors.StatusError) as e:
        connection_info(node(("InternalIP", address)))
    assert (e.value.code, e.value.reason) == (400, "BadRequest")


@pytest.mark.parametrize(
    ("address", "url"),
    [
        ("127.0.0.1", "https://127.0.0.1:10250/x"),
        ("127.5.6.7", "https://127.5.6.7:10250/x"),
        ("::1", "https://[::1]:10250/x"),
    ],
)
def test_loopback_addresses_are_used(address: str, url: str) -> None:
    assert connection_info(node(("InternalIP", address))).url("/x") == url


def test_internal_ip_comes_first_and_hostnames_are_never_used() -> None:
    info = connection_info(node(("Hostname", "localhost"), ("ExternalIP", "127.0.0.2"), ("InternalIP", "127.0.0.3")))
    assert info == ConnectionInfo("127.0.0.3", 10250)
    # The preferred address decides: a loopback one of a less preferred type does not stand in for it.
    with pytest.raises(errors.StatusError):
        connection_info(node(("InternalIP", "10.0.0.1"), ("ExternalIP", "127.0.0.1")))


def test_no_address_is_an_internal_error_as_upstream() -> None:
    with pytest.raises(errors.StatusError) as e:
        connection_info(node(("Hostname", "n")))
    assert (e.value.code, e.value.reason, e.value.message) == (
        500,
        "",
        "no preferred addresses found; known addresses: [{Hostname n}]",
    )


@pytest.mark.parametrize("port", [0, -1, 65536, 2**31 - 1, None])
def test_a_port_out_of_range_is_the_default(port: Any) -> None:
    assert connection_info(node(("InternalIP", "127.0.0.1"), port=port)).port == DEFAULT_KUBELET_PORT
