"""`pyk8s scheduler explain`: build an `evaluate` scenario from the live cluster for one pod, and show the
result as a table — one row per node, a column per Filter plugin (✓ or its reason), then the total score."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ..client.rest import RESTClient
from .scheduler import WATCHED


async def live_scenario(client: RESTClient, namespace: str, name: str) -> dict[str, Any]:
    pod = await client.get("pods", name, namespace)
    nodes = (await client.list("nodes"))["items"]
    pods = (await client.list("pods", field_selector="spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"))[
        "items"
    ]
    namespaces = (await client.list("namespaces"))["items"]
    # What the running scheduler's plugins read through its informers, read once here.
    objects = {r: (await client.list(r))["items"] for r in WATCHED if r != "namespaces"}
    return {"pod": pod, "nodes": nodes, "existingPods": pods, "namespaces": namespaces, "objects": objects}


def render(scenario: dict[str, Any], result: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    pod = scenario["pod"]["metadata"]
    console.print(f"[bold]{pod.get('namespace')}/{pod['name']}[/]")
    for plugin, entry in result["preFilter"].items():
        if entry["code"] not in ("Success", "Skip"):
            console.print(f"  PreFilter [red]{plugin}[/]: {entry['code']}: {'; '.join(entry['reasons'])}")
    filters = list(result["filter"])
    table = Table(show_lines=False)
    table.add_column("node")
    for plugin in filters:
        table.add_column(plugin, overflow="fold")
    table.add_column("score", justify="right")
    for node in [n["metadata"]["name"] for n in scenario["nodes"]]:
        row = [node + (" [green]←[/]" if node == result["selectedNode"] else "")]
        for plugin in filters:
            v = result["filter"][plugin].get(node, {})
            code = v.get("code", "")
            row.append(
                "✓"
                if code == "Success"
                else ("skip" if code == "Skip" else f"[red]{'; '.join(v.get('reasons') or [code])}[/]")
            )
        row.append(str(result["totalScore"].get(node, "")))
        table.add_row(*row)
    console.print(table)
    chosen = result["selectedNode"]
    console.print(f"selected node: [bold]{chosen}[/]" if chosen else "[red]no node fits this pod[/]")
