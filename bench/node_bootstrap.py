"""What per-node identities cost: N simulated nodes joining by TLS bootstrap (`pyk8s nodes --bootstrap-kubeconfig`:
each asks for its client certificate with a CertificateSigningRequest, which the controller manager's csrapproving
controller approves after a SubjectAccessReview and its csrsigning controller signs, then registers as
system:node:<name> over its own connection), beside N nodes on the admin's kubeconfig (one shared identity and
connection), in the same run against one API server (`pyk8s apiserver`, SQLite) and one controller manager, both
in their own processes. Shown: seconds from the start of `pyk8s nodes` until it reports every node registered, and
the ratio. A second start of the bootstrapped nodes reuses their certificates (no requests), so it is timed too.

The controller manager runs with kube-controller-manager's client defaults (20 requests/s, bursts of 30, per
controller's client): each CSR costs the controllers three requests (a SubjectAccessReview, the approval, the
certificate), which bounds the bootstrap rate, as upstream's.

Run: python bench/node_bootstrap.py [--nodes N] [--quick]
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyk8s.apiserver.bootstrap_token import NODE_BOOTSTRAP_BINDINGS, bootstrap_kubeconfig, token_secret
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess
from pyk8s.testing.polling import wait_for

console = Console()
TOKEN = ("abcdef", "0123456789abcdef")


def join(server: APIServerProcess, prefix: str, count: int, *flags: str) -> float:
    """Seconds until `pyk8s nodes` says all `count` nodes registered (it is stopped then)."""
    t0 = time.monotonic()
    nodes = ComponentProcess(
        "nodes", server.kubeconfig, *flags, "--count", str(count), "--name-prefix", prefix, "-v", "1",
        log_dir=server.dir, secure_port=False,
    ).start()  # fmt: skip
    try:
        with console.status(f"{count} nodes {prefix.rstrip('-')}..."):
            wait_for(
                f"{count} nodes registered", lambda: f"registered {count} node(s)" in nodes.log_tail(400), timeout=900
            )
        return time.monotonic() - t0
    finally:
        nodes.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200, help="nodes per case")
    ap.add_argument("--quick", action="store_true", help="20 nodes (a smoke run)")
    args = ap.parse_args()
    count = 20 if args.quick else args.nodes
    server = APIServerProcess(
        extra_args=("--enable-bootstrap-token-auth", "--enable-admission-plugins=NodeRestriction")
    ).start()
    cm: ComponentProcess | None = None
    try:
        expires = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
        server.apply(token_secret(*TOKEN, expires), *NODE_BOOTSTRAP_BINDINGS)
        pki = server.data_dir / "pki"
        config = server.dir / "bootstrap-kubelet.conf"
        ca = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
        config.write_bytes(bootstrap_kubeconfig(server.url, ca, ".".join(TOKEN)))
        cm = ComponentProcess(
            "controller-manager", server.kubeconfig, "--controllers", "csrapproving,csrsigning",
            "--use-service-account-credentials=true", "--cluster-signing-cert-file", str(pki / "ca.crt"),
            "--cluster-signing-key-file", str(pki / "ca.key"), log_dir=server.dir,
        ).start()  # fmt: skip
        shared = join(server, "shared-", count)
        flags = ("--bootstrap-kubeconfig", str(config), "--cert-dir", str(server.dir / "certs"))
        bootstrapped = join(server, "own-", count, *flags)
        again = join(server, "own-", count, *flags)
    finally:
        if cm is not None:
            cm.stop()
        server.cleanup()
    table = Table(title=f"{count} simulated nodes joining one API server")
    for col in ("", "seconds", "per node (ms)", "shared identity / this"):
        table.add_column(col, justify="right")
    for label, secs in (
        ("admin's kubeconfig (one identity)", shared),
        ("TLS bootstrap (CSR, approve, sign)", bootstrapped),
        ("started again (certificates kept)", again),
    ):
        table.add_row(label, f"{secs:.1f}", f"{secs / count * 1000:.0f}", f"{shared / secs:.2f}")
    console.print(table)


if __name__ == "__main__":
    main()
