"""The registry: a `Strategy` for every resource in the table, and the `RESTStore` that applies it.

One module per API group holds that group's strategies (defaulting, validation, status split, selectable
fields, printers); kinds without a module of their own get the generic `Strategy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ...api.resources import Resource
from .strategy import Strategy

S = TypeVar("S", bound=Strategy)

# (group, kind) -> Strategy subclass; filled by the group modules below.
STRATEGIES: dict[tuple[str, str], type[Strategy]] = {}


def register(group: str, kind: str) -> Callable[[type[S]], type[S]]:
    def deco(cls: type[S]) -> type[S]:
        STRATEGIES[(group, kind)] = cls
        return cls

    return deco


def strategy_for(resource: Resource) -> Strategy:
    cls = STRATEGIES.get((resource.group, resource.kind), Strategy)
    return cls(resource)


# The group modules register their strategies on import.
from ...aggregator import registry as _apiservices  # noqa: E402, F401 -- APIServices' strategy
from ...apiextensions import crd_strategy  # noqa: E402, F401 -- CustomResourceDefinitions' strategy
from . import admissionregistration as _webhooks  # noqa: E402, F401 -- admission webhook configurations
from . import apps, autoscaling, batch, core, networking, policy, rbac, scheduling, storage_classes  # noqa: E402, F401
from . import certificates as _certificates  # noqa: E402, F401 -- CertificateSigningRequests
from . import limit_range as _limit_range  # noqa: E402, F401 -- LimitRanges' defaulting and validation
from . import validating_admission_policy as _vap  # noqa: E402, F401 -- admission policies and their bindings
