"""Strategy of certificates.k8s.io/v1 CertificateSigningRequests (upstream:
pkg/registry/certificates/certificates/strategy.go and pkg/apis/certificates/validation).

- create: `spec.username`, `uid`, `groups` and `extra` are the requester's, whatever the client sent, and the
  status starts empty: nobody creates a pre-approved request;
- the main resource changes metadata only (spec and status are kept);
- `status` writes the status but not the spec, and keeps the Approved and Denied conditions as they were (the
  signer issues; it does not approve);
- `approval` writes `status.conditions` and nothing else of spec or status;
- on every write the request must be a PEM CERTIFICATE REQUEST with a valid signature, the signer name a
  `domain/path`, the usages known and distinct, `expirationSeconds` at least 600, the conditions well formed
  (Approved and Denied exclusive, no type twice, none removed) and the certificate PEM CERTIFICATE blocks only,
  set once. What a stored object already breaks is tolerated on update, as upstream tolerates old data.

Who may approve or sign is the admission plugins' concern (admission/certificates.py).
"""

from __future__ import annotations

from typing import Any

from cryptography import x509

from ...api import errors as e
from ...api import validation as v
from ...api.certificates import (
    APPROVED,
    DENIED,
    FAILED,
    GROUP,
    KEY_USAGES,
    LEGACY_UNKNOWN_SIGNER,
    GoBytes,
    check_signature,
    decode_bytes,
    parse_csr_pem,
    pem_blocks,
)
from ...api.errors import FieldError
from ...api.meta import Object, json_copy, rfc3339
from ..authn import UserInfo
from . import register
from .strategy import Strategy

_TRUE_ONLY = (APPROVED, DENIED, FAILED)  # condition types whose status may only be True
_STATUS_VALUES = ("False", "True", "Unknown")
_MIN_EXPIRATION_SECONDS = 600
_DNS1123_SUBDOMAIN_MAX, _DNS1123_LABEL_MAX = 253, 63


def _any_name(name: str, prefix: bool) -> list[str]:
    """Upstream: "We don't care what you call your certificate requests" (any name the key functions take)."""
    return []


# -- validation (upstream: pkg/apis/certificates/validation) ------------------------------------------------------


def validate_signer_name(signer: Any, path: str = "spec.signerName") -> list[FieldError]:
    """`domain/path`, the domain of DNS labels with at least one dot, the path of DNS subdomains separated by
    dots (upstream: ValidateSignerName)."""
    if not isinstance(signer, str) or not signer:
        return [e.required(path, "")]
    segments = signer.split("/")
    if len(segments) != 2:
        return [
            e.invalid(path, signer, "must be a fully qualified domain and path of the form 'example.com/signer-name'")
        ]
    domain, rest = segments
    errs: list[FieldError] = []
    if len(domain) > _DNS1123_SUBDOMAIN_MAX:
        errs.append(e.too_long(path, _DNS1123_SUBDOMAIN_MAX))
    labels = domain.split(".")
    for label in labels:
        problems = v.is_dns1123_label(label)
        if problems:
            # Only the first bad label: the rest would say the same, indistinguishably.
            errs += [e.invalid(path, domain, f"validating label {e.go_quote(label)}: {p}") for p in problems]
            break
    if len(labels) < 2:
        errs.append(e.invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    for label in rest.split("."):
        problems = v.is_dns1123_subdomain(label)
        if problems:
            errs += [e.invalid(path, rest, f"validating label {e.go_quote(label)}: {p}") for p in problems]
            break
    max_len = _DNS1123_SUBDOMAIN_MAX + (_DNS1123_SUBDOMAIN_MAX + _DNS1123_LABEL_MAX + 1) + 1
    if len(signer) > max_len:
        errs.append(e.too_long(path, max_len))
    return errs


def certificate_problem(pem: bytes) -> str | None:
    """Why `status.certificate` is not one or more PEM CERTIFICATE blocks without headers, or None."""
    if not pem:
        return None
    blocks = pem_blocks(pem)
    for block in blocks:
        if block.type != "CERTIFICATE":
            return f"only CERTIFICATE PEM blocks are allowed, found {e.go_quote(block.type)}"
        if block.headers:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(block.der)
        except ValueError:
            return "x509: malformed certificate"
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    return None


class _Options:
    """What an update may do, or tolerate because the stored object already has it (upstream:
    certificateValidationOptions)."""

    def __init__(self, new: Object, old: Object | None) -> None:
        self.allow_setting_approval_conditions = False
        self.allow_setting_certificate = False
        old_conditions = _conditions(old) if old is not None else []
        old_types = [c.get("type") or "" for c in old_conditions]
        old_usages = list(_spec(old).get("usages") or []) if old is not None else []
        self.allow_both_approved_and_denied = APPROVED in old_types and DENIED in old_types
        self.allow_legacy_signer_name = old is not None and _spec(old).get("signerName") == LEGACY_UNKNOWN_SIGNER
        self.allow_duplicate_condition_types = len(set(old_types)) != len(old_types)
        self.allow_empty_condition_type = "" in old_types
        self.allow_unknown_usages = any(u not in KEY_USAGES for u in old_usages)
        self.allow_duplicate_usages = len(set(map(str, old_usages))) != len(old_usages)
        new_cert = _certificate(new)
        self.allow_arbitrary_certificate = old is not None and (
            new_cert == _certificate(old) or certificate_problem(_certificate(old)) is not None
        )


def _spec(obj: Object | None) -> dict[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def _conditions(obj: Object | None) -> list[dict[str, Any]]:
    status = (obj or {}).get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return [c if isinstance(c, dict) else {} for c in conditions] if isinstance(conditions, list) else []


def _certificate(obj: Object | None) -> bytes:
    status = (obj or {}).get("status")
    return decode_bytes(status.get("certificate")) if isinstance(status, dict) else b""


def _validate(csr: Object, opts: _Options) -> list[FieldError]:
    """Upstream validateCertificateSigningRequest, less ObjectMeta (the store validates that first)."""
    spec = _spec(csr)
    errs: list[FieldError] = []
    request = decode_bytes(spec.get("request"))
    try:
        check_signature(parse_csr_pem(request))
    except ValueError as err:
        errs.append(e.invalid("spec.request", GoBytes(request), str(err)))
    usages = spec.get("usages") or []
    if not usages:
        errs.append(e.required("spec.usages", ""))
    if not opts.allow_unknown_usages:
        errs += [
            e.not_supported(f"spec.usages[{i}]", u, KEY_USAGES) for i, u in enumerate(usages) if u not in KEY_USAGES
        ]
    if not opts.allow_duplicate_usages:
        seen: set[Any] = set()
        for i, u in enumerate(usages):
            if u in seen:
                errs.append(e.duplicate(f"spec.usages[{i}]", u))
            seen.add(u)
    signer = spec.get("signerName") or ""
    if not opts.allow_legacy_signer_name and signer == LEGACY_UNKNOWN_SIGNER:
        errs.append(e.invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version"))
    else:
        errs += validate_signer_name(signer)
    expiration = spec.get("expirationSeconds")
    if isinstance(expiration, int) and expiration < _MIN_EXPIRATION_SECONDS:
        errs.append(e.invalid("spec.expirationSeconds", expiration,
                              "may not specify a duration less than 600 seconds (10 minutes)"))  # fmt: skip
    errs += _validate_conditions(csr, opts)
    if not opts.allow_arbitrary_certificate:
        problem = certificate_problem(_certificate(csr))
        if problem is not None:
            errs.append(e.invalid("status.certificate", "<certificate data>", problem))
    return errs


def _validate_conditions(csr: Object, opts: _Options) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    has_approved = has_denied = False
    for i, c in enumerate(_conditions(csr)):
        path = f"status.conditions[{i}]"
        ctype, status = c.get("type") or "", c.get("status") or ""
        if not opts.allow_empty_condition_type and not ctype:
            errs.append(e.required(f"{path}.type", ""))
        allowed = ("True",) if ctype in _TRUE_ONLY else _STATUS_VALUES
        if not status:
            errs.append(e.required(f"{path}.status", ""))
        elif status not in allowed:
            errs.append(e.not_supported(f"{path}.status", status, allowed))
        if not opts.allow_both_approved_and_denied:
            if ctype == APPROVED:
                has_approved = True
                if has_denied:
                    errs.append(
                        e.invalid(f"{path}.type", ctype, "Approved and Denied conditions are mutually exclusive")
                    )
            elif ctype == DENIED:
                has_denied = True
                if has_approved:
                    errs.append(
                        e.invalid(f"{path}.type", ctype, "Approved and Denied conditions are mutually exclusive")
                    )
        if not opts.allow_duplicate_condition_types:
            if ctype in seen:
                errs.append(e.duplicate(f"{path}.type", ctype))
            seen.add(ctype)
    return errs


def _of_type(obj: Object, ctype: str) -> list[dict[str, Any]]:
    return [c for c in _conditions(obj) if c.get("type") == ctype]


def _validate_update(new: Object, old: Object, opts: _Options) -> list[FieldError]:
    """Upstream validateCertificateSigningRequestUpdate (ObjectMeta's update rules are the store's)."""
    errs = _validate(new, opts)
    for ctype in (APPROVED, DENIED, FAILED):
        if len(_of_type(new, ctype)) < len(_of_type(old, ctype)):
            errs.append(
                e.forbidden("status.conditions", f"updates may not remove a condition of type {e.go_quote(ctype)}")
            )
    if not opts.allow_setting_approval_conditions:
        for ctype in (APPROVED, DENIED):
            before, after = _of_type(old, ctype), _of_type(new, ctype)
            if len(after) > len(before):
                errs.append(
                    e.forbidden("status.conditions", f"updates may not add a condition of type {e.go_quote(ctype)}")
                )
            elif len(after) == len(before) and after != before:
                changes = "\n".join(f"-{b}\n+{a}" for b, a in zip(before, after, strict=True) if a != b)
                errs.append(e.forbidden("status.conditions",
                                        f"updates may not modify a condition of type {e.go_quote(ctype)}\n{changes}"))  # fmt: skip
    if _certificate(new) != _certificate(old):
        if not opts.allow_setting_certificate:
            errs.append(e.forbidden("status.certificate", "updates may not set certificate content"))
        elif _certificate(old):
            errs.append(e.forbidden("status.certificate", "updates may not modify existing certificate content"))
    return errs


# -- the strategy -------------------------------------------------------------------------------------------------


def _populate_condition_timestamps(new: Object, old: Object) -> None:
    """A condition without lastUpdateTime gets now; one without lastTransitionTime keeps the time of the stored
    condition of the same type and status, else now (upstream: populateConditionTimestamps)."""
    now = rfc3339()
    old_conditions = _conditions(old)
    for c in _conditions(new):
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            same = (o.get("lastTransitionTime") for o in old_conditions
                    if o.get("type") == c.get("type") and o.get("status") == c.get("status"))  # fmt: skip
            c["lastTransitionTime"] = next((t for t in same if t), now)


def _status_of(obj: Object) -> dict[str, Any]:
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    return status


@register(GROUP, "CertificateSigningRequest")
class CertificateSigningRequestStrategy(Strategy):
    name_validator = staticmethod(_any_name)  # type: ignore[assignment]
    # Upstream's status and approval strategies keep whatever metadata the write carries.
    status_reset_meta = ()
    selectable_fields = ("spec.signerName",)

    def prepare_for_create(self, obj: Object) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            for k in ("username", "uid", "groups", "extra"):
                spec.pop(k, None)
        super().prepare_for_create(obj)  # the status starts empty: no request is created approved

    def prepare_for_create_by(self, obj: Object, user: UserInfo) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec["username"] = user.name
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = {k: list(vals) for k, vals in user.extra.items()}

    def validate(self, obj: Object) -> list[FieldError]:
        return _validate(obj, _Options(obj, None))

    def prepare_for_update(self, new: Object, old: Object) -> None:
        # Only the metadata changes through the main resource: the request is immutable, the status the
        # subresources'.
        for k in ("spec", "status"):
            if k in old:
                new[k] = json_copy(old[k])
            else:
                new.pop(k, None)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        return _validate_update(new, old, _Options(new, old))

    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        super().prepare_for_status_update(new, old)  # the spec (and everything but the status) is the stored one
        # The Approved and Denied conditions stay as stored when there are as many of each; adding or removing
        # one is refused by validation.
        conditions = _conditions(new)
        for ctype in (APPROVED, DENIED):
            before = _of_type(old, ctype)
            positions = [i for i, c in enumerate(conditions) if c.get("type") == ctype]
            if len(positions) == len(before):
                for i, kept in zip(positions, before, strict=True):
                    conditions[i] = json_copy(kept)
        if conditions:
            _status_of(new)["conditions"] = conditions
        _populate_condition_timestamps(new, old)

    def validate_status_update(self, new: Object, old: Object) -> list[FieldError]:
        opts = _Options(new, old)
        opts.allow_setting_certificate = True
        return _validate_update(new, old, opts)

    def prepare_for_approval_update(self, new: Object, old: Object) -> None:
        _populate_condition_timestamps(new, old)
        conditions = _conditions(new)
        for k in list(new):
            if k not in ("apiVersion", "kind", "metadata"):
                new.pop(k)
        for k, val in old.items():
            if k not in ("apiVersion", "kind", "metadata"):
                new[k] = json_copy(val)
        status = _status_of(new)
        if conditions:
            status["conditions"] = conditions
        else:
            status.pop("conditions", None)

    def validate_approval_update(self, new: Object, old: Object) -> list[FieldError]:
        opts = _Options(new, old)
        opts.allow_setting_approval_conditions = True
        return _validate_update(new, old, opts)

    def reset_fields(self, subresource: str, top_level: Any) -> tuple[tuple[str, ...], ...]:
        """Upstream's GetResetFields: the main resource owns neither spec nor status, `status` not the spec
        or the conditions, `approval` not the spec or the certificate."""
        if not subresource:
            return (("f:spec",), ("f:status",))
        if subresource == "status":
            return (("f:spec",), ("f:status", "f:conditions"))
        if subresource == "approval":
            return (("f:spec",), ("f:status", "f:certificate"))
        return ()
