"""`--admission-control-config-file`: an API server started with an AdmissionConfiguration applies PodSecurity's
default levels to namespaces without labels and honours its exemptions (namespace, user, runtime class),
refuses pods that consume a limitedResource no quota covers, and reads a webhook plugin's kubeconfig file. A bad
file keeps the server from starting with upstream's message, whatever is wrong with it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyk8s.apiserver.admission.config import ConfigError, load_plugin_configs
from pyk8s.apiserver.admission.plugins import AdmissionOptions
from pyk8s.supervisor import component_command, component_env
from pyk8s.testing.cluster import APIServerProcess

KUBECONFIG = {"apiVersion": "v1", "kind": "Config", "users": [{"name": "*.webhooks.svc", "user": {"token": "t"}}],
              "clusters": [], "contexts": []}  # fmt: skip


def admission_configuration(tmp: Path) -> Path:
    """PodSecurity inline, ResourceQuota in a file of its own beside it (a relative path), the validating
    webhook plugin's kubeconfig file."""
    (tmp / "webhooks.kubeconfig").write_text(yaml.safe_dump(KUBECONFIG))
    (tmp / "quota.yaml").write_text(yaml.safe_dump({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "ResourceQuotaConfiguration",
        "limitedResources": [{"resource": "pods", "matchContains": ["cpu"]}],
    }))  # fmt: skip
    config = {
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
        "plugins": [
            {"name": "PodSecurity", "configuration": {
                "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
                "defaults": {"enforce": "baseline", "warn": "restricted"},
                "exemptions": {"namespaces": ["free"], "usernames": ["ci-bot"], "runtimeClasses": ["kata"]}}},
            {"name": "ResourceQuota", "path": "quota.yaml"},
            {"name": "ValidatingAdmissionWebhook", "configuration": {
                "apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
                "kubeConfigFile": str(tmp / "webhooks.kubeconfig")}},
        ],
    }  # fmt: skip
    path = tmp / "admission.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServerProcess]:
    path = admission_configuration(tmp_path_factory.mktemp("admission"))
    proc = APIServerProcess(extra_args=("--admission-control-config-file", str(path))).start()
    for ns in ("plain", "free", "quota"):
        proc.create_namespace(ns)
    yield proc
    proc.cleanup()


def pod(name: str, ns: str, **spec: Any) -> str:
    container: dict[str, Any] = {"name": "c", "image": "nginx", **spec.pop("container", {})}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                       "spec": {"containers": [container], **spec}})  # fmt: skip


PRIVILEGED = {"securityContext": {"privileged": True}}


def test_pod_security_defaults_apply_to_an_unlabelled_namespace(server: APIServerProcess) -> None:
    res = server.kubectl("create", "-f", "-", input=pod("priv", "plain", container=PRIVILEGED))
    assert res.returncode != 0
    assert res.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "priv" is forbidden: violates PodSecurity '
        '"baseline:latest": privileged (container "c" must not set securityContext.privileged=true)'
    )
    # baseline admits a plain pod, and the restricted warn level says what it would not admit
    res = server.kubectl("create", "-f", "-", input=pod("plain", "plain"))
    assert res.returncode == 0, res.stderr
    assert 'Warning: would violate PodSecurity "restricted:latest"' in res.stderr


def test_pod_security_exemptions(server: APIServerProcess) -> None:
    # an exempt namespace
    res = server.kubectl("create", "-f", "-", input=pod("priv", "free", container=PRIVILEGED))
    assert res.returncode == 0, res.stderr
    # an exempt user (here by impersonation, in a group that may create pods)
    res = server.kubectl("create", "-f", "-", "--as=ci-bot", "--as-group=system:masters",
                         input=pod("by-ci", "plain", container=PRIVILEGED))  # fmt: skip
    assert res.returncode == 0, res.stderr
    # an exempt runtime class
    rc = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"}, "handler": "kata"}
    server.kubectl("create", "-f", "-", input=json.dumps(rc), check=True)
    res = server.kubectl("create", "-f", "-", input=pod("in-kata", "plain", container=PRIVILEGED,
                                                        runtimeClassName="kata"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    # a label still sets a namespace's own level
    server.kubectl("label", "namespace", "plain", "pod-security.kubernetes.io/enforce=privileged", check=True)
    res = server.kubectl("create", "-f", "-", input=pod("priv-labelled", "plain", container=PRIVILEGED))
    assert res.returncode == 0, res.stderr


def test_limited_resources_need_a_covering_quota(server: APIServerProcess) -> None:
    cpu = {"resources": {"requests": {"cpu": "100m"}}}
    res = server.kubectl("create", "-f", "-", input=pod("hungry", "quota", container=cpu))
    assert res.returncode != 0
    assert res.stderr.strip().endswith('pods "hungry" is forbidden: insufficient quota to consume: cpu,requests.cpu')
    # a pod that asks for no cpu needs no quota
    assert server.kubectl("create", "-f", "-", input=pod("light", "quota")).returncode == 0
    # a quota that covers cpu (its status as the quota controller would write it) lets the pod in
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "cpu", "namespace": "quota"},
             "spec": {"hard": {"requests.cpu": "1", "cpu": "1"}}}  # fmt: skip
    server.kubectl("create", "-f", "-", input=json.dumps(quota), check=True)
    status = {"status": {"hard": {"requests.cpu": "1", "cpu": "1"}, "used": {"requests.cpu": "0", "cpu": "0"}}}
    server.kubectl("patch", "resourcequota", "cpu", "-n", "quota", "--subresource=status", "--type=merge",
                   "-p", json.dumps(status), check=True)  # fmt: skip
    res = server.kubectl("create", "-f", "-", input=pod("hungry", "quota", container=cpu))
    assert res.returncode == 0, res.stderr


def test_the_webhook_plugins_kubeconfig_is_read(tmp_path: Path) -> None:
    configs = load_plugin_configs(str(admission_configuration(tmp_path)), AdmissionOptions().enabled())
    webhook = configs.webhooks["ValidatingAdmissionWebhook"]
    assert webhook.kubeconfig_file == str(tmp_path / "webhooks.kubeconfig")
    assert webhook.users == {"*.webhooks.svc": {"token": "t"}}
    assert "MutatingAdmissionWebhook" not in configs.webhooks


def _document(plugins: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration", "plugins": plugins}


def _pod_security(**spec: Any) -> dict[str, Any]:
    return {"name": "PodSecurity", "configuration": {
        "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration", **spec}}  # fmt: skip


BAD = [
    ({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "Nope"},
     'failed to read plugin config: no kind "Nope" is registered for version "apiserver.config.k8s.io/v1"'),
    ({**_document([]), "extra": 1}, 'failed to read plugin config: strict decoding error: unknown field "extra"'),
    (_document([_pod_security(defaults={"enforce": "strict"})]),
     'failed to initialize admission plugin "PodSecurity": PodSecurity configuration error: enforce: must be one '
     "of privileged, baseline, restricted"),
    (_document([_pod_security(exemptions={"usernames": ["ci", "ci"]})]),
     'failed to initialize admission plugin "PodSecurity": PodSecurity invalid: exemptions.usernames[1]: Duplicate '
     'value: "ci"'),
    (_document([{"name": "ResourceQuota", "configuration": {
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "ResourceQuotaConfiguration",
        "limitedResources": [{"matchContains": ["cpu"]}]}}]),
     'couldn\'t init admission plugin "ResourceQuota": limitedResources[0].apiGroupResource: Required value'),
    (_document([{"name": "MutatingAdmissionWebhook", "configuration": {
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": "relative.kubeconfig"}}]),
     'couldn\'t init admission plugin "MutatingAdmissionWebhook": kubeConfigFile: Invalid value: '
     '"relative.kubeconfig": must be an absolute file path'),
]  # fmt: skip


@pytest.mark.parametrize(("document", "message"), BAD)
def test_a_bad_configuration_is_refused_with_upstreams_message(
    tmp_path: Path, document: dict[str, Any], message: str
) -> None:
    path = tmp_path / "admission.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as err:
        load_plugin_configs(str(path), AdmissionOptions().enabled())
    assert str(err.value) == message


def test_the_api_server_refuses_to_start_with_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "admission.yaml"
    path.write_text(yaml.safe_dump(_document([_pod_security(defaults={"audit-version": "v2.0"})])))
    args = ["--data-dir", str(tmp_path / "data"), "--secure-port", "0", "--admission-control-config-file", str(path)]
    res = subprocess.run(component_command("apiserver", *args), capture_output=True, text=True, timeout=60,
                         env=component_env())  # fmt: skip
    assert res.returncode != 0
    assert (
        'failed to initialize admission plugin "PodSecurity": PodSecurity configuration error: audit-version: must '
        'be "latest" or "v1.x"'
    ) in res.stderr
    res = subprocess.run(component_command("apiserver", *args[:-1], str(tmp_path / "missing.yaml")),
                         capture_output=True, text=True, timeout=60, env=component_env())  # fmt: skip
    assert res.returncode != 0
    assert (
        f'failed to read plugin config: unable to read admission control configuration from "{tmp_path}/missing.yaml" '
        f"[open {tmp_path}/missing.yaml: no such file or directory]"
    ) in res.stderr
    assert not (tmp_path / "data").exists()  # refused before anything was written
