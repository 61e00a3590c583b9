"""The PodSecurity plugin's configuration as an AdmissionConfiguration gives it (upstream: pod-security-admission
admission/api/load, v1 defaulting, ToPolicy and validation, run by the in-tree plugin's ValidateInitialization).

A PodSecurityConfiguration (pod-security.admission.config.k8s.io v1, v1beta1 or v1alpha1) sets the levels of
namespaces without pod-security labels (`defaults`: enforce, audit, warn and their `-version`s; privileged and
latest when left out) and who is exempt (`exemptions`: usernames, runtimeClasses, namespaces). Errors come out
in upstream's order and words: the defaults first ("PodSecurity configuration error: ..."), then the exemptions
("PodSecurity invalid: ...").
"""

from __future__ import annotations

from typing import Any

from ....api import errors
from ....api.validation import name_is_dns_label, name_is_dns_subdomain
from ..config import ConfigError, InitializationError, check_kind
from .admission import PLUGIN_NAME, PodSecurityConfiguration
from .api import PRIVILEGED, VERSION_LATEST, parse_level, parse_version

GROUP = "pod-security.admission.config.k8s.io"
KIND = "PodSecurityConfiguration"
VERSIONS = ("v1", "v1beta1", "v1alpha1")
_MODES = ("enforce", "audit", "warn")


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"json: cannot unmarshal {type(value).__name__} into Go struct field {where} of type []string"
        )
    return value


def _exemption_errors(kind: str, values: list[str], check: Any) -> list[errors.FieldError]:
    """Each exemption valid and listed once (upstream validateNamespaces and its kin)."""
    out: list[errors.FieldError] = []
    seen: set[str] = set()
    for i, value in enumerate(values):
        path = f"exemptions.{kind}[{i}]"
        problems = check(value)
        if problems:
            out.append(errors.invalid(path, value, ", ".join(problems)))
        elif value in seen:
            out.append(errors.duplicate(path, value))
        else:
            seen.add(value)
    return out


def _username_problems(value: str) -> list[str]:
    return ["username must not be empty"] if not value else []


def load_pod_security_configuration(doc: dict[str, Any]) -> PodSecurityConfiguration:
    """The plugin's configuration from its document; ConfigError when it cannot be decoded, InitializationError
    when the plugin refuses it."""
    check_kind(doc, {f"{GROUP}/{v}": KIND for v in VERSIONS})
    defaults = doc.get("defaults") or {}
    exemptions = doc.get("exemptions") or {}
    if not isinstance(defaults, dict) or not isinstance(exemptions, dict):
        raise ConfigError(f"json: cannot unmarshal into Go value of type {GROUP}.{KIND}")
    # v1 defaulting: what is left out is privileged, at the latest version.
    filled: dict[str, str] = {}
    for mode in _MODES:
        filled[mode] = str(defaults.get(mode) or PRIVILEGED)
        filled[f"{mode}-version"] = str(defaults.get(f"{mode}-version") or VERSION_LATEST)
    policy_errors = []
    for mode in _MODES:
        _, err = parse_level(filled[mode])
        if err:
            policy_errors.append(f"{mode}: {err}")
        _, err = parse_version(filled[f"{mode}-version"])
        if err:
            policy_errors.append(f"{mode}-version: {err}")
    if policy_errors:
        raise InitializationError(f"{PLUGIN_NAME} configuration error: {errors.aggregate(policy_errors)}")
    namespaces = _strings(exemptions.get("namespaces"), "PodSecurityExemptions.namespaces")
    runtime_classes = _strings(exemptions.get("runtimeClasses"), "PodSecurityExemptions.runtimeClasses")
    usernames = _strings(exemptions.get("usernames"), "PodSecurityExemptions.usernames")
    problems = (
        _exemption_errors("namespaces", namespaces, lambda v: name_is_dns_label(v, False))
        + _exemption_errors("runtimeClasses", runtime_classes, lambda v: name_is_dns_subdomain(v, False))
        + _exemption_errors("usernames", usernames, _username_problems)
    )
    if problems:
        raise InitializationError(f"{PLUGIN_NAME} invalid: {errors.aggregate(str(p) for p in problems)}")
    return PodSecurityConfiguration.from_document({"defaults": filled, "exemptions": exemptions})
