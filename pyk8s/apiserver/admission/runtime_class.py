"""RuntimeClass (upstream: plugin/pkg/admission/runtimeclass/admission.go): a new pod that names a RuntimeClass
gets the class's fixed pod overhead (`spec.overhead`) and its scheduling constraints (node selector merged in,
tolerations merged without redundancy); a pod naming a class that does not exist, or stating an overhead other
than its class's, is refused."""

from __future__ import annotations

from typing import Any

from ...api import errors
from ...api.meta import Object, json_copy
from . import CREATE, Attributes, reads
from .errors import new_forbidden
from .limit_ranger import resource_list


def is_superset(ss: dict[str, Any], t: dict[str, Any]) -> bool:
    """Whether toleration `ss` tolerates everything `t` does (upstream: tolerations.isSuperset)."""
    if ss == t:
        return True
    if t.get("key", "") != ss.get("key", "") and (ss.get("key", "") != "" or ss.get("operator") != "Exists"):
        return False
    if t.get("effect", "") != ss.get("effect", "") and ss.get("effect", "") != "":
        return False
    if ss.get("effect") == "NoExecute" and ss.get("tolerationSeconds") is not None:
        if t.get("tolerationSeconds") is None or t["tolerationSeconds"] > ss["tolerationSeconds"]:
            return False
    op = ss.get("operator", "")
    if op in ("Equal", ""):
        return t.get("operator") == "Equal" and t.get("value", "") == ss.get("value", "")
    return op == "Exists"


def merge_tolerations(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Both lists, without the tolerations another one covers (upstream: tolerations.MergeTolerations)."""
    every = [*first, *second]
    merged: list[dict[str, Any]] = []
    for i, t in enumerate(every):
        if any(is_superset(kept, t) for kept in merged):
            continue
        if any(t != later and is_superset(later, t) for later in every[i + 1 :]):
            continue
        merged.append(t)
    return merged


def _same_overhead(a: Any, b: Any) -> bool:
    """apiequality.Semantic.DeepEqual of two ResourceLists: quantities compare by value, empty equals unset."""
    a, b = a if isinstance(a, dict) else {}, b if isinstance(b, dict) else {}
    return set(a) == set(b) and resource_list(a) == resource_list(b)


class RuntimeClass:
    name = "RuntimeClass"

    def __init__(self, host: Any) -> None:
        self.host = host

    @staticmethod
    def _ignored(a: Attributes) -> bool:
        return a.operation != CREATE or bool(a.subresource) or a.resource.group != "" or a.resource.plural != "pods"

    async def _prepare(self, a: Attributes) -> tuple[dict[str, Any], Object | None]:
        spec = (a.object or {}).get("spec")
        if not isinstance(spec, dict):
            raise errors.bad_request("Resource was marked with kind Pod but was unable to be converted")
        name = spec.get("runtimeClassName")
        if name is None:
            return spec, None
        rc = await reads.get(self.host, "node.k8s.io/v1", "runtimeclasses", "", name)
        if rc is None:
            raise new_forbidden(a, f'pod rejected: RuntimeClass "{name}" not found')
        return spec, rc

    async def admit(self, a: Attributes) -> None:
        if self._ignored(a):
            return
        spec, rc = await self._prepare(a)
        if rc is None:
            return
        overhead = (rc.get("overhead") or {}).get("podFixed") if isinstance(rc.get("overhead"), dict) else None
        if isinstance(rc.get("overhead"), dict):
            if spec.get("overhead") and not _same_overhead(overhead, spec.get("overhead")):
                raise new_forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
            if overhead is None:
                spec.pop("overhead", None)
            else:
                spec["overhead"] = json_copy(overhead)
        scheduling = rc.get("scheduling")
        if not isinstance(scheduling, dict):
            return
        wanted = scheduling.get("nodeSelector") or {}
        selector = spec.get("nodeSelector")
        if selector is None:
            selector = json_copy(wanted) if wanted else None
        else:
            for key, class_value in wanted.items():
                if key in selector and selector[key] != class_value:
                    raise new_forbidden(a, (
                        f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {class_value}; "
                        f"pod.spec.nodeSelector[{key}] = {selector[key]}"
                    ))  # fmt: skip
                selector[key] = class_value
        if selector is not None:
            spec["nodeSelector"] = selector
        tolerations = merge_tolerations(
            [t for t in spec.get("tolerations") or [] if isinstance(t, dict)],
            [json_copy(t) for t in scheduling.get("tolerations") or [] if isinstance(t, dict)],
        )
        if tolerations:
            spec["tolerations"] = tolerations

    async def validate(self, a: Attributes) -> None:
        if self._ignored(a):
            return
        spec, rc = await self._prepare(a)
        if rc is not None and isinstance(rc.get("overhead"), dict):
            if not _same_overhead(rc["overhead"].get("podFixed"), spec.get("overhead")):
                raise new_forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        elif spec.get("overhead") is not None:
            raise new_forbidden(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
