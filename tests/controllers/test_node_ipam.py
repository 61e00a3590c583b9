"""The node IPAM controller in a real controller manager: nodes get podCIDRs from --cluster-cidr; with the range
used up a node gets CIDRNotAvailable events; a restarted controller recovers what the nodes hold (no subnet twice);
a deleted node's subnet goes to the node that was waiting."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess
from pyk8s.testing.polling import wait_for

FLAGS = ("--no-leader-elect", "--controllers", "nodeipam", "--allocate-node-cidrs", "--cluster-cidr", "10.10.0.0/23",
         "--node-cidr-mask-size", "24")  # fmt: skip


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    proc = APIServerProcess().start()
    yield proc
    proc.cleanup()


def cidr(server: APIServerProcess, name: str) -> str | None:
    status, node = server.request("GET", f"/api/v1/nodes/{name}")
    return node["spec"].get("podCIDR") if status == 200 else None


def not_available_events(server: APIServerProcess, name: str) -> list[dict[str, Any]]:
    events = server.request("GET", "/api/v1/namespaces/default/events")[1]["items"]
    return [e for e in events if e["involvedObject"]["name"] == name and e["reason"] == "CIDRNotAvailable"]


def create_node(server: APIServerProcess, name: str) -> None:
    status, body = server.request(
        "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    )
    assert status == 201, body


def test_allocation_exhaustion_recovery_and_release(server: APIServerProcess) -> None:
    cm = ComponentProcess("controller-manager", server.kubeconfig, *FLAGS, log_dir=server.dir).start()
    try:
        for n in ("a", "b"):
            create_node(server, n)
        got = wait_for("two podCIDRs", lambda: (c := {n: cidr(server, n) for n in "ab"}) and all(c.values()) and c)
        assert sorted(got.values()) == ["10.10.0.0/24", "10.10.1.0/24"]
        status, node = server.request("GET", "/api/v1/nodes/a")
        assert node["spec"]["podCIDRs"] == [node["spec"]["podCIDR"]]

        create_node(server, "c")  # the /23 holds two /24s: none left
        event = wait_for("CIDRNotAvailable", lambda: not_available_events(server, "c"))[0]
        assert event["message"] == "Node c status is now: CIDRNotAvailable"
        assert (event["type"], event["source"]["component"]) == ("Normal", "cidrAllocator")

        # A new controller manager knows nothing but what the nodes hold: c still gets nothing.
        cm.kill()
        seen = sum(e.get("count", 1) for e in not_available_events(server, "c"))
        cm = ComponentProcess("controller-manager", server.kubeconfig, *FLAGS, log_dir=server.dir).start()
        wait_for(
            "CIDRNotAvailable again", lambda: sum(e.get("count", 1) for e in not_available_events(server, "c")) > seen
        )
        assert cidr(server, "c") is None and {cidr(server, "a"), cidr(server, "b")} == set(got.values())

        status, _ = server.request("DELETE", "/api/v1/nodes/a")
        assert status == 200
        assert wait_for("c to get a's subnet", lambda: cidr(server, "c"), 45) == got["a"]
    finally:
        cm.stop()


@pytest.mark.parametrize(
    ("args", "want"),
    [
        ((), False),
        (("--allocate-node-cidrs",), True),
        (("--allocate-node-cidrs=true",), True),
        (("--allocate-node-cidrs=True",), True),
        (("--allocate-node-cidrs=1",), True),
        (("--allocate-node-cidrs=false",), False),
        (("--allocate-node-cidrs=F",), False),
        (("--allocate-node-cidrs", "--cluster-cidr", "10.244.0.0/16"), True),
    ],
)
def test_allocate_node_cidrs_reads_as_upstreams_bool_flag(args, want):
    """`--allocate-node-cidrs` alone, or with any value Go's strconv.ParseBool takes, as kube-controller-manager
    reads it; anything else is a usage error naming the value."""
    import click
    from click.testing import CliRunner

    from pyk8s.controllers.options import controller_flags

    seen = []

    @click.command()
    @controller_flags
    def cmd(**kw):
        seen.append(kw["allocate_node_cidrs"])

    result = CliRunner().invoke(cmd, list(args))
    assert result.exit_code == 0, result.output
    assert seen == [want]
    bad = CliRunner().invoke(cmd, ["--allocate-node-cidrs=maybe"])
    assert bad.exit_code == 2 and 'invalid argument "maybe" for "--allocate-node-cidrs" flag' in bad.output
