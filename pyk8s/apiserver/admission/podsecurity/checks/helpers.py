"""Small pieces the checks share (upstream: policy/helpers.go and visitor.go): walking every container of a
pod, and wording lists of names as upstream's messages do."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .check import PodSpec

# Upstream's UserNamespacesPodSecurityStandards gate (alpha, off in v1.32) would relax the runAsUser,
# runAsNonRoot and procMount checks for pods with hostUsers=false.
RELAX_POLICY_FOR_USER_NAMESPACE_PODS = False

WINDOWS = "windows"


def containers(spec: PodSpec) -> Iterator[dict[str, Any]]:
    """Init containers, then containers, then ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, dict):
                yield c


def security_context(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The object's securityContext, None when unset."""
    sc = obj.get("securityContext")
    return sc if isinstance(sc, dict) else None


def sub(obj: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """A nested struct, None when unset."""
    if obj is None:
        return None
    value = obj.get(key)
    return value if isinstance(value, dict) else None


def name_of(container: dict[str, Any]) -> str:
    return str(container.get("name") or "")


def join_quote(items: list[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def named(singular: str, plural: str, names: list[str]) -> str:
    """`container "a"` / `containers "a", "b"`."""
    return f"{pluralize(singular, plural, len(names))} {join_quote(names)}"


def is_windows(spec: PodSpec) -> bool:
    os = sub(spec, "os")
    return os is not None and os.get("name") == WINDOWS


def relax_for_user_namespace(spec: PodSpec) -> bool:
    return RELAX_POLICY_FOR_USER_NAMESPACE_PODS and spec.get("hostUsers") is False
