"""Simulated nodes with identities of their own, through the kubelet's TLS bootstrap: `pyk8s nodes
--bootstrap-kubeconfig` asks for each node's client certificate with a bootstrap token, the controller manager's
csrapproving and csrsigning controllers approve and sign it, and each node then works as `system:node:<name>`
under the Node authorizer and NodeRestriction alone: its own Node, Lease and pods, nothing of another node's."""

from __future__ import annotations

import base64
import json
import os
import ssl
import stat
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyk8s.apiserver.bootstrap_token import NODE_BOOTSTRAP_BINDINGS, bootstrap_kubeconfig, token_secret
from pyk8s.supervisor import component_command, component_env
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess
from pyk8s.testing.polling import wait_for

TOKEN_ID, TOKEN_SECRET = "abcdef", "0123456789abcdef"
PREFIX = "idn-"


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[APIServerProcess, ComponentProcess, Path]]:
    import datetime as dt

    # NodeRestriction as kubeadm (and `pyk8s up`) enables it; upstream's default set leaves it out.
    server = APIServerProcess(
        extra_args=("--enable-bootstrap-token-auth", "--enable-admission-plugins=NodeRestriction")
    ).start()
    cm: ComponentProcess | None = None
    try:
        expires = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
        objects = [token_secret(TOKEN_ID, TOKEN_SECRET, expires), *NODE_BOOTSTRAP_BINDINGS]
        server.apply(*objects)
        pki = server.data_dir / "pki"
        config = server.dir / "bootstrap-kubelet.conf"
        ca = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
        config.write_bytes(bootstrap_kubeconfig(server.url, ca, f"{TOKEN_ID}.{TOKEN_SECRET}"))
        cm = ComponentProcess(
            "controller-manager", server.kubeconfig, "--controllers", "csrapproving,csrsigning",
            "--use-service-account-credentials=true", "--cluster-signing-cert-file", str(pki / "ca.crt"),
            "--cluster-signing-key-file", str(pki / "ca.key"), log_dir=server.dir,
        ).start()  # fmt: skip
        yield server, cm, config
    finally:
        if cm is not None:
            cm.stop()
        server.cleanup()


def start_nodes(server: APIServerProcess, config: Path, cert_dir: Path) -> ComponentProcess:
    return ComponentProcess(
        "nodes", server.kubeconfig, "--bootstrap-kubeconfig", str(config), "--cert-dir", str(cert_dir),
        "--count", "2", "--name-prefix", PREFIX, "-v", "1", log_dir=server.dir, secure_port=False,
    ).start()  # fmt: skip


def get_json(server: APIServerProcess, *args: str, kubeconfig: Path | None = None) -> Any:
    extra = ["--kubeconfig", str(kubeconfig)] if kubeconfig else []
    return json.loads(server.kubectl(*extra, *args, "-o", "json", check=True).stdout)


def ready(server: APIServerProcess) -> bool:
    nodes = [n for n in get_json(server, "get", "nodes")["items"] if n["metadata"]["name"].startswith(PREFIX)]
    return len(nodes) == 2 and all(
        any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or ()) for n in nodes
    )


def node_kubeconfig(server: APIServerProcess, cert: Path) -> Path:
    path = cert.parent / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": {"server": server.url,
                                                     "certificate-authority": str(server.ca_file)}}],
        "users": [{"name": "node", "user": {"client-certificate": str(cert), "client-key": str(cert)}}],
        "contexts": [{"name": "node", "context": {"cluster": "cluster", "user": "node"}}], "current-context": "node",
    }))  # fmt: skip
    return path


def patch_as(server: APIServerProcess, cert: Path, path: str, patch: dict[str, Any]) -> tuple[int, Any]:
    """A merge patch sent with the node's certificate (kubectl would read the object first)."""
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    ctx.load_cert_chain(cert)
    req = urllib.request.Request(server.url + path, data=json.dumps(patch).encode(), method="PATCH",
                                 headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def node_csrs(server: APIServerProcess) -> list[dict[str, Any]]:
    items = get_json(server, "get", "csr")["items"]
    return [c for c in items if c["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"]


def test_nodes_bootstrap_their_certificates_and_act_as_themselves(cluster, tmp_path):
    server, _cm, config = cluster
    cert_dir = tmp_path / "pki"
    nodes = start_nodes(server, config, cert_dir)
    try:
        wait_for("2 Ready nodes that bootstrapped", lambda: ready(server), timeout=60)
        # Each asked with the bootstrap token, and was approved and signed by the controllers.
        csrs = node_csrs(server)
        assert len(csrs) == 2
        for csr in csrs:
            assert csr["spec"]["username"] == f"system:bootstrap:{TOKEN_ID}"
            assert "system:bootstrappers:kubeadm:default-node-token" in csr["spec"]["groups"]
            approved = [c for c in csr["status"]["conditions"] if c["type"] == "Approved"]
            assert approved and approved[0]["reason"] == "AutoApproved"
            assert csr["status"]["certificate"]
        cert = cert_dir / f"{PREFIX}0" / "kubelet-client-current.pem"
        assert cert.is_symlink() and stat.S_IMODE(os.stat(cert).st_mode) == 0o600

        # The certificate is the node's identity.
        as_node = node_kubeconfig(server, cert)
        me = get_json(server, "auth", "whoami", kubeconfig=as_node)["status"]["userInfo"]
        assert me["username"] == f"system:node:{PREFIX}0"
        assert "system:nodes" in me["groups"]
        # Its own Lease, renewed by itself.
        lease = get_json(server, "get", "lease", f"{PREFIX}0", "-n", "kube-node-lease")
        assert lease["spec"]["holderIdentity"] == f"{PREFIX}0"

        # Nothing of another node's, nor what no node may read.
        read = server.kubectl("--kubeconfig", str(as_node), "get", "node", f"{PREFIX}1")
        assert read.returncode != 0
        assert f"node '{PREFIX}0' cannot read '{PREFIX}1', only its own Node object" in read.stderr
        code, body = patch_as(server, cert, f"/api/v1/nodes/{PREFIX}1", {"metadata": {"labels": {"x": "y"}}})
        assert code == 403, body
        assert f'node "{PREFIX}0" is not allowed to modify node "{PREFIX}1"' in body["message"]
        secrets = server.kubectl("--kubeconfig", str(as_node), "get", "secrets", "-A")
        assert secrets.returncode != 0 and "Forbidden" in secrets.stderr

        # A pod bound to the node is run by it: its status written as the node.
        pod = {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-idn-1", "namespace": "default"},
            "spec": {"nodeName": f"{PREFIX}1", "containers": [{"name": "c", "image": "busybox"}]},
        }  # fmt: skip
        server.apply(pod)
        wait_for(
            "the pod Running",
            lambda: get_json(server, "get", "pod", "on-idn-1")["status"].get("phase") == "Running",
            timeout=30,
        )
        server.kubectl("delete", "pod", "on-idn-1", "--wait=true", "--timeout=30s", check=True)
    finally:
        nodes.stop()

    # Started again, the nodes use the certificates they have: no new requests.
    nodes = start_nodes(server, config, cert_dir)
    try:
        wait_for("the nodes registered again", lambda: "registered 2 node(s)" in nodes.log_tail(), timeout=60)
        assert len(node_csrs(server)) == 2
    finally:
        nodes.stop()


def test_a_node_whose_bootstrap_token_is_refused_says_so(cluster, tmp_path):
    server, _cm, _config = cluster
    ca = base64.b64encode((server.data_dir / "pki" / "ca.crt").read_bytes()).decode()
    bad = tmp_path / "bad-bootstrap.conf"
    bad.write_bytes(bootstrap_kubeconfig(server.url, ca, "zzzzzz.0123456789abcdef"))
    res = subprocess.run(
        component_command("nodes", "--bootstrap-kubeconfig", str(bad), "--cert-dir", str(tmp_path / "pki"),
                          "--count", "1", "--name-prefix", "refused-"),
        capture_output=True, text=True, timeout=120, env=component_env(),
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert "Error: cannot request a certificate for node refused-0" in res.stderr
    assert "Traceback" not in res.stderr
