"""kubeconfig loading and merging, the in-cluster configuration, and clients built from each reaching a real
API server."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from pyk8s.client.kubeconfig import ConfigError, in_cluster_config, load_config, load_kubeconfig
from pyk8s.client.rest import RESTClient


def write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def kubeconfig(
    cluster: dict, user: dict, *, name: str = "c", namespace: str | None = None, current: bool = True
) -> dict:
    ctx = {"cluster": name, "user": name}
    if namespace:
        ctx["namespace"] = namespace
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": ctx}],
    }
    if current:
        doc["current-context"] = name
    return doc


def test_merge_first_file_wins(tmp_path):
    a = write(tmp_path / "a", kubeconfig({"server": "https://a:6443"}, {"token": "ta"}, name="shared", namespace="na"))
    b_doc = kubeconfig({"server": "https://b:6443"}, {"token": "tb"}, name="shared")
    b_doc["clusters"].append({"name": "only-b", "cluster": {"server": "https://ob:6443"}})
    b_doc["contexts"].append({"name": "only-b", "context": {"cluster": "only-b", "user": "shared"}})
    b_doc["current-context"] = "only-b"
    b = write(tmp_path / "b", b_doc)
    merged = load_kubeconfig([str(a), str(b)])
    # a's current-context and a's definition of "shared" win.
    assert (merged.server, merged.token, merged.namespace) == ("https://a:6443", "ta", "na")
    other = load_kubeconfig([str(a), str(b)], context="only-b")
    assert (other.server, other.token, other.namespace) == ("https://ob:6443", "ta", "default")
    # A file missing from the list is skipped, as clientcmd does.
    assert load_kubeconfig([str(tmp_path / "missing"), str(b)]).server == "https://ob:6443"


def test_kubeconfig_env_list_and_relative_paths(tmp_path, monkeypatch):
    sub = tmp_path / "conf"
    sub.mkdir()
    (sub / "token").write_text("from-file\n")
    write(
        sub / "config", kubeconfig({"server": "https://x:1", "certificate-authority": "ca.crt"}, {"tokenFile": "token"})
    )
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'nothing'}:{sub / 'config'}")
    cfg = load_config()
    assert cfg.ca_file == str(sub / "ca.crt")
    assert cfg.bearer_token() == "from-file"
    assert cfg.auth_headers() == {"Authorization": "Bearer from-file"}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (kubeconfig({"server": "https://x"}, {}, current=False), "no context chosen"),
        ({"current-context": "ghost", "contexts": []}, "context 'ghost' does not exist"),
        (kubeconfig({}, {}), "has no server"),
        (
            kubeconfig(
                {"server": "https://x", "insecure-skip-tls-verify": True, "certificate-authority-data": "eA=="}, {}
            ),
            "insecure flag",
        ),
        (kubeconfig({"server": "https://x", "certificate-authority-data": "not base64!"}, {}), "not valid base64"),
        (kubeconfig({"server": "https://x"}, {"exec": {"command": "aws"}}), "not supported"),
    ],
)
def test_bad_kubeconfigs_say_what_is_wrong(tmp_path, doc, message):
    path = write(tmp_path / "config", doc)
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(str(path)).ssl_context()


def test_plain_http_sends_no_credentials(tmp_path):
    cfg = load_kubeconfig(
        str(write(tmp_path / "c", kubeconfig({"server": "http://127.0.0.1:8080"}, {"token": "secret"})))
    )
    assert cfg.ssl_context() is None
    assert "Authorization" not in cfg.auth_headers()


async def test_inline_ca_data_and_in_cluster_reach_the_server(apiserver, tmp_path):
    ca = apiserver.ca_file.read_bytes()
    path = write(
        tmp_path / "c",
        kubeconfig(
            {"server": apiserver.url, "certificate-authority-data": base64.b64encode(ca).decode()},
            {"token": apiserver.token},
        ),
    )
    async with RESTClient(load_kubeconfig(str(path))) as c:
        assert (await c.get("namespaces", "default"))["metadata"]["name"] == "default"

    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text(apiserver.token)
    (sa / "ca.crt").write_bytes(ca)
    (sa / "namespace").write_text("kube-system")
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(apiserver.port)}
    cfg = in_cluster_config(sa, env)
    assert cfg.namespace == "kube-system"
    async with RESTClient(cfg) as c:
        assert (await c.server_version())["minor"] == "32"


def test_in_cluster_needs_its_environment(tmp_path):
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster_config(tmp_path, {})
