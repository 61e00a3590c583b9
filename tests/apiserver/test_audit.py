"""Auditing: the policy's levels and stages as a cluster admin reading the audit log sees them, through kubectl
and raw requests against a real `pyk8s apiserver`; the policy's matching and validation as upstream's; the
log's rotation."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyk8s.apiserver.audit.log_backend import MEGABYTE, RotatingFile
from pyk8s.apiserver.audit.policy import PolicyError, parse_policy
from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.authz import Attributes
from pyk8s.testing.cluster import APIServerProcess

POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: []
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
- level: Request
  resources: [{group: "", resources: ["secrets"]}]
  omitStages: ["RequestReceived"]
- level: Metadata
  resources: [{group: "", resources: ["pods", "pods/log"]}]
- level: Metadata
  omitStages: ["RequestReceived"]
"""


@pytest.fixture(scope="module")
def audited() -> Iterator[tuple[APIServerProcess, Path]]:
    d = Path(tempfile.mkdtemp(prefix="pyk8s-audit-"))
    (d / "policy.yaml").write_text(POLICY)
    log = d / "audit.log"
    server = APIServerProcess(
        extra_args=("--audit-policy-file", str(d / "policy.yaml"), "--audit-log-path", str(log))
    ).start()
    server.create_namespace("audited")
    yield server, log
    server.cleanup()


def events(log: Path, pred: Any = None, wait_for: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The events in the log matching `pred`, once there are at least `wait_for` of them."""
    deadline = time.monotonic() + timeout
    while True:
        found = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        found = [e for e in found if pred is None or pred(e)]
        if len(found) >= wait_for or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def about(resource: str, name: str, verb: str) -> Any:
    def pred(e: dict[str, Any]) -> bool:
        ref = e.get("objectRef") or {}
        return ref.get("resource") == resource and ref.get("name") == name and e["verb"] == verb

    return pred


def test_request_response_level_records_both_bodies_at_both_stages(audited: tuple[APIServerProcess, Path]) -> None:
    server, log = audited
    server.kubectl("create", "configmap", "cm1", "-n", "audited", "--from-literal=k=v", check=True)
    (done,) = events(log, about("configmaps", "cm1", "create"))
    evs = events(log, lambda e: e["auditID"] == done["auditID"], wait_for=2)
    # (the name of a create is known from its body: not yet when the request is received, as upstream)
    assert [e["stage"] for e in evs] == ["RequestReceived", "ResponseComplete"]
    assert "name" not in evs[0]["objectRef"]
    assert done["kind"] == "Event" and done["apiVersion"] == "audit.k8s.io/v1"
    assert done["level"] == "RequestResponse"
    assert done["requestObject"]["data"] == {"k": "v"}
    assert done["responseObject"]["metadata"]["name"] == "cm1"
    assert done["responseObject"]["metadata"]["uid"]
    assert done["responseStatus"] == {"metadata": {}, "code": 201}
    assert done["objectRef"] == {"resource": "configmaps", "namespace": "audited", "name": "cm1", "apiVersion": "v1"}
    assert done["user"]["username"] == "system:admin" or "system:masters" in done["user"]["groups"]
    assert done["userAgent"].startswith("kubectl")
    assert done["sourceIPs"] == ["127.0.0.1"]
    assert done["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert done["requestReceivedTimestamp"] <= done["stageTimestamp"]


def test_request_level_has_no_response_body_and_omitted_stage_is_absent(audited: tuple[APIServerProcess, Path]) -> None:
    server, log = audited
    server.kubectl("create", "secret", "generic", "s1", "-n", "audited", "--from-literal=p=q", check=True)
    evs = events(log, about("secrets", "s1", "create"))
    assert [e["stage"] for e in evs] == ["ResponseComplete"]  # RequestReceived is omitted by its rule
    assert evs[0]["level"] == "Request"
    assert evs[0]["requestObject"]["data"] == {"p": "cQ=="}
    assert "responseObject" not in evs[0]


def test_metadata_level_and_error_status(audited: tuple[APIServerProcess, Path]) -> None:
    server, log = audited
    res = server.kubectl("get", "pod", "nope", "-n", "audited")
    assert res.returncode != 0
    evs = events(log, about("pods", "nope", "get"), wait_for=2)
    assert [e["stage"] for e in evs] == ["RequestReceived", "ResponseComplete"]
    done = evs[1]
    assert done["level"] == "Metadata"
    assert "requestObject" not in done and "responseObject" not in done
    status = done["responseStatus"]
    assert status["code"] == 404 and status["reason"] == "NotFound" and status["status"] == "Failure"
    assert status["message"] == 'pods "nope" not found'


def test_level_none_is_not_audited(audited: tuple[APIServerProcess, Path]) -> None:
    server, log = audited
    status, _, _ = server.raw_request("GET", "/healthz")
    assert status == 200
    server.kubectl("get", "namespaces", check=True)  # a later request, so that the log has caught up
    events(log, lambda e: e["requestURI"] == "/api/v1/namespaces?limit=500")
    assert not events(log, lambda e: e["requestURI"].startswith("/healthz"), wait_for=0, timeout=0)


def test_watch_gets_response_started(audited: tuple[APIServerProcess, Path]) -> None:
    server, log = audited
    status, _, _ = server.raw_request("GET", "/api/v1/namespaces/audited/pods?watch=true&timeoutSeconds=1")
    assert status == 200
    evs = events(log, lambda e: e["verb"] == "watch" and "pods" in e["requestURI"], wait_for=3)
    assert [e["stage"] for e in evs] == ["RequestReceived", "ResponseStarted", "ResponseComplete"]


def test_impersonation_is_recorded(audited: tuple[APIServerProcess, Path]) -> None:
    server, log = audited
    res = server.kubectl("get", "pods", "-n", "audited", "--as=jane", "--as-group=devs")
    assert res.returncode != 0  # jane has no rights under the default policy: audited all the same
    evs = events(log, lambda e: e.get("impersonatedUser", {}).get("username") == "jane"
                 and e["stage"] == "ResponseComplete")  # fmt: skip
    assert evs[0]["impersonatedUser"]["groups"] == ["devs", "system:authenticated"]
    assert evs[0]["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert evs[0]["responseStatus"]["code"] == 403
    assert evs[0]["user"]["username"] != "jane"  # the real user is who asked


def test_failed_authentication_is_audited(audited: tuple[APIServerProcess, Path]) -> None:
    server, log = audited
    import ssl
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"{server.url}/api/v1/namespaces/audited/pods/badtoken",
                                 headers={"Authorization": "Bearer not-a-token"})  # fmt: skip
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, context=ctx, timeout=10)
    assert err.value.code == 401
    evs = events(log, about("pods", "badtoken", "get"))
    assert evs[0]["stage"] == "ResponseStarted"
    assert evs[0]["responseStatus"] == {"metadata": {}, "message": "Authentication failed, attempted: bearer",
                                        "code": 401}  # fmt: skip
    assert evs[0]["user"] == {}


def test_a_bad_policy_stops_the_server_with_upstreams_message(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")
    res = subprocess.run(
        [sys.executable, "-m", "pyk8s", "apiserver", "--data-dir", str(tmp_path / "d"), "--secure-port", "0",
         "--audit-policy-file", str(policy), "--audit-log-path", str(tmp_path / "a.log")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode != 0
    assert 'rules[0].level: Unsupported value: "Loud": supported values: "None", "Metadata", "Request", ' in res.stderr


# -- the policy, as upstream's checker matches -----------------------------------------------------------------

ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))


def res(verb: str, resource: str, sub: str = "", ns: str = "", name: str = "", group: str = "") -> Attributes:
    return Attributes(ALICE, verb, True, ns, group, "v1", resource, sub, name)


def nonres(verb: str, path: str) -> Attributes:
    return Attributes(ALICE, verb, path=path)


def policy_of(*rules: str) -> str:
    return "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n" + "\n".join(rules)


@pytest.mark.parametrize(
    ("rule", "attrs", "level"),
    [
        ("- level: Request", res("get", "pods"), "Request"),
        ("- {level: Request, users: [bob]}", res("get", "pods"), "None"),
        ("- {level: Request, userGroups: [devs]}", res("get", "pods"), "Request"),
        ("- {level: Request, verbs: [list]}", res("get", "pods"), "None"),
        ("- {level: Request, namespaces: ['']}", res("get", "nodes"), "Request"),
        ("- {level: Request, namespaces: ['']}", res("get", "pods", ns="a"), "None"),
        ("- {level: Request, namespaces: [a]}", nonres("get", "/healthz"), "None"),
        ("- {level: Request, resources: [{group: ''}]}", res("get", "pods", "log"), "Request"),
        ("- {level: Request, resources: [{group: apps}]}", res("get", "pods"), "None"),
        ("- {level: Request, resources: [{resources: [pods]}]}", res("get", "pods", "log"), "None"),
        ("- {level: Request, resources: [{resources: [pods/log]}]}", res("get", "pods", "log"), "Request"),
        ("- {level: Request, resources: [{resources: ['*/status']}]}", res("update", "nodes", "status"), "Request"),
        ("- {level: Request, resources: [{resources: ['*/status']}]}", res("update", "nodes"), "None"),
        ("- {level: Request, resources: [{resources: ['pods/*']}]}", res("get", "pods", "exec"), "Request"),
        ("- {level: Request, resources: [{resources: ['pods/*']}]}", res("get", "pods"), "Request"),
        ("- {level: Request, resources: [{resources: ['*']}]}", res("get", "pods", "exec"), "Request"),
        ("- {level: Request, resources: [{resources: [pods], resourceNames: [x]}]}", res("get", "pods", name="x"),
         "Request"),
        ("- {level: Request, resources: [{resources: [pods], resourceNames: [x]}]}", res("get", "pods", name="y"),
         "None"),
        ("- {level: Request, nonResourceURLs: ['/api*']}", nonres("get", "/apis/apps"), "Request"),
        ("- {level: Request, nonResourceURLs: ['/api']}", nonres("get", "/apis"), "None"),
        ("- {level: Request, nonResourceURLs: ['*']}", res("get", "pods"), "None"),
        ("- {level: Metadata, verbs: [get]}\n- level: RequestResponse", res("list", "pods"), "RequestResponse"),
    ],
)  # fmt: skip
def test_policy_matching(rule: str, attrs: Attributes, level: str) -> None:
    assert parse_policy(policy_of(rule)).evaluate(attrs).level == level


def test_omit_stages_are_the_union_of_policy_and_rule() -> None:
    p = parse_policy("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Panic]\n"
                     "rules:\n- {level: Metadata, omitStages: [RequestReceived], omitManagedFields: true}")  # fmt: skip
    cfg = p.evaluate(res("get", "pods"))
    assert cfg.omit_stages == {"Panic", "RequestReceived"} and cfg.omit_managed_fields


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (policy_of(), "loaded illegal policy with 0 rules"),
        ("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]",
         "unknown group version field audit.k8s.io/v1beta1, Kind=Policy in policy"),
        (policy_of("- {}"), "rules[0].level: Required value"),
        (policy_of("- {level: Metadata, nonResourceURLs: [healthz]}"),
         "rules[0].nonResourceURLs[0]: Invalid value: \"healthz\": non-resource URL rules must begin with a '/' "
         "character"),
        (policy_of("- {level: Metadata, nonResourceURLs: ['/a*b']}"),
         "rules[0].nonResourceURLs[0]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final "
         "character of the rule"),
        (policy_of("- {level: Metadata, nonResourceURLs: ['/a'], namespaces: [x]}"),
         'rules[0].nonResourceURLs: Invalid value: ["/a"]: rules cannot apply to both regular resources and '
         "non-resource URLs"),
        (policy_of("- {level: Metadata, omitStages: [Later]}"),
         'rules[0].omitStages[0]: Invalid value: "Later": allowed stages are '
         "RequestReceived,ResponseStarted,ResponseComplete,Panic"),
        (policy_of("- {level: Metadata, resources: [{resourceNames: [x]}]}"),
         'rules[0].resources.resourceNames: Invalid value: ["x"]: using resourceNames requires at least one '
         "resource"),
    ],
)  # fmt: skip
def test_policy_validation(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as err:
        parse_policy(text)
    assert str(err.value) == message


def test_rotation_keeps_backups_and_compresses(tmp_path: Path) -> None:
    f = RotatingFile(str(tmp_path / "audit.log"), max_size_mb=1, max_backups=2, max_age_days=0, compress=True)
    line = b"x" * 1023 + b"\n"
    for _ in range(4):  # four files' worth: three rotations, two backups kept
        for _ in range(MEGABYTE // len(line)):
            f.write(line)
        time.sleep(0.002)  # backups are named to the millisecond
    f.write(line)
    f.close()
    backups = sorted(p.name for p in tmp_path.iterdir() if p.name != "audit.log")
    assert len(backups) == 2 and all(b.startswith("audit-") and b.endswith(".log.gz") for b in backups)
    assert gzip.decompress((tmp_path / backups[0]).read_bytes()) == line * (MEGABYTE // len(line))
    assert (tmp_path / "audit.log").read_bytes() == line
