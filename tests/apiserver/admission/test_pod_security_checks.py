"""The Pod Security Standards checks without a server: which pods each level refuses and with what words
(upstream's messages, from pod-security-admission/policy), how versions pick the checks, how namespace labels
parse, and that the levels nest (what restricted allows, baseline allows; what baseline allows, privileged
allows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pyk8s.api import errors
from pyk8s.api.meta import json_copy
from pyk8s.api.resources import TABLE as TABLE_OF_RESOURCES
from pyk8s.apiserver.admission import Attributes
from pyk8s.apiserver.admission.podsecurity import PodSecurity, PodSecurityConfiguration
from pyk8s.apiserver.admission.podsecurity.api import (
    BASELINE,
    PRIVILEGED,
    RESTRICTED,
    LevelVersion,
    Policy,
    Version,
    parse_version,
    policy_to_evaluate,
)
from pyk8s.apiserver.admission.podsecurity.checks import aggregate_check_results
from pyk8s.apiserver.admission.podsecurity.evaluator import Evaluator
from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.warning import begin_request, take_warnings

EVALUATOR = Evaluator()
LATEST = Version.LATEST

RESTRICTED_SC = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def detail(level: str, spec: dict[str, Any], version: Version = LATEST, meta: dict[str, Any] | None = None) -> str:
    """What a refusal at level:version says after `violates PodSecurity "...": ` ("" when allowed)."""
    return aggregate_check_results(
        EVALUATOR.evaluate_pod(LevelVersion(level, version), meta or {}, spec)
    ).forbidden_detail()


def pod(**container: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "pause", **container}]}


NGINX_RESTRICTED = (
    'allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), '
    'unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")'
)

# (pod spec, pod metadata, what baseline says, what restricted says) at latest.
TABLE: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = [
    ("plain", {"containers": [{"name": "nginx", "image": "nginx"}]}, {}, "", NGINX_RESTRICTED),
    ("restricted", pod(securityContext=RESTRICTED_SC), {}, "", ""),
    (
        "pod-level restricted",
        {
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "Localhost", "localhostProfile": "p"}},
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                    },
                },
            ],
        },
        {},
        "",
        "",
    ),
    (
        "privileged",
        pod(securityContext={**RESTRICTED_SC, "privileged": True}),
        {},
        'privileged (container "c" must not set securityContext.privileged=true)',
        'privileged (container "c" must not set securityContext.privileged=true)',
    ),
    (
        "host namespaces",
        {**pod(securityContext=RESTRICTED_SC), "hostNetwork": True, "hostPID": True, "hostIPC": True},
        {},
        "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)",
        "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)",
    ),
    (
        "host ports",
        {
            "containers": [
                {
                    "name": "a",
                    "image": "x",
                    "securityContext": RESTRICTED_SC,
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                },
                {
                    "name": "b",
                    "image": "x",
                    "securityContext": RESTRICTED_SC,
                    "ports": [{"containerPort": 81, "hostPort": 9090}, {"containerPort": 82}],
                },
            ]
        },
        {},
        'hostPort (containers "a", "b" use hostPorts 8080, 9090)',
        'hostPort (containers "a", "b" use hostPorts 8080, 9090)',
    ),
    (
        "capabilities",
        pod(securityContext={**RESTRICTED_SC, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN", "CHOWN"]}}),
        {},
        'non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)',
        'unrestricted capabilities (container "c" must not include "CHOWN", "SYS_ADMIN" in '
        "securityContext.capabilities.add)",
    ),
    (
        "default capability",
        pod(securityContext={**RESTRICTED_SC, "capabilities": {"add": ["CHOWN"]}}),
        {},
        "",
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]; container "c" '
        'must not include "CHOWN" in securityContext.capabilities.add)',
    ),
    (
        "hostPath",
        {
            **pod(securityContext=RESTRICTED_SC),
            "volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "e", "emptyDir": {}}],
        },
        {},
        'hostPath volumes (volume "h")',
        'restricted volume types (volume "h" uses restricted volume type "hostPath")',
    ),
    (
        "nfs",
        {
            **pod(securityContext=RESTRICTED_SC),
            "volumes": [
                {"name": "n", "nfs": {"server": "s", "path": "/"}},
                {"name": "g", "gitRepo": {"repository": "r"}},
            ],
        },
        {},
        "",
        'restricted volume types (volumes "n", "g" use restricted volume types "gitRepo", "nfs")',
    ),
    (
        "sysctls",
        {
            **pod(securityContext=RESTRICTED_SC),
            "securityContext": {
                "sysctls": [{"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_rmem", "value": "1"}]
            },
        },
        {},
        "forbidden sysctls (kernel.msgmax)",
        "forbidden sysctls (kernel.msgmax)",
    ),
    (
        "procMount",
        pod(securityContext={**RESTRICTED_SC, "procMount": "Unmasked"}),
        {},
        'procMount (container "c" must not set securityContext.procMount to "Unmasked")',
        'procMount (container "c" must not set securityContext.procMount to "Unmasked")',
    ),
    (
        "seLinux",
        {
            **pod(securityContext={**RESTRICTED_SC, "seLinuxOptions": {"type": "spc_t"}}),
            "securityContext": {"seLinuxOptions": {"user": "root", "role": "r"}},
        },
        {},
        'seLinuxOptions (pod and container "c" set forbidden securityContext.seLinuxOptions: type "spc_t"; '
        "user may not be set; role may not be set)",
        'seLinuxOptions (pod and container "c" set forbidden securityContext.seLinuxOptions: type "spc_t"; '
        "user may not be set; role may not be set)",
    ),
    (
        "seccomp unconfined",
        pod(securityContext={**RESTRICTED_SC, "seccompProfile": {"type": "Unconfined"}}),
        {},
        'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")',
        'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")',
    ),
    (
        "apparmor",
        {**pod(securityContext={**RESTRICTED_SC, "appArmorProfile": {"type": "Unconfined"}})},
        {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}},
        'forbidden AppArmor profiles (container "c" and annotation must not set AppArmor profile type to '
        '"Unconfined", "container.apparmor.security.beta.kubernetes.io/c="unconfined"")',
        'forbidden AppArmor profiles (container "c" and annotation must not set AppArmor profile type to '
        '"Unconfined", "container.apparmor.security.beta.kubernetes.io/c="unconfined"")',
    ),
    (
        "hostProcess",
        {**pod(securityContext=RESTRICTED_SC), "securityContext": {"windowsOptions": {"hostProcess": True}}},
        {},
        "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
        "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
    ),
    (
        "root",
        {
            **pod(securityContext={**RESTRICTED_SC, "runAsUser": 0, "runAsNonRoot": False}),
            "securityContext": {"runAsUser": 0},
        },
        {},
        "",
        'runAsNonRoot != true (container "c" must not set securityContext.runAsNonRoot=false), '
        'runAsUser=0 (pod and container "c" must not set runAsUser=0)',
    ),
    (
        "windows",
        {
            "os": {"name": "windows"},
            "securityContext": {"runAsNonRoot": True},
            "containers": [{"name": "w", "image": "x"}],
        },
        {},
        "",
        "",
    ),
]


@pytest.mark.parametrize(("case", "spec", "meta", "baseline", "restricted"), TABLE, ids=[t[0] for t in TABLE])
def test_levels(case: str, spec: dict[str, Any], meta: dict[str, Any], baseline: str, restricted: str) -> None:
    assert detail(PRIVILEGED, spec, meta=meta) == ""
    assert detail(BASELINE, spec, meta=meta) == baseline
    assert detail(RESTRICTED, spec, meta=meta) == restricted


def test_versions_pick_checks() -> None:
    plain = {"containers": [{"name": "nginx", "image": "nginx"}]}
    # capabilities_restricted from v1.22, seccompProfile_restricted from v1.19, allowPrivilegeEscalation from v1.8.
    assert "unrestricted capabilities" not in detail(RESTRICTED, plain, Version(21))
    assert "unrestricted capabilities" in detail(RESTRICTED, plain, Version(22))
    assert "seccompProfile" not in detail(RESTRICTED, plain, Version(18))
    assert detail(RESTRICTED, plain, Version(7)) == (
        'runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true)'
    )
    # Versions past the newest check use the newest set, as latest does.
    assert detail(RESTRICTED, plain, Version(99)) == detail(RESTRICTED, plain) == NGINX_RESTRICTED
    # runAsUser=0 only from v1.23; windows pods exempt from capabilities/seccomp/APE only from v1.25.
    root = pod(securityContext={**RESTRICTED_SC, "runAsUser": 0})
    assert detail(RESTRICTED, root, Version(22)) == ""
    assert detail(RESTRICTED, root, Version(23)).startswith("runAsUser=0")
    windows = {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True}, "containers": [{"name": "w"}]}
    assert detail(RESTRICTED, windows, Version(24)).startswith("allowPrivilegeEscalation != false")
    # The safe sysctls grew: tcp_rmem from v1.32, ip_local_reserved_ports from v1.27.
    rmem = {**pod(), "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"}]}}
    assert detail(BASELINE, rmem, Version(31)) == "forbidden sysctls (net.ipv4.tcp_rmem)"
    assert detail(BASELINE, rmem, Version(32)) == ""
    # container_engine_t from v1.31; before v1.19 the seccomp annotations, after the fields.
    engine = pod(securityContext={"seLinuxOptions": {"type": "container_engine_t"}})
    assert detail(BASELINE, engine, Version(30)).startswith("seLinuxOptions (container")
    assert detail(BASELINE, engine, Version(31)) == ""
    annotated = {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}
    assert detail(BASELINE, pod(), Version(18), annotated) == (
        'seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")'
    )
    assert detail(BASELINE, pod(), Version(19), annotated) == ""


def test_policy_labels() -> None:
    p, errs = policy_to_evaluate({"pod-security.kubernetes.io/enforce": "baseline"})
    assert not errs
    # warn follows a stricter enforce level when it has no label of its own
    assert p == Policy(LevelVersion(BASELINE, LATEST), LevelVersion(PRIVILEGED, LATEST), LevelVersion(BASELINE, LATEST))
    p, errs = policy_to_evaluate(
        {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "v1.24"}
    )
    assert p.enforce == p.warn == LevelVersion(RESTRICTED, Version(24))
    p, errs = policy_to_evaluate({
        "pod-security.kubernetes.io/enforce": "bogus", "pod-security.kubernetes.io/warn": "nope",
        "pod-security.kubernetes.io/audit-version": "1.25",
    })  # fmt: skip
    # a bad enforce level fails closed, bad audit/warn levels fail open
    assert (p.enforce.level, p.warn.level, p.audit.version) == (RESTRICTED, PRIVILEGED, LATEST)
    assert [str(e) for e in errs] == [
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": '
        "must be one of privileged, baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "1.25": must be "latest" or "v1.x"',
        'metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "nope": '
        "must be one of privileged, baseline, restricted",
    ]
    assert parse_version("v1.0") == (Version(0), None)
    assert parse_version("v1.01")[1] is not None
    assert parse_version("v2.1")[1] is not None


# -- the levels nest ---------------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    """A change to a pod: `path` is `pod.<key>...`, `c.<key>...` (every container) or `meta.<key>...`."""
    where, *keys = path.split(".")

    def apply(meta: dict[str, Any], spec: dict[str, Any]) -> None:
        targets = {"pod": [spec], "meta": [meta], "c": spec["containers"]}[where]
        for t in targets:
            for k in keys[:-1]:
                if t.get(k) is None:
                    t[k] = {}
                t = t[k]
            t[keys[-1]] = value

    return apply


# Changes that any level allows, and changes that break some level; a pod is a restricted one with a few applied.
# (No windows pods: upstream's checks count on API validation keeping Linux-only fields off them.)
_CHANGES = [
    _set("c.securityContext.capabilities.add", ["NET_BIND_SERVICE"]),
    _set("c.securityContext.capabilities.add", ["CHOWN"]),
    _set("c.securityContext.capabilities.add", ["SYS_ADMIN"]),
    _set("c.securityContext.capabilities.drop", []),
    _set("c.securityContext.capabilities", None),
    _set("c.securityContext.allowPrivilegeEscalation", None),
    _set("c.securityContext.allowPrivilegeEscalation", True),
    _set("c.securityContext.privileged", False),
    _set("c.securityContext.privileged", True),
    _set("c.securityContext.runAsNonRoot", False),
    _set("c.securityContext.runAsUser", 0),
    _set("pod.securityContext.runAsUser", 1000),
    _set("pod.securityContext.runAsUser", 0),
    _set("c.securityContext.seccompProfile", {"type": "Unconfined"}),
    _set("c.securityContext.seccompProfile", {"type": "Localhost"}),
    _set("pod.securityContext.seccompProfile", {"type": "Unconfined"}),
    _set("c.securityContext.procMount", "Default"),
    _set("c.securityContext.procMount", "Unmasked"),
    _set("c.securityContext.seLinuxOptions", {"type": "container_t"}),
    _set("c.securityContext.seLinuxOptions", {"type": "container_engine_t"}),
    _set("pod.securityContext.seLinuxOptions", {"type": "spc_t", "user": "u"}),
    _set("c.securityContext.appArmorProfile", {"type": "RuntimeDefault"}),
    _set("pod.securityContext.appArmorProfile", {"type": "Unconfined"}),
    _set("c.securityContext.windowsOptions", {"hostProcess": True}),
    _set("pod.securityContext.sysctls", [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]),
    _set("pod.securityContext.sysctls", [{"name": "net.ipv4.tcp_rmem", "value": "1"}]),
    _set("pod.securityContext.sysctls", [{"name": "kernel.msgmax", "value": "1"}]),
    _set("pod.volumes", [{"name": "e", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "s"}}]),
    _set("pod.volumes", [{"name": "h", "hostPath": {"path": "/"}}]),
    _set("pod.volumes", [{"name": "n", "nfs": {"server": "s", "path": "/"}}]),
    _set("pod.hostNetwork", False),
    _set("pod.hostPID", True),
    _set("c.ports", [{"containerPort": 80, "hostPort": 8080}]),
    _set("meta.annotations", {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}),
    _set("meta.annotations", {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}),
]


@st.composite
def _pods(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    names = draw(st.sampled_from([["a"], ["a", "b"]]))
    pod_level = draw(st.booleans())  # runAsNonRoot and seccomp on the pod, else on each container
    per_container = {} if pod_level else {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    spec: dict[str, Any] = {
        "containers": [
            {"name": n, "image": "x", "securityContext": {
                "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, **per_container}}
            for n in names
        ],
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}} if pod_level else {},
    }  # fmt: skip
    meta: dict[str, Any] = {}
    for change in draw(st.lists(st.sampled_from(_CHANGES), max_size=3)):
        change(meta, spec)
    return meta, spec


_version = st.one_of(st.just(LATEST), st.integers(0, 40).map(Version))


@settings(max_examples=500, deadline=None)
@given(_pods(), _version)
def test_levels_nest(pod: tuple[dict[str, Any], dict[str, Any]], version: Version) -> None:
    meta, spec = pod
    allowed = {
        level: aggregate_check_results(EVALUATOR.evaluate_pod(LevelVersion(level, version), meta, spec)).allowed
        for level in (PRIVILEGED, BASELINE, RESTRICTED)
    }
    event(f"restricted allows: {allowed[RESTRICTED]}, baseline allows: {allowed[BASELINE]}")
    assert allowed[PRIVILEGED]
    if allowed[RESTRICTED]:
        assert allowed[BASELINE], detail(BASELINE, spec, version, meta)


# -- the plugin's configuration: exemptions and defaults ---------------------------------------------------


def _attrs(resource: str, obj: dict[str, Any], user: str = "alice", op: str = "CREATE") -> Attributes:
    group, _, plural = resource.rpartition("/")
    r = TABLE_OF_RESOURCES.get(group, "v1", plural)
    assert r is not None
    md = obj.setdefault("metadata", {})
    ns = "" if plural == "namespaces" else md.setdefault("namespace", "team")
    return Attributes(op, r, "", ns, md.get("name", ""), obj, None, UserInfo(user))


async def test_exemptions_and_defaults() -> None:
    namespaces = {"team": {"metadata": {"name": "team", "labels": {}}}}

    async def get_namespace(name: str) -> dict[str, Any] | None:
        return namespaces.get(name)

    config = PodSecurityConfiguration.from_document({
        "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
        "defaults": {"enforce": "baseline", "warn": "restricted", "warn-version": "v1.30"},
        "exemptions": {"usernames": ["ci"], "runtimeClasses": ["kata"], "namespaces": ["infra"]},
    })  # fmt: skip
    plugin = PodSecurity(get_namespace, None, config)
    privileged = {"metadata": {"name": "p"}, **{"spec": pod(securityContext={"privileged": True})}}
    with pytest.raises(errors.StatusError) as err:
        await plugin.validate(_attrs("pods", json_copy(privileged)))
    assert err.value.message.startswith('pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged')
    await plugin.validate(_attrs("pods", json_copy(privileged), user="ci"))
    kata = json_copy(privileged)
    kata["spec"]["runtimeClassName"] = "kata"
    await plugin.validate(_attrs("pods", kata))
    # An exempt namespace's labels are noted as ignored; a label that matches the defaults says nothing.
    begin_request()
    await plugin.validate(
        _attrs("namespaces", {"metadata": {"name": "infra", "labels": psa_labels(enforce="restricted")}})
    )
    await plugin.validate(
        _attrs("namespaces", {"metadata": {"name": "infra", "labels": psa_labels(enforce="baseline")}})
    )
    assert take_warnings() == [
        'namespace "infra" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored'
    ]
    # warn by default at restricted:v1.30 for a baseline pod
    await plugin.validate(_attrs("pods", {"metadata": {"name": "b"}, "spec": pod()}))
    assert take_warnings() == [
        'would violate PodSecurity "restricted:v1.30": allowPrivilegeEscalation != false (container "c" must set '
        'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set '
        'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set '
        'securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set '
        'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
    ]
    with pytest.raises(ValueError, match=r'defaults\.enforce: Invalid value: "strict"'):
        PodSecurityConfiguration.from_document({"defaults": {"enforce": "strict"}})


def psa_labels(**modes: str) -> dict[str, str]:
    return {f"pod-security.kubernetes.io/{k}": v for k, v in modes.items()}
