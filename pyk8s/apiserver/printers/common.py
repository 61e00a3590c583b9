"""Helpers shared by the printers: columns, safe field access, labels and selectors, quantities."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ...api import meta
from ...api.meta import Object, parse_time
from ...api.quantity import QuantityError, canonical, parse_quantity
from ...api.selectors import SelectorError, label_selector_from_object
from ..tables import NAME, Cells, Column, human_duration, printer

# -- column helpers --------------------------------------------------------------------------------------

_AGE_DOC = "CreationTimestamp is a timestamp representing the server time when this object was created."
AGE = Column("Age", description=_AGE_DOC)
CONTAINERS = Column("Containers", priority=1, description="Names of each container in the template.")
IMAGES = Column("Images", priority=1, description="Images referenced by each container in the template.")
_SELECTOR_DOC = "A label query over pods that should match the replica count."


def _col(name: str, description: str = "", type_: str = "string", priority: int = 0, format_: str = "") -> Column:
    return Column(name, type_, format_, description, priority)


def _wide(name: str, description: str = "", type_: str = "string") -> Column:
    return Column(name, type_, "", description, 1)


# -- value helpers ---------------------------------------------------------------------------------------


def _d(value: Any) -> dict[str, Any]:
    """`value` if it is a dict, else an empty one (a missing struct reads as its zero value)."""
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _i(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def _name(obj: Object) -> str:
    return _s(_d(obj.get("metadata")).get("name"))


def _meta(obj: Object) -> dict[str, Any]:
    return _d(obj.get("metadata"))


def _time(value: Any) -> dt.datetime | None:
    """A metav1.Time / MicroTime as a datetime; None for a missing (zero) or unreadable one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def _since(value: Any) -> str:
    """upstream's translateTimestampSince: the age of a timestamp, `<unknown>` when it is unset."""
    t = _time(value) if not isinstance(value, dt.datetime) else value
    if t is None:
        return "<unknown>"
    return human_duration(meta.now() - t)


def _format_labels(labels: Any) -> str:
    """labels.FormatLabels: `k=v` pairs sorted by key, `<none>` when there are none."""
    pairs = sorted(_d(labels).items())
    return ",".join(f"{k}={v}" for k, v in pairs) or "<none>"


def _format_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: the selector's string form, `<none>` when empty, `<error>` when invalid."""
    try:
        text = str(label_selector_from_object(selector))
    except SelectorError:
        return "<error>"
    return text or "<none>"


def _containers(pod_spec: Any) -> tuple[str, str]:
    """layoutContainerCells: the containers' names and images, each comma-joined."""
    containers = [_d(c) for c in _l(_d(pod_spec).get("containers"))]
    return ",".join(_s(c.get("name")) for c in containers), ",".join(_s(c.get("image")) for c in containers)


def _template_spec(obj: Object) -> dict[str, Any]:
    return _d(_d(_d(obj.get("spec")).get("template")).get("spec"))


def _bool_ptr(value: Any) -> str:
    if value is None:
        return "<unset>"
    return "True" if value else "False"


def _join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _more(items: list[str], more: bool, count: int, limit: int) -> str:
    """listWithMoreString: at most `limit` items, then `+ N more...`; `<unset>` for none."""
    text = ",".join(items)
    if more:
        return f"{text} + {count - limit} more..."
    return text or "<unset>"


# -- quantities ------------------------------------------------------------------------------------------


def quantity(value: Any) -> str:
    """A resource.Quantity in its canonical string form, as upstream's Quantity.String() prints it.

    A None (nil) quantity prints `<nil>`; a value that is not a quantity prints as it is.
    """
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return str(value)
    text = str(value).strip() if isinstance(value, int | float | str) else ""
    try:
        return canonical(parse_quantity(text))
    except QuantityError:
        return text


def _int_or_string(value: Any) -> str:
    """An IntOrString as upstream prints it: the number, or the string (a percentage) as it is."""
    return str(value)


# -- default table (kinds upstream leaves to the generic convertor) ----------------------------------------

_CREATED_AT = Column(
    "Created At",
    "date",
    description="CreationTimestamp is a timestamp representing the server time when this object was created.",
)


def _created_at(obj: Object) -> str:
    """The creation time in RFC 3339 (UTC, whole seconds); Go's zero time when unset."""
    t = _time(_meta(obj).get("creationTimestamp")) or dt.datetime(1, 1, 1, tzinfo=dt.UTC)
    return t.astimezone(dt.UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def _default_row(obj: Object) -> Cells:
    return [_name(obj), _created_at(obj)]


for _group, _kind in (
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("", "LimitRange"),
):
    printer(_group, _kind, [NAME, _CREATED_AT])(_default_row)
