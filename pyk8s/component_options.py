"""The flags the long-running components share, as upstream's components name them: the secure port that serves
`/healthz`, `/livez`, `/readyz` and `/metrics` (see component_server.py), and where to report the port bound."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class GoBool(click.ParamType):
    """A boolean flag as Go's pflag reads one: `--flag` alone is true, `--flag=false` (or any spelling
    strconv.ParseBool takes: 1, t, T, TRUE, true, True and their false counterparts) sets it."""

    name = "bool"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> bool:
        if isinstance(value, bool):
            return value
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        flag = param.opts[0] if param is not None and param.opts else "bool"
        self.fail(f'invalid argument "{value}" for "{flag}" flag: strconv.ParseBool: parsing "{value}": invalid syntax')


def go_bool_option(name: str, default: bool, help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An option `name` that is true when given alone and takes `name=true|false` as upstream's flags do."""
    return click.option(name, type=GoBool(), is_flag=False, flag_value="true", default=default, show_default=True,
                        help=help)  # fmt: skip


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
