"""Strategies of admissionregistration.k8s.io/v1 MutatingWebhookConfigurations and
ValidatingWebhookConfigurations: v1 defaults, generation, validation with upstream's messages, and their table
columns (upstream: pkg/registry/admissionregistration/{mutating,validating}webhookconfiguration/strategy.go,
pkg/apis/admissionregistration/v1/defaults.go, pkg/apis/admissionregistration/validation/validation.go,
pkg/printers/internalversion/printers.go).

The admission policies of the same group have their own module (validating_admission_policy.py); the pieces
both validate alike (rules, label selectors, matchConditions) are taken from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...api import errors as e
from ...api import validation as v
from ...api.errors import FieldError
from ...api.meta import Object
from ...apiextensions.conversion_validation import validate_webhook_service, validate_webhook_url
from ..printers.common import AGE
from ..tables import NAME, Cells, Column, age, printer
from . import register
from .strategy import Strategy
from .validating_admission_policy import (
    FAILURE_POLICIES,
    MATCH_POLICIES,
    validate_label_selector,
    validate_match_conditions,
    validate_rule_with_operations,
)

GROUP = "admissionregistration.k8s.io"
NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
ALL_SIDE_EFFECTS = ("None", "NoneOnDryRun", "Some", "Unknown")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
# The AdmissionReview versions the previous minor release understands (AcceptedAdmissionReviewVersions).
ACCEPTED_ADMISSION_REVIEW_VERSIONS = ("v1", "v1beta1")
DEFAULT_TIMEOUT_SECONDS = 10


# -- defaults -----------------------------------------------------------------------------------------------------


def default_webhook(hook: Any, mutating: bool) -> None:
    """SetDefaults_ValidatingWebhook / SetDefaults_MutatingWebhook, with SetDefaults_Rule (scope `*`) and
    SetDefaults_ServiceReference (port 443). sideEffects and admissionReviewVersions have no default in v1."""
    if not isinstance(hook, dict):
        return
    if hook.get("failurePolicy") is None:
        hook["failurePolicy"] = "Fail"
    if hook.get("matchPolicy") is None:
        hook["matchPolicy"] = "Equivalent"
    if hook.get("namespaceSelector") is None:
        hook["namespaceSelector"] = {}
    if hook.get("objectSelector") is None:
        hook["objectSelector"] = {}
    if hook.get("timeoutSeconds") is None:
        hook["timeoutSeconds"] = DEFAULT_TIMEOUT_SECONDS
    if mutating and hook.get("reinvocationPolicy") is None:
        hook["reinvocationPolicy"] = "Never"
    for rule in hook.get("rules") or ():
        if isinstance(rule, dict) and rule.get("scope") is None:
            rule["scope"] = "*"
    client_config = hook.get("clientConfig")
    service = client_config.get("service") if isinstance(client_config, dict) else None
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


# -- validation ---------------------------------------------------------------------------------------------------


def _validate_admission_review_versions(versions: Any, require_recognized: bool, path: str) -> list[FieldError]:
    versions = versions if isinstance(versions, list) else []
    accepted = ", ".join(ACCEPTED_ADMISSION_REVIEW_VERSIONS)
    if not versions:
        return [e.required(path, f"must specify one of {accepted}")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    recognized = False
    for i, version in enumerate(versions):
        if version in seen:
            errs.append(e.invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        errs += [e.invalid(f"{path}[{i}]", version, m) for m in v.is_dns1035_label(str(version))]
        recognized = recognized or version in ACCEPTED_ADMISSION_REVIEW_VERSIONS
    if require_recognized and not recognized:
        errs.append(e.invalid(path, versions, f"must include at least one of {accepted}"))
    return errs


def _validate_fully_qualified_name(name: str, path: str) -> list[FieldError]:
    """utilvalidation.IsFullyQualifiedName."""
    if not name:
        return [e.required(path, "")]
    msgs = v.is_dns1123_subdomain(name)
    if msgs:
        return [e.invalid(path, name, ",".join(msgs))]
    if len(name.split(".")) < 3:
        return [e.invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def _validate_client_config(cc: Any, path: str) -> list[FieldError]:
    cc = cc if isinstance(cc, dict) else {}
    url, service = cc.get("url"), cc.get("service")
    if (url is None) == (service is None):
        return [e.required(path, "exactly one of url or service is required")]
    if url is not None:
        return validate_webhook_url(f"{path}.url", str(url), True)
    service = service if isinstance(service, dict) else {}
    port = service.get("port")
    # As upstream, the service's name goes where the helper expects a namespace and the other way round.
    return validate_webhook_service(
        f"{path}.service", str(service.get("name") or ""), str(service.get("namespace") or ""),
        service.get("path"), int(port) if isinstance(port, int) else 443,
    )  # fmt: skip


def validate_webhook(hook: Any, mutating: bool, opts: Options, path: str) -> list[FieldError]:
    """validateValidatingWebhook / validateMutatingWebhook."""
    if not isinstance(hook, dict):
        return [e.type_invalid(path, hook, "must be an object")]
    errs = _validate_fully_qualified_name(str(hook.get("name") or ""), f"{path}.name")
    for i, rule in enumerate(hook.get("rules") or ()):
        if isinstance(rule, dict):
            errs += validate_rule_with_operations(rule, f"{path}.rules[{i}]")
    failure = hook.get("failurePolicy")
    if failure is not None and failure not in FAILURE_POLICIES:
        errs.append(e.not_supported(f"{path}.failurePolicy", failure, sorted(FAILURE_POLICIES)))
    match = hook.get("matchPolicy")
    if match is not None and match not in MATCH_POLICIES:
        errs.append(e.not_supported(f"{path}.matchPolicy", match, sorted(MATCH_POLICIES)))
    allowed = NO_SIDE_EFFECTS if opts.require_no_side_effects else ALL_SIDE_EFFECTS
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errs.append(e.required(f"{path}.sideEffects", f"must specify one of {', '.join(sorted(allowed))}"))
    elif side_effects not in allowed:
        errs.append(e.not_supported(f"{path}.sideEffects", side_effects, sorted(allowed)))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and (timeout > 30 or timeout < 1):
        errs.append(e.invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"))
    for key in ("namespaceSelector", "objectSelector"):
        if hook.get(key) is not None:
            errs += validate_label_selector(hook[key], f"{path}.{key}")
    reinvocation = hook.get("reinvocationPolicy")
    if mutating and reinvocation is not None and reinvocation not in REINVOCATION_POLICIES:
        errs.append(e.not_supported(f"{path}.reinvocationPolicy", reinvocation, REINVOCATION_POLICIES))
    errs += _validate_client_config(hook.get("clientConfig"), f"{path}.clientConfig")
    if not opts.ignore_match_conditions:
        errs += validate_match_conditions(hook.get("matchConditions"), False, f"{path}.matchConditions")
    return errs


@dataclass(frozen=True)
class Options:
    """What an update relaxes for configurations stored before a rule was tightened (validationOptions)."""

    ignore_match_conditions: bool = False
    require_no_side_effects: bool = True
    require_recognized_admission_review_version: bool = True
    require_unique_webhook_names: bool = True


def _webhooks(obj: Object) -> list[Any]:
    hooks = obj.get("webhooks")
    return hooks if isinstance(hooks, list) else []


def validate_configuration(obj: Object, mutating: bool, opts: Options) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, hook in enumerate(_webhooks(obj)):
        path = f"webhooks[{i}]"
        errs += validate_webhook(hook, mutating, opts, path)
        if not isinstance(hook, dict):
            continue
        errs += _validate_admission_review_versions(
            hook.get("admissionReviewVersions"), opts.require_recognized_admission_review_version,
            f"{path}.admissionReviewVersions",
        )  # fmt: skip
        name = hook.get("name") or ""
        if opts.require_unique_webhook_names and name:
            if name in names:
                errs.append(e.duplicate(f"{path}.name", name))
            names.add(name)
    return errs


def _dicts(hooks: list[Any]) -> list[dict[str, Any]]:
    return [h if isinstance(h, dict) else {} for h in hooks]


def update_options(new: Object, old: Object) -> Options:
    """What the stored configuration already had lets the update keep it (ValidateXWebhookConfigurationUpdate)."""
    new_hooks, old_hooks = _dicts(_webhooks(new)), _dicts(_webhooks(old))
    same_conditions = len(new_hooks) == len(old_hooks) and all(
        n.get("matchConditions") == o.get("matchConditions") for n, o in zip(new_hooks, old_hooks, strict=True)
    )
    old_names = [h.get("name") for h in old_hooks]
    return Options(
        ignore_match_conditions=same_conditions,
        require_no_side_effects=all(h.get("sideEffects") in NO_SIDE_EFFECTS for h in old_hooks),
        require_recognized_admission_review_version=all(
            not h.get("admissionReviewVersions")
            or any(x in ACCEPTED_ADMISSION_REVIEW_VERSIONS for x in h["admissionReviewVersions"])
            for h in old_hooks
        ),
        require_unique_webhook_names=len(old_names) == len(set(old_names)),
    )


class _WebhookConfigurationStrategy(Strategy):
    """Generation moves when the webhooks change (the only top-level field besides metadata)."""

    tracks_generation = True
    mutating = False

    def default(self, obj: Object) -> None:
        for hook in _webhooks(obj):
            default_webhook(hook, self.mutating)

    def validate(self, obj: Object) -> list[FieldError]:
        return validate_configuration(obj, self.mutating, Options())

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        return validate_configuration(new, self.mutating, update_options(new, old))


@register(GROUP, "MutatingWebhookConfiguration")
class MutatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    mutating = True


@register(GROUP, "ValidatingWebhookConfiguration")
class ValidatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    mutating = False


# -- table columns ------------------------------------------------------------------------------------------------

_WEBHOOKS = Column(
    "Webhooks", "integer", "", "Webhooks indicates the number of webhooks registered in this configuration"
)


def _row(obj: Object) -> Cells:
    return [obj["metadata"].get("name", ""), len(_webhooks(obj)), age(obj)]


printer(GROUP, "MutatingWebhookConfiguration", [NAME, _WEBHOOKS, AGE])(_row)
printer(GROUP, "ValidatingWebhookConfiguration", [NAME, _WEBHOOKS, AGE])(_row)
