"""Kubernetes API errors: `StatusError` carries the `Status` a client receives, with upstream's reason, code
and message wording (upstream: apimachinery/pkg/api/errors), and `FieldError` is one field-level
validation error (upstream: apimachinery/pkg/util/validation/field).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# The field error types (upstream: field.ErrorType) and their messages.
REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
NOT_FOUND = "FieldValueNotFound"
TYPE_INVALID = "FieldValueTypeInvalid"
INTERNAL = "InternalError"

_TYPE_TEXT = {
    REQUIRED: "Required value",
    INVALID: "Invalid value",
    NOT_SUPPORTED: "Unsupported value",
    DUPLICATE: "Duplicate value",
    FORBIDDEN: "Forbidden",
    TOO_LONG: "Too long",
    TOO_MANY: "Too many",
    NOT_FOUND: "Not found",
    TYPE_INVALID: "Invalid value",
    INTERNAL: "Internal error",
}
# These types never print the offending value.
_VALUELESS = {REQUIRED, FORBIDDEN, TOO_LONG, INTERNAL}
_OMIT = object()


def go_value(value: Any) -> str:
    """A decoded JSON value as Go's `%+v` prints it (`map[spec:map[replicas:x]]`), as upstream shows a
    strategic merge patch in its errors."""
    if isinstance(value, dict):
        return (
            "map[" + " ".join(f"{k}:{go_value(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "]"
        )
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


def go_quote(s: str) -> str:
    """A string quoted the way Go's %q prints it (what clients see in upstream's messages)."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


class GoStrings:
    """A []string as Go's %#v prints it among a field error's values (`[]string(nil)` for a nil slice)."""

    __slots__ = ("values",)

    def __init__(self, values: Sequence[str] | None) -> None:
        self.values = values

    def go_string(self) -> str:
        if self.values is None:
            return "[]string(nil)"
        return "[]string{" + ", ".join(go_quote(v) for v in self.values) + "}"


def _format_value(value: Any) -> str:
    go_string = getattr(value, "go_string", None)
    if callable(go_string):
        return str(go_string())
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    import orjson

    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


@dataclass(frozen=True)
class FieldError:
    """One field-level validation error: the field path as upstream prints it (`spec.containers[0].image`),
    the error type, the offending value and a detail."""

    type: str
    field: str
    value: Any = ""
    detail: str = ""

    def body(self) -> str:
        text = _TYPE_TEXT[self.type]
        if self.type not in _VALUELESS and self.value is not _OMIT:
            text = f"{text}: {_format_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, field, "", detail)


def invalid(field: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(INVALID, field, value, detail)


def not_supported(field: str, value: Any, valid: list[str] | tuple[str, ...]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return FieldError(NOT_SUPPORTED, field, value, detail)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(DUPLICATE, field, value)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, field, "", detail)


def too_long(field: str, max_length: int) -> FieldError:
    return FieldError(TOO_LONG, field, "", f"may not be more than {max_length} bytes")  # v1.32's wording


def too_many(field: str, actual: int, maximum: int) -> FieldError:
    return FieldError(TOO_MANY, field, actual, f"must have at most {maximum} items")


def type_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(TYPE_INVALID, field, value, detail)


def aggregate(messages: Iterable[str]) -> str:
    """Several errors as upstream's utilerrors.Aggregate prints them: repeats dropped, bracketed when more than
    one is left."""
    msgs = list(dict.fromkeys(messages))
    if len(msgs) <= 1:
        return msgs[0] if msgs else ""
    return "[" + ", ".join(msgs) + "]"


def qualified(name: str, group: str) -> str:
    """`resource.group` (or `Kind.group`), or the bare name for the core group."""
    return f"{name}.{group}" if group else name


class StatusError(Exception):
    """An error a client sees as a `Status` object with an HTTP code."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.list_meta: dict[str, Any] = {}  # a 410 for an expired continue token carries a fresh one here
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        details = dict(self.details or {})
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            out["details"] = details
        out["code"] = self.code
        return out

    def __repr__(self) -> str:
        return f"StatusError({self.code}, {self.reason!r}, {self.message!r})"


# Typed errors, one per upstream reason, so a caller can `except NotFound:` (upstream: errors.IsNotFound and
# friends). The server raises them too; `from_status` rebuilds one from a `Status` a client received.
class BadRequest(StatusError):
    pass


class Unauthorized(StatusError):
    pass


class Forbidden(StatusError):
    pass


class NotFound(StatusError):
    pass


class MethodNotAllowed(StatusError):
    pass


class NotAcceptable(StatusError):
    pass


class AlreadyExists(StatusError):
    pass


class Conflict(StatusError):
    pass


class Gone(StatusError):
    """410: the requested resourceVersion is no longer available (reasons Gone and Expired)."""


class Expired(Gone):
    pass


class RequestEntityTooLarge(StatusError):
    pass


class UnsupportedMediaType(StatusError):
    pass


class Invalid(StatusError):
    pass


class TooManyRequests(StatusError):
    pass


class InternalError(StatusError):
    pass


class ServiceUnavailable(StatusError):
    pass


class ServerTimeout(StatusError):
    pass


_BY_REASON: dict[str, type[StatusError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "NotAcceptable": NotAcceptable,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Expired,
    "RequestEntityTooLarge": RequestEntityTooLarge,
    "UnsupportedMediaType": UnsupportedMediaType,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "Timeout": ServerTimeout,
    "ServerTimeout": ServerTimeout,
}
# When the reason is empty or unknown, the HTTP code decides (upstream: reasonForError / NewGenericServerResponse).
_BY_CODE: dict[int, type[StatusError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    406: NotAcceptable,
    409: Conflict,
    410: Gone,
    413: RequestEntityTooLarge,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}


def from_status(status: dict[str, Any], code: int = 0) -> StatusError:
    """The typed error for a `Status` object received from a server (`code` is the HTTP status when the body
    carries none)."""
    code = int(status.get("code") or code or 500)
    reason = str(status.get("reason") or "")
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or StatusError
    details = status.get("details")
    retry = (details or {}).get("retryAfterSeconds") if isinstance(details, dict) else None
    err = cls(code, reason, str(status.get("message") or ""), details=details, retry_after=retry)
    meta = status.get("metadata")
    if isinstance(meta, dict):
        err.list_meta = dict(meta)
    return err


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if kind:
        d["kind"] = kind
    d.update(extra)
    return d


def not_found(resource: str, name: str, group: str = "") -> StatusError:
    return NotFound(
        404, "NotFound", f"{qualified(resource, group)} {go_quote(name)} not found",
        details=_details(name, group, resource),
    )  # fmt: skip


def already_exists(resource: str, name: str, group: str = "") -> StatusError:
    return AlreadyExists(
        409, "AlreadyExists", f"{qualified(resource, group)} {go_quote(name)} already exists",
        details=_details(name, group, resource),
    )  # fmt: skip


def conflict(resource: str, name: str, reason: str, group: str = "") -> StatusError:
    what = f"{qualified(resource, group)} {go_quote(name)}"
    return Conflict(
        409,
        "Conflict",
        f"Operation cannot be fulfilled on {what}: {reason}",
        details=_details(name, group, resource),
    )


OBJECT_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def invalid_object(kind: str, name: str, errors: list[FieldError], group: str = "") -> StatusError:
    causes = [{"reason": e.type, "message": e.body(), "field": e.field} for e in errors]
    msg = f"{qualified(kind, group)} {go_quote(name)} is invalid"
    if errors:
        msg += ": " + aggregate(str(e) for e in errors)
    return Invalid(422, "Invalid", msg, details=_details(name, group, kind, causes=causes))


def bad_request(message: str) -> StatusError:
    return BadRequest(400, "BadRequest", message)


def cannot_decode(kind: str, version: str, detail: object, data_kind: str = "") -> StatusError:
    """A body that does not decode into its kind's type (upstream: transformDecodeError's BadRequest)."""
    return bad_request(f"{data_kind or kind} in version {go_quote(version)} cannot be handled as a {kind}: {detail}")


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return Unauthorized(401, "Unauthorized", message)


NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"  # a create refused because its namespace is going away


def has_status_cause(err: BaseException, cause_type: str) -> bool:
    """Whether `err` is a StatusError whose details list a cause of `cause_type` (upstream: HasStatusCause)."""
    if not isinstance(err, StatusError):
        return False
    return any(isinstance(c, dict) and c.get("type") == cause_type for c in (err.details or {}).get("causes") or ())


def forbidden_request(resource: str, name: str, reason: str, group: str = "") -> StatusError:
    what = qualified(resource, group)
    if not what:  # no resource (a non-resource path): upstream's NewForbidden with an empty GroupResource
        msg = f"forbidden: {reason}"
    else:
        msg = f"{what} {go_quote(name)} is forbidden: {reason}" if name else f"{what} is forbidden: {reason}"
    return Forbidden(403, "Forbidden", msg, details=_details(name, group, resource))


def method_not_supported(resource: str, action: str, group: str = "") -> StatusError:
    kind = go_quote(qualified(resource, group))
    return MethodNotAllowed(
        405,
        "MethodNotAllowed",
        f"{action} is not supported on resources of kind {kind}",
        details=_details("", group, resource),
    )


def gone(message: str) -> StatusError:
    return Gone(410, "Gone", message)


def expired(message: str) -> StatusError:
    return Expired(410, "Expired", message)


def request_entity_too_large(message: str) -> StatusError:
    return RequestEntityTooLarge(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


def unsupported_media_type(message: str) -> StatusError:
    return UnsupportedMediaType(415, "UnsupportedMediaType", message)


def not_acceptable(message: str) -> StatusError:
    return NotAcceptable(406, "NotAcceptable", message)


def too_many_requests(message: str, retry_after: int = 1) -> StatusError:
    return TooManyRequests(429, "TooManyRequests", message, retry_after=retry_after)


def internal_error(message: str) -> StatusError:
    return InternalError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )


def timeout(message: str, retry_after: int = 0) -> StatusError:
    return ServerTimeout(504, "Timeout", f"Timeout: {message}", retry_after=retry_after or None)


def service_unavailable(message: str) -> StatusError:
    return ServiceUnavailable(503, "ServiceUnavailable", message)


def path_not_found() -> StatusError:
    """The answer for a path no handler serves."""
    return NotFound(404, "NotFound", "the server could not find the requested resource", details={})
