"""The `pyk8s` command: `up` (a whole cluster), `apiserver`, and `version`. Flags follow upstream's names."""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path

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


def _run(coro_factory: object) -> None:
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner = asyncio.run
    runner(coro_factory())  # type: ignore[operator]


async def _serve_until_signal(server: object) -> None:
    from .apiserver.server import APIServer

    assert isinstance(server, APIServer)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    return_code = 0
    try:
        await stop.wait()
    finally:
        await server.stop()
    raise SystemExit(return_code)


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in a Go duration such as "5m", "1m30s", "300ms" (upstream flags take these)."""
    import re

    s = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s)
    if not parts or "".join(n + u for n, u in parts) != s:
        raise click.BadParameter(f"invalid duration {text!r} (use e.g. 5m, 30s, 1m30s)")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def _apiserver_options(data_dir: Path, **kw: object) -> object:
    from .apiserver.server import APIServerOptions

    return APIServerOptions(
        data_dir=data_dir.expanduser().resolve(),
        etcd_servers=[s for s in str(kw["etcd_servers"]).split(",") if s],
        bind_address=str(kw["bind_address"]),
        secure_port=int(kw["secure_port"]),  # type: ignore[call-overload]
        insecure_port=int(kw["insecure_port"]),  # type: ignore[call-overload]
        tls_sans=list(kw["tls_san"]),  # type: ignore[call-overload]
        compaction_interval=parse_duration(str(kw["etcd_compaction_interval"])),
        watch_cache_history=int(kw["default_watch_cache_size"]),  # type: ignore[call-overload]
        request_timeout=parse_duration(str(kw["request_timeout"])),
        min_request_timeout=int(kw["min_request_timeout"]),  # type: ignore[call-overload]
        max_requests_inflight=int(kw["max_requests_inflight"]),  # type: ignore[call-overload]
        max_mutating_requests_inflight=int(kw["max_mutating_requests_inflight"]),  # type: ignore[call-overload]
    )


def _default_data_dir() -> Path:
    from .storage.factory import default_data_dir

    return default_data_dir()


_server_options = [
    click.option("--etcd-servers", default="", help="Comma-separated etcd endpoints (host:port); SQLite when empty."),
    click.option("--bind-address", default="127.0.0.1", show_default=True, help="Address to serve HTTPS on."),
    click.option("--secure-port", default=6443, show_default=True, help="HTTPS port (0: any free port)."),
    click.option("--insecure-port", default=0, help="Plain HTTP port on loopback, anonymous admin (0: off)."),
    click.option("--tls-san", multiple=True, help="Extra names and IPs for the serving certificate."),
    click.option(
        "--etcd-compaction-interval", default="5m", show_default=True, help="How often storage history is compacted."
    ),
    click.option(
        "--default-watch-cache-size",
        default=100_000,
        show_default=True,
        help="Events each watch cache keeps for resuming watches.",
    ),
    click.option("--request-timeout", default="1m", show_default=True, help="Deadline of non-watch requests."),
    click.option(
        "--min-request-timeout", default=1800, show_default=True, help="Seconds a watch lasts at least (30-60 min)."
    ),
    click.option("--max-requests-inflight", default=400, show_default=True, help="Read requests in flight before 429."),
    click.option(
        "--max-mutating-requests-inflight", default=200, show_default=True, help="Writes in flight before 429."
    ),
    click.option("-v", "--v", "verbosity", default=0, help="Log verbosity (0-4)."),
]


def _with_server_options(f: object) -> object:
    for opt in reversed(_server_options):
        f = opt(f)  # type: ignore[operator]
    return f


def _logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity < 3 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@main.command()
@click.option("--data-dir", type=click.Path(path_type=Path), default=None, help="State and PKI directory.")
@_with_server_options  # type: ignore[misc]
def apiserver(data_dir: Path | None, verbosity: int, **kw: object) -> None:
    """Serve the Kubernetes v1.32 API (kube-apiserver)."""
    from .apiserver.server import APIServer
    from .storage import StorageError

    _logging(verbosity)
    opts = _apiserver_options(data_dir or _default_data_dir(), **kw)
    server = APIServer(opts)  # type: ignore[arg-type]
    try:
        _run(lambda: _serve_until_signal(server))
    except (StorageError, OSError, ValueError) as e:
        raise click.ClickException(str(e)) from None


@main.command()
@click.option(
    "--data-dir", type=click.Path(path_type=Path), default=None, help="State directory (default: ~/.local/share/pyk8s)."
)
@_with_server_options  # type: ignore[misc]
def up(data_dir: Path | None, verbosity: int, **kw: object) -> None:
    """Start a cluster in the foreground until Ctrl-C; state is kept for the next start."""
    from rich.console import Console

    from .apiserver.server import APIServer
    from .storage import StorageError

    _logging(verbosity)
    console = Console(stderr=True)
    opts = _apiserver_options(data_dir or _default_data_dir(), **kw)
    server = APIServer(opts)  # type: ignore[arg-type]

    async def go() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        with console.status("starting the API server (storage, PKI, watch caches)..."):
            await server.start()
        console.print(f"[green]pyk8s is up[/]: API server at {server.url} (data in {server.options.data_dir})")
        console.print("Use it with:")
        print(f"export KUBECONFIG={server.kubeconfig_path}", flush=True)
        print("kubectl get namespaces", flush=True)
        console.print("Ctrl-C stops the cluster; its state is kept for the next `pyk8s up`.")
        try:
            await stop.wait()
        finally:
            with console.status("stopping..."):
                await server.stop()
            console.print("stopped.")

    try:
        _run(go)
    except (StorageError, OSError, ValueError) as e:
        raise click.ClickException(str(e)) from None


if __name__ == "__main__":
    main()
