"""How admission plugins refuse a request (upstream: apiserver/pkg/admission/errors.go `NewForbidden`): a 403
naming the resource and the object, `<resource>[.<group>] "<name>" is forbidden: <reason>`."""

from __future__ import annotations

from ...api import errors
from . import CREATE, Attributes

# A generated name is the prefix plus this many characters (upstream's SimpleNameGenerator).
_GENERATED_SUFFIX = 5


def object_name(a: Attributes) -> str:
    """The name upstream's refusals print: the request's name, else the object's, else its generateName.

    Upstream generates a name after admission, so a refused `generateName` create shows the prefix; pyk8s
    generates it before, so a name that is the prefix plus five characters is shown as the prefix."""
    md = (a.object or {}).get("metadata") or {}
    prefix = md.get("generateName") or ""
    name = a.name or md.get("name") or ""
    if prefix and a.operation == CREATE and name.startswith(prefix) and len(name) == len(prefix) + _GENERATED_SUFFIX:
        return prefix
    return name or prefix or "Unknown"


def new_forbidden(a: Attributes, reason: str) -> errors.StatusError:
    return errors.forbidden_request(a.resource.plural, object_name(a), reason, a.resource.group)
