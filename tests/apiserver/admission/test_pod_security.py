"""PodSecurity through a real API server, kubectl and plain HTTP: the namespace labels choose the level, the
enforce level refuses pods with upstream's message, audit and warn only annotate and warn, pod controllers
get warnings, version labels pin the checks, label changes warn about existing pods, and bad labels are 422."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess

ENFORCE = "pod-security.kubernetes.io/enforce"

NGINX_RESTRICTED = (
    'allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), '
    'unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")'
)
RESTRICTED_SC = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


AUDIT_POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: ["pods"]}, {group: "apps", resources: ["deployments"]}]
  omitStages: ["RequestReceived"]
"""


@pytest.fixture(scope="module")
def audit_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="pyk8s-psa-"))
    (d / "policy.yaml").write_text(AUDIT_POLICY)
    return d


@pytest.fixture(scope="module")
def server(audit_dir: Path) -> Iterator[APIServerProcess]:
    audit = ("--audit-policy-file", str(audit_dir / "policy.yaml"), "--audit-log-path", str(audit_dir / "audit.log"))
    proc = APIServerProcess(extra_args=audit).start()
    yield proc
    proc.cleanup()


def audit_annotations(audit_dir: Path, namespace: str, code: int, timeout: float = 10.0) -> dict[str, str]:
    """The annotations of the (one) create in `namespace` answered with `code`."""
    deadline = time.monotonic() + timeout
    while True:
        for line in (audit_dir / "audit.log").read_text().splitlines():
            e = json.loads(line)
            ref, status = e.get("objectRef") or {}, e.get("responseStatus") or {}
            if e["verb"] == "create" and ref.get("namespace") == namespace and status.get("code") == code:
                return {k: v for k, v in (e.get("annotations") or {}).items() if k.startswith("pod-security")}
        assert time.monotonic() < deadline, f"no audit event for a create in {namespace}"
        time.sleep(0.1)


def namespace(server: APIServerProcess, name: str, **labels: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    status, resp = server.request("POST", "/api/v1/namespaces", body)
    assert status == 201, resp


def psa(**modes: str) -> dict[str, str]:
    """{"enforce": "restricted", "warn_version": "v1.25"} -> the pod-security labels."""
    return {f"pod-security.kubernetes.io/{k.replace('_', '-')}": v for k, v in modes.items()}


def pod(name: str, security_context: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "nginx", "image": "nginx"}
    if security_context is not None:
        container["securityContext"] = security_context
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def create(server: APIServerProcess, ns: str, obj: dict[str, Any], dry_run: bool = False) -> tuple[int, Any, list[str]]:
    """POST the object; (status, body, the Warning header texts)."""
    plural = obj["kind"].lower() + "s"
    base = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
    path = f"{base}/namespaces/{ns}/{plural}" + ("?dryRun=All" if dry_run else "")
    headers = {"Content-Type": "application/json"}
    status, resp_headers, raw = server.raw_request("POST", path, json.dumps(obj).encode(), headers)
    # (the test client keeps one Warning header: tests that expect several read kubectl's output)
    warnings = [v for k, v in resp_headers.items() if k.lower() == "warning"]
    return status, json.loads(raw), [w.removeprefix('299 - "').removesuffix('"').replace('\\"', '"') for w in warnings]


def test_restricted_refuses_a_privileged_pod_through_kubectl(server: APIServerProcess) -> None:
    namespace(server, "psa-restricted", **psa(enforce="restricted"))
    res = server.kubectl("apply", "-n", "psa-restricted", "-f", "-", input=json.dumps(pod("nginx")))
    assert res.returncode == 1
    assert res.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "nginx" is forbidden: '
        f'violates PodSecurity "restricted:latest": {NGINX_RESTRICTED}'
    )
    privileged = pod("priv", {"privileged": True}, hostNetwork=True)
    status, body, warnings = create(server, "psa-restricted", privileged)
    assert status == 403 and warnings == []
    assert body["reason"] == "Forbidden"
    assert body["details"] == {"name": "priv", "kind": "pods"}
    assert body["message"] == (
        'pods "priv" is forbidden: violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), '
        'privileged (container "nginx" must not set securityContext.privileged=true), '
        + NGINX_RESTRICTED.replace('"nginx"', '"nginx"')
    )
    # A restricted pod goes in; so does a dry run of one, while a dry run of a bad one is refused too.
    assert create(server, "psa-restricted", pod("ok", RESTRICTED_SC))[0] == 201
    assert create(server, "psa-restricted", pod("dry"), dry_run=True)[0] == 403
    # An ephemeral container is held to the same level (what `kubectl debug` adds).
    debugger = {"name": "debugger", "image": "busybox", "securityContext": {**RESTRICTED_SC, "privileged": True}}
    status, body = server.request(
        "PATCH",
        "/api/v1/namespaces/psa-restricted/pods/ok/ephemeralcontainers",
        {"spec": {"ephemeralContainers": [debugger]}},
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 403
    assert body["message"] == (
        'pods "ok" is forbidden: violates PodSecurity "restricted:latest": '
        'privileged (container "debugger" must not set securityContext.privileged=true)'
    )


def test_baseline_allows_what_restricted_refuses(server: APIServerProcess) -> None:
    namespace(server, "psa-baseline", **psa(enforce="baseline"))
    status, body, warnings = create(server, "psa-baseline", pod("nginx"))
    assert status == 201 and warnings == [], body
    status, body, _ = create(
        server, "psa-baseline", pod("priv", {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}})
    )
    assert status == 403
    assert body["message"] == (
        'pods "priv" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities '
        '(container "nginx" must not include "SYS_ADMIN" in securityContext.capabilities.add), '
        'privileged (container "nginx" must not set securityContext.privileged=true)'
    )
    # Without labels a namespace is privileged: anything goes.
    namespace(server, "psa-none")
    assert create(server, "psa-none", pod("priv", {"privileged": True}, hostPID=True))[0] == 201


def test_enforce_version_pins_the_checks(server: APIServerProcess) -> None:
    namespace(server, "psa-v121", **psa(enforce="restricted", enforce_version="v1.21"))
    status, body, _ = create(server, "psa-v121", pod("nginx"))
    assert status == 403
    assert body["message"] == (
        'pods "nginx" is forbidden: violates PodSecurity "restricted:v1.21": '
        + NGINX_RESTRICTED.replace(
            'unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), ', ""
        )
    )
    # runAsUser=0 is refused from v1.23 on only.
    root = pod("root", {**RESTRICTED_SC, "runAsUser": 0})
    assert create(server, "psa-v121", root)[0] == 201
    namespace(server, "psa-v123", **psa(enforce="restricted", enforce_version="v1.23"))
    status, body, _ = create(server, "psa-v123", root)
    assert status == 403
    assert body["message"].endswith(': runAsUser=0 (container "nginx" must not set runAsUser=0)')


def test_warn_and_audit_labels_warn_but_do_not_refuse(server: APIServerProcess) -> None:
    namespace(server, "psa-warn", **psa(warn="restricted", audit="restricted"))
    status, _, warnings = create(server, "psa-warn", pod("nginx"))
    assert status == 201
    assert warnings == [f'would violate PodSecurity "restricted:latest": {NGINX_RESTRICTED}']
    res = server.kubectl("run", "web", "-n", "psa-warn", "--image=nginx")
    assert res.returncode == 0, res.stderr
    assert (
        'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "web"'
        in res.stderr
    )
    # audit alone adds no warning; warn pinned to a version says so.
    namespace(server, "psa-audit", **psa(audit="restricted"))
    status, _, warnings = create(server, "psa-audit", pod("nginx"))
    assert (status, warnings) == (201, [])
    namespace(server, "psa-warn-v", **psa(enforce="baseline", warn="restricted", warn_version="v1.18"))
    status, _, warnings = create(server, "psa-warn-v", pod("nginx"))
    assert status == 201
    assert warnings == [
        'would violate PodSecurity "restricted:v1.18": allowPrivilegeEscalation != false (container "nginx" must set '
        'securityContext.allowPrivilegeEscalation=false), runAsNonRoot != true (pod or container "nginx" must set '
        "securityContext.runAsNonRoot=true)"
    ]


def test_deployment_in_a_restricted_namespace_gets_a_warning(server: APIServerProcess) -> None:
    namespace(server, "psa-deploy", **psa(enforce="restricted"))
    res = server.kubectl("create", "deployment", "web", "-n", "psa-deploy", "--image=nginx")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "deployment.apps/web created"
    assert res.stderr.strip() == (
        'Warning: would violate PodSecurity "restricted:latest": '
        + NGINX_RESTRICTED.replace('container "nginx"', 'container "nginx"').replace('"nginx"', '"nginx"')
    )
    job = {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "j", "image": "busybox", "securityContext": RESTRICTED_SC}],
        }}}}},
    }  # fmt: skip
    status, body, warnings = create(server, "psa-deploy", job)
    assert status == 201 and warnings == [], body


def test_label_change_warns_about_existing_pods(server: APIServerProcess) -> None:
    namespace(server, "psa-relabel")
    for name in ("p2", "p1", "p3"):
        assert create(server, "psa-relabel", pod(name, {"privileged": True}))[0] == 201
    assert create(server, "psa-relabel", pod("h", hostIPC=True))[0] == 201
    assert create(server, "psa-relabel", pod("fine"))[0] == 201
    res = server.kubectl("label", "namespace", "psa-relabel", f"{ENFORCE}=baseline")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        'Warning: existing pods in namespace "psa-relabel" violate the new PodSecurity enforce level "baseline:latest"',
        "Warning: h: host namespaces",
        "Warning: p1 (and 2 other pods): privileged",
    ]
    # Relaxing it again says nothing.
    res = server.kubectl("label", "--overwrite", "namespace", "psa-relabel", f"{ENFORCE}=privileged")
    assert res.returncode == 0 and res.stderr == ""


def test_pod_updates_that_change_nothing_that_runs_are_allowed(server: APIServerProcess) -> None:
    namespace(server, "psa-update")
    assert create(server, "psa-update", pod("old", {"privileged": True}))[0] == 201
    server.kubectl("label", "namespace", "psa-update", f"{ENFORCE}=baseline", check=True)
    deadline = time.monotonic() + 10
    while create(server, "psa-update", pod("probe", {"privileged": True}), dry_run=True)[0] != 403:
        assert time.monotonic() < deadline, "the new label never took effect"
        time.sleep(0.1)
    res = server.kubectl("label", "pod", "old", "-n", "psa-update", "x=y")
    assert res.returncode == 0, res.stderr
    res = server.kubectl("set", "image", "pod/old", "-n", "psa-update", "nginx=nginx:2")
    assert res.returncode == 1
    assert 'pods "old" is forbidden: violates PodSecurity "baseline:latest": privileged' in res.stderr


def test_bad_labels_are_invalid(server: APIServerProcess) -> None:
    res = server.kubectl("create", "namespace", "psa-bad", "--dry-run=client", "-o", "json")
    manifest = json.loads(res.stdout)
    manifest["metadata"]["labels"] = {ENFORCE: "strict"}
    res = server.kubectl("create", "-f", "-", input=json.dumps(manifest))
    assert res.returncode == 1
    assert res.stderr.strip() == (
        'The Namespace "psa-bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted'
    )
    namespace(server, "psa-good")
    res = server.kubectl("label", "namespace", "psa-good", "pod-security.kubernetes.io/warn-version=1.25")
    assert res.returncode == 1
    assert res.stderr.strip() == (
        'The Namespace "psa-good" is invalid: metadata.labels[pod-security.kubernetes.io/warn-version]: '
        'Invalid value: "1.25": must be "latest" or "v1.x"'
    )


def test_audit_annotations(server: APIServerProcess, audit_dir: Path) -> None:
    namespace(server, "psa-audited", **psa(enforce="baseline", audit="restricted"))
    assert create(server, "psa-audited", pod("nginx"))[0] == 201
    assert audit_annotations(audit_dir, "psa-audited", 201) == {
        "pod-security.kubernetes.io/enforce-policy": "baseline:latest",
        "pod-security.kubernetes.io/audit-violations": f'would violate PodSecurity "restricted:latest": {NGINX_RESTRICTED}',
    }
    # A fully privileged namespace records the privileged policy; a refused pod records what enforced it.
    namespace(server, "psa-audited-none")
    assert create(server, "psa-audited-none", pod("nginx"))[0] == 201
    assert audit_annotations(audit_dir, "psa-audited-none", 201) == {
        "pod-security.kubernetes.io/enforce-policy": "privileged:latest"
    }
    assert create(server, "psa-audited", pod("priv", {"privileged": True}))[0] == 403
    assert audit_annotations(audit_dir, "psa-audited", 403)["pod-security.kubernetes.io/enforce-policy"] == (
        "baseline:latest"
    )
