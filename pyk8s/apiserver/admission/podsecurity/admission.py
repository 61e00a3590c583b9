"""The PodSecurity admission plugin (upstream: pod-security-admission/admission/admission.go, wrapped in-tree by
plugin/pkg/admission/security/podsecurity).

It validates creates and updates of three kinds of object:
- pods: the namespace's enforce level refuses them (403), its audit level annotates the audit event and its
  warn level adds a `Warning` header. An update is looked at only when it changes what runs (the number of
  containers, an image, an ephemeral container); subresources such as status and binding never are.
- objects with a pod template (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
  ReplicationController, PodTemplate): audit and warn only, as their pods are checked when they are made.
- namespaces: the pod-security labels must be valid, and raising the enforce level warns about the existing
  pods that would now be refused.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ....api import errors
from ....api.meta import Object
from ...warning import add_audit_annotation, add_warning
from .. import CREATE, UPDATE, Attributes, reads
from ..errors import new_forbidden
from .api import (
    AUDIT_ANNOTATION_PREFIX,
    AUDIT_LEVEL_LABEL,
    AUDIT_VERSION_LABEL,
    AUDIT_VIOLATIONS_ANNOTATION_KEY,
    DEFAULT_POLICY,
    ENFORCE_LEVEL_LABEL,
    ENFORCE_VERSION_LABEL,
    ENFORCED_POLICY_ANNOTATION_KEY,
    EXEMPTION_REASON_ANNOTATION_KEY,
    PRIVILEGED,
    PRIVILEGED_LATEST,
    WARN_LEVEL_LABEL,
    WARN_VERSION_LABEL,
    LevelVersion,
    Policy,
    compare_levels,
    parse_level,
    parse_version,
    policy_to_evaluate,
)
from .checks import AggregateCheckResult, aggregate_check_results
from .evaluator import Evaluator

PLUGIN_NAME = "PodSecurity"

NAMESPACE_MAX_PODS_TO_CHECK = 3000
NAMESPACE_POD_CHECK_TIMEOUT = 1.0  # seconds

# Pod subresources that cannot change what runs; any other (ephemeralcontainers, resize) is a pod write.
IGNORED_POD_SUBRESOURCES = frozenset({"exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"})

# (group, plural) of the objects that carry a pod template, and where the template's pod is.
_POD_TEMPLATE_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "replicationcontrollers"): ("spec", "template"),
    ("", "podtemplates"): ("template",),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}


@dataclass(frozen=True)
class PodSecurityConfiguration:
    """What an AdmissionConfiguration may say about the plugin (upstream: PodSecurityConfiguration
    pod-security.admission.config.k8s.io/v1): default levels for namespaces without labels, and exemptions.
    Upstream's defaults are privileged:latest everywhere and no exemptions."""

    defaults: Policy = DEFAULT_POLICY
    exempt_usernames: frozenset[str] = frozenset()
    exempt_runtime_classes: frozenset[str] = frozenset()
    exempt_namespaces: frozenset[str] = frozenset()

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> PodSecurityConfiguration:
        """Reads a PodSecurityConfiguration document; a bad level or version is a ValueError."""
        d = doc.get("defaults") or {}
        ex = doc.get("exemptions") or {}

        def lv(mode: str) -> LevelVersion:
            level_text = d.get(mode) or PRIVILEGED
            version_text = d.get(f"{mode}-version") or "latest"
            level, err = parse_level(level_text)
            if err:
                raise ValueError(f"defaults.{mode}: Invalid value: {errors.go_quote(level_text)}: {err}")
            version, err = parse_version(version_text)
            if err:
                raise ValueError(f"defaults.{mode}-version: Invalid value: {errors.go_quote(version_text)}: {err}")
            return LevelVersion(level, version)

        return cls(
            Policy(lv("enforce"), lv("audit"), lv("warn")),
            frozenset(ex.get("usernames") or ()),
            frozenset(ex.get("runtimeClasses") or ()),
            frozenset(ex.get("namespaces") or ()),
        )


@dataclass
class _Verdict:
    """What one evaluation decided: a refusal (or None), warnings and audit annotations."""

    error: errors.StatusError | None = None
    warnings: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


def _pod_template(obj: Object, path: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _is_significant_pod_update(pod: Object, old: Object) -> bool:
    """Whether an update changes what the policy looks at (upstream: isSignificantPodUpdate): the number of
    containers or init containers, an image, or an ephemeral container added or changed."""
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        new_list, old_list = spec.get(key) or [], old_spec.get(key) or []
        if len(new_list) != len(old_list):
            return True
        if any(n.get("image") != o.get("image") for n, o in zip(new_list, old_list, strict=True)):
            return True
    old_ephemeral = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or []}
    for c in spec.get("ephemeralContainers") or []:
        before = old_ephemeral.get(c.get("name"))
        if before is None or before.get("image") != c.get("image"):
            return True
    return False


def _decorate(pod_name: str, count: int, warning: str) -> str:
    if count == 1:
        return f"{pod_name}: {warning}"
    if count == 2:
        return f"{pod_name} (and 1 other pod): {warning}"
    return f"{pod_name} (and {count - 1} other pods): {warning}"


class PodSecurity:
    name = PLUGIN_NAME

    def __init__(
        self,
        get_namespace: Callable[[str], Awaitable[Object | None]],
        host: Any = None,
        config: PodSecurityConfiguration | None = None,
        evaluator: Evaluator | None = None,
    ) -> None:
        self.get_namespace = get_namespace
        self.host = host
        self.config = config or PodSecurityConfiguration()
        self.evaluator = evaluator or Evaluator()

    async def admit(self, a: Attributes) -> None:
        return None  # a validating plugin only

    async def validate(self, a: Attributes) -> None:
        if a.operation not in (CREATE, UPDATE):
            return
        group, plural = a.resource.group, a.resource.plural
        if group == "" and plural == "namespaces":
            verdict = await self.validate_namespace(a)
        elif group == "" and plural == "pods":
            verdict = await self.validate_pod(a)
        elif (group, plural) in _POD_TEMPLATE_PATHS:
            verdict = await self.validate_pod_controller(a, _POD_TEMPLATE_PATHS[(group, plural)])
        else:
            return
        for w in verdict.warnings:
            add_warning(w)
        for k, v in verdict.annotations.items():
            add_audit_annotation(AUDIT_ANNOTATION_PREFIX + k, v)
        if verdict.error is not None:
            raise verdict.error

    def policy_for(self, labels: dict[str, str] | None) -> tuple[Policy, list[errors.FieldError]]:
        return policy_to_evaluate(labels, self.config.defaults)

    # -- namespaces ---------------------------------------------------------------------------------------

    async def validate_namespace(self, a: Attributes) -> _Verdict:
        if a.subresource or a.object is None:
            return _Verdict()
        md = a.object.get("metadata") or {}
        labels = md.get("labels") or {}
        name = str(md.get("name") or a.name)
        new_policy, new_errs = self.policy_for(labels)
        if a.operation == CREATE:
            if new_errs:
                return _Verdict(errors.invalid_object("Namespace", name, new_errs))
            return _Verdict(warnings=self._exempt_namespace_warnings(name, new_policy, labels))
        old_policy, old_errs = self.policy_for(((a.old_object or {}).get("metadata") or {}).get("labels"))
        if new_errs and (not old_errs or new_errs != old_errs):
            return _Verdict(errors.invalid_object("Namespace", name, new_errs))
        # No pods to look at when enforce did not change, is privileged, or was relaxed at the same version.
        if new_policy.enforce == old_policy.enforce or new_policy.enforce.level == PRIVILEGED:
            return _Verdict()
        if (
            new_policy.enforce.version == old_policy.enforce.version
            and compare_levels(new_policy.enforce.level, old_policy.enforce.level) < 1
        ):
            return _Verdict()
        if name in self.config.exempt_namespaces:
            return _Verdict(warnings=self._exempt_namespace_warnings(name, new_policy, labels))
        return _Verdict(warnings=await self.evaluate_pods_in_namespace(name, new_policy.enforce))

    def _exempt_namespace_warnings(self, namespace: str, policy: Policy, labels: dict[str, str]) -> list[str]:
        """Upstream's note that labels on an exempt namespace do nothing."""
        if namespace not in self.config.exempt_namespaces:
            return []
        if policy.fully_privileged() or policy.equivalent(self.config.defaults):
            return []
        parts = []
        for mode, lv, level_label, version_label in (
            ("enforce", policy.enforce, ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL),
            ("audit", policy.audit, AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL),
            ("warn", policy.warn, WARN_LEVEL_LABEL, WARN_VERSION_LABEL),
        ):
            if lv.level != PRIVILEGED and (level_label in labels or version_label in labels):
                parts.append(f"{mode}={lv}")
        return [
            f"namespace {errors.go_quote(namespace)} is exempt from Pod Security, "
            f"and the policy ({', '.join(parts)}) will be ignored"
        ]

    async def _list_pods(self, namespace: str) -> list[Object]:
        pods = reads.cached_list(self.host, "v1", "pods", namespace)
        rest = reads.rest_of(self.host, "v1", "pods")
        if not pods and rest is not None and not rest.cacher.ready:
            pods = await reads.live_list(self.host, "v1", "pods", namespace)
        return pods

    def _prioritize(self, pods: list[Object]) -> list[Object]:
        """One pod per controller first, then the other replicas (upstream: prioritizePods); pods of an exempt
        runtime class are left out."""
        first: list[Object] = []
        replicas: list[Object] = []
        seen: set[str] = set()
        for pod in pods:
            if (pod.get("spec") or {}).get("runtimeClassName") in self.config.exempt_runtime_classes:
                continue
            owner = next(
                (r for r in (pod.get("metadata") or {}).get("ownerReferences") or () if r.get("controller")), None
            )
            if owner is None:
                first.append(pod)
            elif owner.get("uid") in seen:
                replicas.append(pod)
            else:
                seen.add(str(owner.get("uid")))
                first.append(pod)
        return first + replicas

    async def evaluate_pods_in_namespace(self, namespace: str, enforce: LevelVersion) -> list[str]:
        """Warnings naming the existing pods the new enforce level would refuse, grouped by reason."""
        deadline = time.monotonic() + NAMESPACE_POD_CHECK_TIMEOUT
        pods = self._prioritize(await self._list_pods(namespace))
        total = len(pods)
        pods = pods[:NAMESPACE_MAX_PODS_TO_CHECK]
        checked = len(pods)
        order: list[str] = []
        counts: dict[str, tuple[str, int]] = {}
        for i, pod in enumerate(pods):
            md = pod.get("metadata") or {}
            r = self._evaluate(enforce, md, pod.get("spec") or {})
            if not r.allowed:
                reason, pod_name = r.forbidden_reason(), str(md.get("name") or "")
                if reason not in counts:
                    order.append(reason)
                    counts[reason] = (pod_name, 1)
                else:
                    first, n = counts[reason]
                    counts[reason] = (min(first, pod_name), n + 1)
            if time.monotonic() > deadline:
                checked = i + 1
                break
            if i % 100 == 99:
                await asyncio.sleep(0)  # a long scan shares the loop with other requests
        warnings: list[str] = []
        if checked < total:
            warnings.append(
                f"new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
            )
        if order:
            warnings.append(
                f"existing pods in namespace {errors.go_quote(namespace)} violate the new PodSecurity enforce level "
                f"{errors.go_quote(str(enforce))}"
            )
        return warnings + sorted(_decorate(*counts[reason], reason) for reason in order)

    # -- pods and pod templates ---------------------------------------------------------------------------

    async def _namespace_policy(self, namespace: str) -> tuple[Policy, list[errors.FieldError]] | None:
        ns = await self.get_namespace(namespace)
        if ns is None:
            return None
        return self.policy_for((ns.get("metadata") or {}).get("labels"))

    async def validate_pod(self, a: Attributes) -> _Verdict:
        if a.subresource in IGNORED_POD_SUBRESOURCES:
            return _Verdict()
        if a.namespace in self.config.exempt_namespaces:
            return _Verdict(annotations={EXEMPTION_REASON_ANNOTATION_KEY: "namespace"})
        if a.user.name and a.user.name in self.config.exempt_usernames:
            return _Verdict(annotations={EXEMPTION_REASON_ANNOTATION_KEY: "user"})
        found = await self._namespace_policy(a.namespace)
        if found is None:
            message = f"failed to lookup namespace {errors.go_quote(a.namespace)}"
            return _Verdict(
                errors.internal_error(message), annotations={"error": f"Internal error occurred: {message}"}
            )
        policy, policy_errs = found
        if not policy_errs and policy.fully_privileged():
            return _Verdict(annotations={ENFORCED_POLICY_ANNOTATION_KEY: str(PRIVILEGED_LATEST)})
        pod = a.object or {}
        if a.operation == UPDATE and a.old_object is not None and not _is_significant_pod_update(pod, a.old_object):
            return _Verdict()
        return self.evaluate_pod(a, policy, policy_errs, pod.get("metadata") or {}, pod.get("spec") or {}, True)

    async def validate_pod_controller(self, a: Attributes, path: tuple[str, ...]) -> _Verdict:
        if a.subresource:
            return _Verdict()
        if a.namespace in self.config.exempt_namespaces:
            return _Verdict(annotations={EXEMPTION_REASON_ANNOTATION_KEY: "namespace"})
        if a.user.name and a.user.name in self.config.exempt_usernames:
            return _Verdict(annotations={EXEMPTION_REASON_ANNOTATION_KEY: "user"})
        found = await self._namespace_policy(a.namespace)
        if found is None:
            return _Verdict(annotations={"error": f'failed to lookup namespace "{a.namespace}"'})
        policy, policy_errs = found
        if not policy_errs and policy.warn.level == PRIVILEGED and policy.audit.level == PRIVILEGED:
            return _Verdict()
        template = _pod_template(a.object or {}, path)
        if template is None:
            return _Verdict()  # a controller without a template has no pods to check
        return self.evaluate_pod(
            a, policy, policy_errs, template.get("metadata") or {}, template.get("spec") or {}, False
        )

    def _evaluate(self, lv: LevelVersion, meta: dict[str, Any], spec: dict[str, Any]) -> AggregateCheckResult:
        return aggregate_check_results(self.evaluator.evaluate_pod(lv, meta, spec))

    def evaluate_pod(
        self,
        a: Attributes,
        policy: Policy,
        policy_errs: list[errors.FieldError],
        meta: dict[str, Any],
        spec: dict[str, Any],
        enforce: bool,
    ) -> _Verdict:
        """Enforce (pods only), audit and warn, each level:version evaluated once (upstream: EvaluatePod)."""
        if spec.get("runtimeClassName") and spec["runtimeClassName"] in self.config.exempt_runtime_classes:
            return _Verdict(annotations={EXEMPTION_REASON_ANNOTATION_KEY: "runtimeClass"})
        verdict = _Verdict()
        if policy_errs:
            verdict.annotations["error"] = f"Failed to parse policy: {errors.aggregate(str(e) for e in policy_errs)}"
        results: dict[LevelVersion, AggregateCheckResult] = {}

        def result(lv: LevelVersion) -> AggregateCheckResult:
            if lv not in results:
                results[lv] = self._evaluate(lv, meta, spec)
            return results[lv]

        if enforce:
            verdict.annotations[ENFORCED_POLICY_ANNOTATION_KEY] = str(policy.enforce)
            r = result(policy.enforce)
            if not r.allowed:
                verdict.error = new_forbidden(
                    a, f"violates PodSecurity {errors.go_quote(str(policy.enforce))}: {r.forbidden_detail()}"
                )
        r = result(policy.audit)
        if not r.allowed:
            verdict.annotations[AUDIT_VIOLATIONS_ANNOTATION_KEY] = (
                f"would violate PodSecurity {errors.go_quote(str(policy.audit))}: {r.forbidden_detail()}"
            )
        if verdict.error is None:  # a refused request gets no warnings on top
            r = result(policy.warn)
            if not r.allowed:
                verdict.warnings.append(
                    f"would violate PodSecurity {errors.go_quote(str(policy.warn))}: {r.forbidden_detail()}"
                )
        return verdict
