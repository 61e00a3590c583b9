"""How webhook refusals and call failures reach the client (upstream: apiserver pkg/admission/plugin/webhook/
errors/statuserror.go and pkg/util/webhook/error.go).

A webhook that answers `allowed: false` refuses with its own Status, its message prefixed with the webhook's
name; a webhook that cannot be called (or answers nonsense) is a CallingWebhookError, which the failurePolicy
turns into a 500 (Fail) or ignores (Ignore).
"""

from __future__ import annotations

from typing import Any

from ....api import errors
from ....api.errors import StatusError


class CallingWebhookError(Exception):
    """A failure to talk to the webhook, not the webhook's refusal (upstream ErrCallingWebhook); `str()` is
    what the 500 says under failurePolicy Fail."""

    def __init__(self, webhook_name: str, reason: str) -> None:
        super().__init__(f"failed calling webhook {errors.go_quote(webhook_name)}: {reason}")
        self.webhook_name = webhook_name
        self.reason = reason


def to_status_error(webhook_name: str, result: Any) -> StatusError:
    """The refusal a webhook's `response.status` makes (upstream ToStatusErr): its code (400 when below 400),
    reason and details, and its message after `admission webhook "<name>" denied the request`."""
    result = dict(result) if isinstance(result, dict) else {}
    denied_by = f"admission webhook {errors.go_quote(webhook_name)} denied the request"
    code = result.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    message, reason = str(result.get("message") or ""), str(result.get("reason") or "")
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    err = errors.from_status({"code": code, "reason": reason, "message": text, "details": details})
    err.code = code
    return err


def dry_run_unsupported(webhook_name: str) -> StatusError:
    """A dry-run request that a webhook with side effects would see (upstream NewDryRunUnsupportedErr)."""
    return errors.bad_request(f"admission webhook {errors.go_quote(webhook_name)} does not support dry run")


def failed_closed(err: CallingWebhookError) -> StatusError:
    """A webhook that could not be called, under failurePolicy Fail."""
    return errors.internal_error(str(err))
