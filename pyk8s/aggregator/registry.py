"""The registry of APIService objects: their strategy (defaults, validation, the status split; a local
APIService is Available from its creation) and the server-side Table `kubectl get apiservices` prints
(upstream: kube-aggregator pkg/registry/apiservice/strategy.go and etcd/etcd.go ConvertToTable)."""

from __future__ import annotations

from ..api import validation as v
from ..api.errors import FieldError
from ..api.meta import Object
from ..apiserver.printers.common import AGE
from ..apiserver.registry import register
from ..apiserver.registry.strategy import Strategy
from ..apiserver.tables import NAME, Cells, Column, age, printer
from . import apiservice as api
from .validation import validate_apiservice, validate_status


@register(api.GROUP, api.KIND)
class APIServiceStrategy(Strategy):
    name_validator = staticmethod(v.name_is_path_segment)  # type: ignore[assignment]
    allow_unconditional_update = False
    # A status write keeps the spec and this metadata of the stored object (upstream's status strategy).
    status_reset_meta = ("labels", "annotations", "finalizers", "ownerReferences")

    def default(self, obj: Object) -> None:
        api.set_defaults(obj)

    def initial_status(self, obj: Object) -> None:
        if api.service_of(obj) is None:  # a local APIService is available from the start
            api.set_condition(obj, api.local_available_condition())

    def validate(self, obj: Object) -> list[FieldError]:
        return validate_apiservice(obj)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        return validate_apiservice(new)

    def validate_status_update(self, new: Object, old: Object) -> list[FieldError]:
        return validate_status(new)


def available_cell(obj: Object) -> str:
    """The Available condition's status, with its reason when it is not True; Unknown without one."""
    cond = api.condition(obj)
    if cond is None:
        return "Unknown"
    status = str(cond.get("status", ""))
    reason = cond.get("reason")
    return f"{status} ({reason})" if status != "True" and reason else status


@printer(
    api.GROUP,
    api.KIND,
    [
        NAME,
        Column("Service", description="The reference to the service that hosts this API endpoint."),
        Column("Available", description="Whether this service is available."),
        AGE,
    ],
)
def apiservice_row(obj: Object) -> Cells:
    service = api.service_of(obj)
    where = "Local" if service is None else f"{service.get('namespace', '')}/{service.get('name', '')}"
    return [api.name_of(obj), where, available_cell(obj), age(obj)]
