"""`pyk8s scheduler` (run the scheduler, as kube-scheduler), `pyk8s scheduler evaluate` (one scenario's plugin
verdicts as JSON, offline) and `pyk8s scheduler explain NAMESPACE/POD` (the same for a live pending pod)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from ..component_options import secure_port_options

log = logging.getLogger(__name__)


def _load_scheduler_config(path: str | None, feature_gates: dict[str, bool] | None = None) -> Any:
    from .config import ConfigError, load_config
    from .framework.runtime import FrameworkError
    from .plugins.registry import check_profiles

    try:
        config = load_config(path, feature_gates=feature_gates)
        check_profiles(config, feature_gates)
    except ConfigError as e:
        raise click.ClickException(f"invalid configuration {path}: {e}") from None
    except FrameworkError as e:
        raise click.ClickException(f"couldn't create scheduler: {e}") from None
    except OSError as e:
        raise click.ClickException(f"reading {path}: {e}") from None
    return config


def _feature_gates(text: str) -> dict[str, bool]:
    """--feature-gates read and checked (framework/features.py): every gate pyk8s's scheduler knows, set or
    defaulted; names it does not know are reported and ignored."""
    from .framework.features import FeatureGateError, parse_feature_gates, resolve_feature_gates

    try:
        gates, ignored = resolve_feature_gates(parse_feature_gates(text))
    except FeatureGateError as e:
        raise click.BadParameter(str(e), param_hint="--feature-gates") from None
    for name in ignored:
        log.warning("feature gate %s does not change what a v1.32 scheduler decides; ignored", name)
    return gates


@click.group("scheduler", invoke_without_command=True)
@click.option("--kubeconfig", default=None, help="Path to the kubeconfig file (default: KUBECONFIG, in-cluster).")
@click.option("--config", "config_path", default=None, help="A KubeSchedulerConfiguration (v1) file.")
@click.option(
    "--leader-elect/--no-leader-elect", default=None,
    help="Schedule only while holding the kube-system/kube-scheduler Lease (default: the config's, true).",
)  # fmt: skip
@secure_port_options(10259)
@click.option(
    "--feature-gates", default="",
    help="Comma-separated Name=true|false; the gates pyk8s implements are listed in the README.",
)  # fmt: skip
@click.option("--kube-api-qps", type=float, default=None, help="Overrides clientConnection.qps (default 50).")
@click.option("--kube-api-burst", type=int, default=None, help="Overrides clientConnection.burst (default 100).")
@click.option("-v", "--v", "verbosity", default=0, help="Log verbosity (0-4).")
@click.pass_context
def scheduler(
    ctx: click.Context, kubeconfig: str | None, config_path: str | None, leader_elect: bool | None,
    secure_port: int, bind_address: str, port_file: Path | None, feature_gates: str, kube_api_qps: float | None,
    kube_api_burst: int | None, verbosity: int,
) -> None:  # fmt: skip
    """Run the scheduler (kube-scheduler): assigns pending pods to nodes."""
    if ctx.invoked_subcommand is not None:
        return
    from ..cli import _logging, run_component
    from ..client.kubeconfig import ConfigError, load_config
    from .server import SchedulerServer

    _logging(verbosity)
    gates = _feature_gates(feature_gates)
    config = _load_scheduler_config(config_path, gates)
    cc = config.client_connection
    try:
        client_config = load_config(kubeconfig or cc.kubeconfig or None).with_options(
            qps=kube_api_qps if kube_api_qps is not None else cc.qps,
            burst=kube_api_burst if kube_api_burst is not None else cc.burst,
        )
    except ConfigError as e:
        raise click.ClickException(str(e)) from None

    run_component(client_config, lambda client: SchedulerServer(
        client, config, leader_elect=leader_elect, bind_address=bind_address, secure_port=secure_port,
        feature_gates=gates, port_file=port_file,
    ))  # fmt: skip


@scheduler.command()
@click.argument("file", default="-")
@click.option("--config", "config_path", default=None, help="A KubeSchedulerConfiguration (v1) file.")
def evaluate(file: str, config_path: str | None) -> None:
    """Every plugin's verdict on one scenario (JSON from FILE or stdin), as JSON on stdout.

    The scenario is {pod, nodes, existingPods?, namespaces?, objects?, featureGates?, plugins?, candidateNodes?}.
    Every PreFilter and every Filter runs on every node (preFilter, filter).

    Every candidate node (candidateNodes, by default all nodes) is scored, including nodes a Filter rejected:
    PreScore runs over the candidates, then Score on each (rawScore) and NormalizeScore over them (score,
    before weights). totalScore and selectedNode are the scheduler's decision instead: PreScore, Score and
    NormalizeScore over the feasible nodes only (decisionScore, weighted by weights), so a feasible node's score
    can differ from its decisionScore when the rejected nodes change what PreScore computed or widen
    NormalizeScore's range.
    """
    from .evaluate import ScenarioError
    from .evaluate import evaluate as run_evaluate

    config = _load_scheduler_config(config_path)
    try:
        raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as e:
        raise click.ClickException(f"reading {file}: {e}") from None
    try:
        scenario = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise click.ClickException(f"{file}: not JSON: {e}") from None
    try:
        result = run_evaluate(scenario, config)
    except (ScenarioError, ValueError) as e:
        raise click.ClickException(f"{file}: {e}") from None
    click.echo(json.dumps(result, indent=2))


@scheduler.command()
@click.argument("pod")
@click.option("--kubeconfig", default=None, help="Path to the kubeconfig file.")
@click.option("--config", "config_path", default=None, help="A KubeSchedulerConfiguration (v1) file.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def explain(pod: str, kubeconfig: str | None, config_path: str | None, output: str) -> None:
    """Why NAMESPACE/POD fits or does not fit each node of the live cluster."""
    from ..cli import _run
    from ..client.kubeconfig import ConfigError, load_config
    from ..client.rest import RESTClient
    from .explain import live_scenario, render

    namespace, _, name = pod.rpartition("/")
    config = _load_scheduler_config(config_path)
    try:
        client_config = load_config(kubeconfig)
    except ConfigError as e:
        raise click.ClickException(str(e)) from None

    async def go() -> None:
        from ..api.errors import StatusError
        from .evaluate import evaluate as run_evaluate

        async with RESTClient(client_config) as client:
            try:
                scenario = await live_scenario(client, namespace or client_config.namespace or "default", name)
            except StatusError as e:
                raise click.ClickException(str(e)) from None
        result = run_evaluate(scenario, config)
        if output == "json":
            click.echo(json.dumps(result, indent=2))
        else:
            render(scenario, result)

    _run(go)
