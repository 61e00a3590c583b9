"""The flags the long-running components share, as upstream's components name them: the secure port that serves
`/healthz`, `/livez`, `/readyz` and `/metrics` (see component_server.py), and where to report the port bound."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


def secure_port_options(default_port: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--secure-port` (upstream's default for the component), `--bind-address` and `--port-file`."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option(
            "--port-file", type=click.Path(path_type=Path), default=None,
            help="Write the bound secure port here once serving (for supervisors; useful with --secure-port 0).",
        )(f)  # fmt: skip
        f = click.option("--bind-address", default="127.0.0.1", show_default=True, help="Address of the secure port.")(
            f
        )
        return click.option(
            "--secure-port",
            default=default_port,
            show_default=True,
            help="HTTPS port for health and metrics; -1 disables.",
        )(f)

    return decorate
