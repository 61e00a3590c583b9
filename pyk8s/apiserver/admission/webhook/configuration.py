"""The webhooks of all Mutating- or ValidatingWebhookConfigurations, read from the watch cache at each request
(upstream: apiserver pkg/admission/configuration/{mutating,validating}_webhook_manager.go and
pkg/admission/plugin/webhook/accessors.go).

Configurations are taken in the order of their names, and the webhooks of one in their list order. Each
webhook keeps what is built from it once per configuration version: its HTTPS client and its compiled match
conditions. A configuration written a moment ago is seen as soon as the watch cache has it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ....api.meta import Object
from .client import AdmissionClient, ServiceResolver
from .matchconditions import MatchConditions

GROUP_VERSION = "admissionregistration.k8s.io/v1"
MUTATING = "mutatingwebhookconfigurations"
VALIDATING = "validatingwebhookconfigurations"


@dataclass
class WebhookAccessor:
    """One webhook of one configuration version (upstream WebhookAccessor)."""

    uid: str  # <configuration>/<webhook>/<n>: unique while the configuration lasts
    configuration_name: str
    hook: dict[str, Any]
    mutating: bool
    _client: AdmissionClient | None = field(default=None, repr=False)
    _conditions: MatchConditions | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return str(self.hook.get("name") or "")

    @property
    def rules(self) -> list[dict[str, Any]]:
        return [r for r in self.hook.get("rules") or () if isinstance(r, dict)]

    @property
    def failure_policy(self) -> str:
        return str(self.hook.get("failurePolicy") or "Fail")

    @property
    def match_policy(self) -> str:
        return str(self.hook.get("matchPolicy") or "Exact")

    @property
    def side_effects(self) -> str | None:
        return self.hook.get("sideEffects")

    @property
    def timeout_seconds(self) -> int:
        value = self.hook.get("timeoutSeconds")
        return value if isinstance(value, int) and value > 0 else 10

    @property
    def reinvocation_policy(self) -> str:
        return str(self.hook.get("reinvocationPolicy") or "Never")

    def client(self, resolver: ServiceResolver | None) -> AdmissionClient:
        """The webhook's HTTPS client (SetupError when its caBundle does not load)."""
        if self._client is None:
            self._client = AdmissionClient(self.hook.get("clientConfig") or {}, self.name, self.timeout_seconds,
                                           resolver)  # fmt: skip
        return self._client

    def match_conditions(self) -> MatchConditions | None:
        conditions = self.hook.get("matchConditions")
        if not conditions:
            return None
        if self._conditions is None:
            self._conditions = MatchConditions(conditions, self.failure_policy)
        return self._conditions

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: the session goes with it
                asyncio.get_running_loop().create_task(client.close())


def accessors_of(configuration: Object, mutating: bool) -> list[WebhookAccessor]:
    name = configuration["metadata"]["name"]
    seen: dict[str, int] = {}
    out: list[WebhookAccessor] = []
    for hook in configuration.get("webhooks") or ():
        if not isinstance(hook, dict):
            continue
        n = seen.get(hook.get("name") or "", 0)
        seen[hook.get("name") or ""] = n + 1
        out.append(WebhookAccessor(f"{name}/{hook.get('name') or ''}/{n}", name, hook, mutating))
    return out


class WebhookSource:
    """The webhooks of one kind of configuration, in upstream's order, from `list_configurations()`."""

    def __init__(self, list_configurations: Callable[[], list[Object]], mutating: bool) -> None:
        self.list_configurations = list_configurations
        self.mutating = mutating
        self._by_version: dict[tuple[str, str], list[WebhookAccessor]] = {}
        self._key: tuple[tuple[str, str], ...] = ()
        self._hooks: list[WebhookAccessor] = []

    def webhooks(self) -> list[WebhookAccessor]:
        configurations = sorted(self.list_configurations(), key=lambda c: c["metadata"]["name"])
        key = tuple((c["metadata"].get("uid", ""), c["metadata"].get("resourceVersion", "")) for c in configurations)
        if key == self._key:
            return self._hooks
        by_version: dict[tuple[str, str], list[WebhookAccessor]] = {}
        hooks: list[WebhookAccessor] = []
        for version, c in zip(key, configurations, strict=True):
            accessors = self._by_version.get(version)
            if accessors is None:
                accessors = accessors_of(c, self.mutating)
            by_version[version] = accessors
            hooks.extend(accessors)
        for version, accessors in self._by_version.items():
            if version not in by_version:
                for accessor in accessors:
                    accessor.close()
        self._by_version, self._key, self._hooks = by_version, key, hooks
        return hooks
