"""`pyk8s nodes`: run N simulated nodes in one process against any API server that speaks the Kubernetes API."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..component_options import secure_port_options

if TYPE_CHECKING:
    from ..client.kubeconfig import ClientConfig
    from ..client.rest import RESTClient
    from .hollow_nodes import HollowNodes

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
BOOTSTRAP_CONCURRENCY = 16  # certificate requests in flight at once


def parse_labels(text: str) -> dict[str, str]:
    """`k=v,k2=v2` as --node-labels takes it."""
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r}: want key=value", param_hint="--labels")
        out[key] = val
    return out


def parse_taints(text: str) -> list[dict[str, str]]:
    """`k=v:Effect,k2:Effect` as --register-with-taints takes it."""
    out: list[dict[str, str]] = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        kv, sep, effect = item.rpartition(":")
        if not sep or effect not in TAINT_EFFECTS or not kv:
            raise click.BadParameter(f"{item!r}: want key[=value]:{'|'.join(TAINT_EFFECTS)}", param_hint="--taints")
        key, _, val = kv.partition("=")
        taint = {"key": key, "effect": effect}
        if val:
            taint["value"] = val
        out.append(taint)
    return out


@click.command("nodes")
@click.option("--kubeconfig", default=None, help="Path to the kubeconfig file (default: KUBECONFIG).")
@click.option(
    "--bootstrap-kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A kubeconfig with a bootstrap token: each node then gets its own client certificate (system:node:NAME) "
    "through a CertificateSigningRequest, as the kubelet's TLS bootstrap, and makes its requests as itself. "
    "Without it all nodes share --kubeconfig's identity.",
)
@click.option(
    "--cert-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Where the nodes' certificates are kept (NODE/kubelet-client-current.pem); needed with "
    "--bootstrap-kubeconfig.",
)  # fmt: skip
@click.option("--count", type=click.IntRange(0), default=3, show_default=True, help="How many nodes.")
@click.option("--name-prefix", default="node-", show_default=True, help="Nodes are named PREFIX0, PREFIX1, ...")
@click.option("--cpu", default="4", show_default=True, help="Each node's cpu capacity.")
@click.option("--memory", default="32Gi", show_default=True, help="Each node's memory capacity.")
@click.option("--pods", type=click.IntRange(1), default=110, show_default=True, help="Each node's pod capacity.")
@click.option("--labels", default="", help="Extra labels, k=v,... (as the kubelet's --node-labels).")
@click.option("--taints", default="", help="Taints, k=v:Effect,... (as the kubelet's --register-with-taints).")
@click.option("--kube-api-qps", type=float, default=-1, show_default=True, help="Client rate limit (-1: none).")
@click.option(
    "--events/--no-events",
    default=True,
    show_default=True,
    help="Write the kubelet's pod events (Pulled, Created, Started, Killing); off for density runs.",
)
@click.option(
    "--node-template", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
    help="A Node manifest (YAML or JSON) every node is registered from: labels, annotations, taints, providerID, "
    "capacity and allocatable (extended resources too). Flags given explicitly win.",
)  # fmt: skip
@click.option(
    "--kubelet-port", type=click.IntRange(0, 65535), default=0, show_default=True,
    help="Port of the kubelet endpoint (container logs) all these nodes share, on 127.0.0.1 (0: a free port).",
)  # fmt: skip
@secure_port_options(-1)
@click.option("-v", "--v", "verbosity", default=0, help="Log verbosity (0-4).")
def nodes(
    kubeconfig: str | None, bootstrap_kubeconfig: Path | None, cert_dir: Path | None, count: int, name_prefix: str, cpu: str, memory: str, pods: int, labels: str, taints: str,
    kube_api_qps: float, events: bool, node_template: Path | None, kubelet_port: int, secure_port: int, bind_address: str, port_file: Path | None,
    verbosity: int,
) -> None:  # fmt: skip
    """Run COUNT simulated nodes (hollow kubelets) in this process: each registers its Node, renews its Lease every
    10 s and reports its status, as a v1.32 kubelet does. Several such processes can serve one cluster with
    different --name-prefix values. Pods bound to these nodes are started (ContainerCreating, then Running) and
    their deletions confirmed; their containers run until the pod is deleted. Their logs (`kubectl logs`) are
    served on --kubelet-port, which every node registers."""
    from ..api.quantity import parse_quantity
    from ..cli import _logging, run_component
    from ..client.kubeconfig import ConfigError, load_config
    from .hollow_nodes import HollowNodes
    from .node_status import NodeSpec

    _logging(verbosity)
    for name, q in (("--cpu", cpu), ("--memory", memory)):
        try:
            parse_quantity(q)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint=name) from None
    extra_labels, node_taints = parse_labels(labels), parse_taints(taints)
    shape: dict[str, Any] = {}
    if node_template is not None:
        from .node_template import TemplateError, load_template

        try:
            shape = load_template(node_template)
        except TemplateError as e:
            raise click.BadParameter(str(e), param_hint="--node-template") from None
    ctx = click.get_current_context()
    for param, val in (("cpu", cpu), ("memory", memory), ("pods", pods)):
        if param not in shape or ctx.get_parameter_source(param) != click.core.ParameterSource.DEFAULT:
            shape[param] = val
    shape["labels"] = {**shape.get("labels", {}), **extra_labels}
    if node_taints or "taints" not in shape:
        shape["taints"] = node_taints
    if bootstrap_kubeconfig is not None and cert_dir is None:
        raise click.BadParameter("needed with --bootstrap-kubeconfig", param_hint="--cert-dir")
    try:
        client_config = load_config(str(bootstrap_kubeconfig or "") or kubeconfig).with_options(qps=kube_api_qps)
    except ConfigError as e:
        raise click.ClickException(str(e)) from None
    specs = [NodeSpec(f"{name_prefix}{i}", **shape) for i in range(count)]

    def make(client: RESTClient, node_clients: dict[str, RESTClient] | None = None) -> HollowNodes:
        return HollowNodes(
            client, specs, events=events, bind_address=bind_address, secure_port=secure_port, port_file=port_file,
            kubelet_port=kubelet_port, node_clients=node_clients,
        )  # fmt: skip

    if cert_dir is None or bootstrap_kubeconfig is None:
        run_component(client_config, make)
        return
    run_component(client_config, lambda client: NodesWithIdentities(client, client_config, cert_dir, specs, make))


class NodesWithIdentities:
    """The nodes of `specs`, each first given its own certificate through `bootstrap` (the bootstrap token's
    client), then run with a client of its own."""

    def __init__(
        self, bootstrap: RESTClient, config: ClientConfig, cert_dir: Path, specs: list[Any],
        make: Callable[[RESTClient, dict[str, RESTClient]], Any],
    ) -> None:  # fmt: skip
        self.bootstrap, self.config, self.cert_dir, self.specs, self.make = bootstrap, config, cert_dir, specs, make

    async def run(self) -> None:
        import asyncio
        import logging

        from ..client.rest import RESTClient
        from .certificate_bootstrap import BootstrapError, bootstrap, node_config

        log = logging.getLogger(__name__)
        slots = asyncio.Semaphore(BOOTSTRAP_CONCURRENCY)
        done = 0

        async def certify(name: str) -> Path:
            nonlocal done
            async with slots:
                path = await bootstrap(self.bootstrap, self.cert_dir, name)
            done += 1
            if done % 100 == 0 or done == len(self.specs):
                log.info("client certificates: %d of %d node(s)", done, len(self.specs))
            return path

        try:
            paths = await asyncio.gather(*(certify(s.name) for s in self.specs))
        except BootstrapError as err:  # said plainly, as the kubelet's bootstrap failure is, not as a traceback
            raise click.ClickException(str(err)) from None
        clients = {s.name: RESTClient(node_config(self.config, p)) for s, p in zip(self.specs, paths, strict=True)}
        try:
            await self.make(self.bootstrap, clients).run()
        finally:
            await asyncio.gather(*(c.close() for c in clients.values()))
