"""The `pyk8s` command. Each component becomes a subcommand as it lands (apiserver, scheduler, up, ...)."""

from __future__ import annotations

import click

from . import KUBERNETES_MAJOR, KUBERNETES_MINOR, __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="pyk8s")
def main() -> None:
    """pyk8s: a Kubernetes control plane in Python, speaking the v1.32 API."""


@main.command()
def version() -> None:
    """Print the pyk8s version and the Kubernetes API version it serves."""
    click.echo(f"pyk8s {__version__} (Kubernetes API v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR})")


if __name__ == "__main__":
    main()
