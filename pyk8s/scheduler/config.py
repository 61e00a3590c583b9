"""Loading the scheduler's component config (KubeSchedulerConfiguration, kubescheduler.config.k8s.io/v1) as
kube-scheduler v1.32 does: strict decoding, v1 defaulting (the default plugins as MultiPoint, merged with each
profile's own settings; default plugin args), validation with upstream's messages, and the framework's
expansion of a profile's plugin sets into per-extension-point lists (`expand_plugins`).

Upstream: cmd/kube-scheduler/app/options/configfile.go, pkg/scheduler/apis/config/v1/defaults.go,
apis/config/validation/validation.go and the plugin-list setup in framework/runtime/framework.go.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api.errors import go_quote
from .config_decode import (
    BOOL,
    BYTES,
    DURATION,
    FLOAT32,
    INT32,
    INT64,
    INVALID,
    RAW,
    STRING,
    ConfigError,
    DecodeResult,
    ListOf,
    Struct,
    child,
    decode,
    parse_document,
)
from .config_defaults import (
    API_VERSION,
    ARGS_SCHEMAS,
    EXTENSION_POINTS,
    KIND,
    PluginSet,
    default_plugin_args,
    default_plugins,
    merge_plugins,
)
from .config_validation import validate_config
from .framework.features import DEFAULT_FEATURE_GATES

__all__ = [
    "API_VERSION",
    "EXTENSION_POINTS",
    "FRAMEWORK_POINTS",
    "KIND",
    "ClientConnection",
    "ConfigError",
    "Extender",
    "ExtenderManagedResource",
    "LeaderElection",
    "PluginConfig",
    "PluginSet",
    "Profile",
    "SchedulerConfig",
    "config_from_dict",
    "default_config",
    "expand_plugins",
    "load_config",
    "validate_config",
]

DEFAULT_SCHEDULER_NAME = "default-scheduler"
# An extender with no httpTimeout gets this one when it is built (upstream: DefaultExtenderTimeout).
DEFAULT_EXTENDER_TIMEOUT_SECONDS = 5.0

# The extension points the framework fills, in the order it sets them up (upstream's getExtensionPoints),
# with the interface names its errors print.
FRAMEWORK_POINTS: dict[str, str] = {
    "preFilter": "PreFilterPlugin",
    "filter": "FilterPlugin",
    "postFilter": "PostFilterPlugin",
    "reserve": "ReservePlugin",
    "preScore": "PreScorePlugin",
    "score": "ScorePlugin",
    "preBind": "PreBindPlugin",
    "bind": "BindPlugin",
    "postBind": "PostBindPlugin",
    "permit": "PermitPlugin",
    "preEnqueue": "PreEnqueuePlugin",
    "queueSort": "QueueSortPlugin",
}
_MAX_NODE_SCORE = 100
_MAX_TOTAL_SCORE = 2**63 - 1


@dataclass
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0  # seconds
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass
class ClientConnection:
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100


@dataclass
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass
class Extender:
    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: dict[str, Any] | None = None  # ExtenderTLSConfig in its JSON shape
    http_timeout: float = 0.0  # seconds; 0 = unset (see effective_http_timeout)
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = field(default_factory=list)
    ignorable: bool = False

    @property
    def effective_http_timeout(self) -> float:
        """The timeout an HTTP extender uses: httpTimeout, or 5s when unset."""
        return self.http_timeout or DEFAULT_EXTENDER_TIMEOUT_SECONDS


@dataclass
class PluginConfig:
    """Args for one plugin: for plugin args types the v1 scheme knows, a defaulted dict in the v1 JSON shape
    (camelCase, no apiVersion/kind); for other (out-of-tree) plugins, the args as given."""

    name: str
    args: Any = None


@dataclass
class Profile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # None: use the config's percentage; 0: adaptive; 1..100: that percentage.
    percentage_of_nodes_to_score: int | None = None
    # Every extension point in EXTENSION_POINTS: MultiPoint holds the defaults merged with the user's
    # MultiPoint settings; the other points hold only what the user set there.
    plugins: dict[str, PluginSet] = field(default_factory=dict)
    plugin_config: list[PluginConfig] = field(default_factory=list)

    @property
    def plugin_args(self) -> dict[str, Any]:
        """Args by plugin name (the first entry wins; duplicates are a validation error anyway)."""
        out: dict[str, Any] = {}
        for pc in self.plugin_config:
            out.setdefault(pc.name, pc.args)
        return out

    def expand(
        self, implements: Callable[[str, str], bool], registry: Collection[str] | None = None
    ) -> dict[str, list[tuple[str, int]]]:
        """This profile's plugins per extension point (see expand_plugins), with the framework's checks
        for exactly one QueueSort and at least one Bind plugin."""
        return expand_plugins(self.plugins, implements, registry=registry, scheduler_name=self.scheduler_name)


@dataclass
class SchedulerConfig:
    parallelism: int = 16
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    percentage_of_nodes_to_score: int = 0  # 0: adaptive (5%-50% by cluster size)
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: list[Profile] = field(default_factory=list)
    extenders: list[Extender] = field(default_factory=list)
    delay_cache_until_active: bool = False

    def profile(self, scheduler_name: str) -> Profile | None:
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)


# ---------------------------------------------------------------------------------------------------------
# The v1 document's shape.

_PLUGIN = Struct("Plugin", {"name": STRING, "weight": INT32})
_PLUGIN_SET = Struct("PluginSet", {"enabled": ListOf(_PLUGIN), "disabled": ListOf(_PLUGIN)})
_PROFILE = Struct(
    "KubeSchedulerProfile",
    {
        "schedulerName": STRING,
        "percentageOfNodesToScore": INT32,
        "plugins": Struct("Plugins", dict.fromkeys(EXTENSION_POINTS, _PLUGIN_SET)),
        "pluginConfig": ListOf(Struct("PluginConfig", {"name": STRING, "args": RAW})),
    },
)
_EXTENDER = Struct(
    "Extender",
    {
        "urlPrefix": STRING,
        "filterVerb": STRING,
        "preemptVerb": STRING,
        "prioritizeVerb": STRING,
        "weight": INT64,
        "bindVerb": STRING,
        "enableHTTPS": BOOL,
        "tlsConfig": Struct(
            "ExtenderTLSConfig",
            {
                "insecure": BOOL,
                "serverName": STRING,
                "certFile": STRING,
                "keyFile": STRING,
                "caFile": STRING,
                "certData": BYTES,
                "keyData": BYTES,
                "caData": BYTES,
            },
        ),
        "httpTimeout": DURATION,
        "nodeCacheCapable": BOOL,
        "managedResources": ListOf(Struct("ExtenderManagedResource", {"name": STRING, "ignoredByScheduler": BOOL})),
        "ignorable": BOOL,
    },
)
_CONFIG = Struct(
    KIND,
    {
        "apiVersion": STRING,
        "kind": STRING,
        "parallelism": INT32,
        "leaderElection": Struct(
            "LeaderElectionConfiguration",
            {
                "leaderElect": BOOL,
                "leaseDuration": DURATION,
                "renewDeadline": DURATION,
                "retryPeriod": DURATION,
                "resourceLock": STRING,
                "resourceName": STRING,
                "resourceNamespace": STRING,
            },
        ),
        "clientConnection": Struct(
            "ClientConnectionConfiguration",
            {
                "kubeconfig": STRING,
                "acceptContentTypes": STRING,
                "contentType": STRING,
                "qps": FLOAT32,
                "burst": INT32,
            },
        ),
        "enableProfiling": BOOL,
        "enableContentionProfiling": BOOL,
        "percentageOfNodesToScore": INT32,
        "podInitialBackoffSeconds": INT64,
        "podMaxBackoffSeconds": INT64,
        "profiles": ListOf(_PROFILE),
        "extenders": ListOf(_EXTENDER),
        "delayCacheUntilActive": BOOL,
    },
)
_GROUP = API_VERSION.split("/")[0]


# ---------------------------------------------------------------------------------------------------------
# Loading.


def load_config(path: str | None, *, feature_gates: Mapping[str, bool] | None = None) -> SchedulerConfig:
    """The config in a YAML or JSON file, defaulted and validated; all defaults when path is None."""
    if path is None:
        return default_config(feature_gates=feature_gates)
    text = Path(path).read_text(encoding="utf-8")
    return config_from_dict(parse_document(text), feature_gates=feature_gates)


def default_config(*, feature_gates: Mapping[str, bool] | None = None) -> SchedulerConfig:
    """What kube-scheduler runs with when given no config file."""
    return config_from_dict({"apiVersion": API_VERSION, "kind": KIND}, feature_gates=feature_gates)


def config_from_dict(d: Any, *, feature_gates: Mapping[str, bool] | None = None) -> SchedulerConfig:
    """A KubeSchedulerConfiguration document (parsed JSON/YAML) decoded strictly, defaulted and validated.
    Raises ConfigError naming every problem found."""
    gates = {**DEFAULT_FEATURE_GATES, **(feature_gates or {})}
    _check_type_meta(d)
    res = DecodeResult()
    doc = decode(d, _CONFIG, "", res)
    if doc is not INVALID:
        _decode_plugin_args(doc, res)
    if res.errors or res.unknown:
        raise ConfigError(res.all_errors())
    cfg = _build(doc, gates)
    errs = validate_config(cfg, gates)
    if errs:
        raise ConfigError(errs)
    return cfg


def _check_type_meta(d: Any) -> None:
    if d is None:
        d = {}  # an empty document
    if not isinstance(d, dict):
        raise ConfigError([f"couldn't decode as {KIND}: expected an object, got {type(d).__name__}"])
    api_version, kind = d.get("apiVersion"), d.get("kind")
    if not kind:
        raise ConfigError(["Object 'Kind' is missing in the config"])
    if not api_version:
        raise ConfigError(["Object 'apiVersion' is missing in the config"])
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise ConfigError(["couldn't get version/kind: apiVersion and kind must be strings"])
    if api_version != API_VERSION or (kind != KIND and kind.removesuffix("Args") not in ARGS_SCHEMAS):
        raise ConfigError([f"no kind {go_quote(kind)} is registered for version {go_quote(api_version)}"])
    if kind != KIND:
        raise ConfigError([f"couldn't decode as {KIND}, got {API_VERSION}, Kind={kind}"])


def _decode_plugin_args(doc: dict[str, Any], res: DecodeResult) -> None:
    """Args of plugins whose args type the v1 scheme knows are decoded as that type (strictly); the others
    stay as given, as upstream keeps them as runtime.Unknown for out-of-tree plugins."""
    for i, prof in enumerate(doc.get("profiles") or []):
        if not isinstance(prof, dict):
            continue
        for j, pc in enumerate(prof.get("pluginConfig") or []):
            schema = ARGS_SCHEMAS.get(pc.get("name", "")) if isinstance(pc, dict) else None
            if schema is None:
                continue
            where = f".profiles[{i}].pluginConfig[{j}]"
            decoded = decode(pc.get("args", {}), schema, child(where[1:], "args"), res)
            if decoded is INVALID:
                continue
            api_version = decoded.pop("apiVersion", API_VERSION)
            kind = decoded.pop("kind", schema.name)
            if api_version != API_VERSION:
                res.errors.append(
                    f"decoding {where}: decoding args for plugin {pc['name']}: no kind {go_quote(schema.name)} "
                    f"is registered for version {go_quote(api_version)}"
                )
            elif kind != schema.name:
                res.errors.append(
                    f"decoding {where}: args for plugin {pc['name']} were not of type {schema.name}.{_GROUP}, "
                    f"got {kind}.{_GROUP}"
                )
            pc["args"] = decoded


# ---------------------------------------------------------------------------------------------------------
# Defaulting (SetDefaults_KubeSchedulerConfiguration and the component-base recommended defaults).


def _plugin_sets(raw: Mapping[str, Any]) -> dict[str, PluginSet]:
    return {
        point: PluginSet(
            enabled=[(p.get("name", ""), p.get("weight")) for p in raw.get(point, {}).get("enabled") or []],
            disabled=[p.get("name", "") for p in raw.get(point, {}).get("disabled") or []],
        )
        for point in EXTENSION_POINTS
    }


def _build_profile(raw: Mapping[str, Any], only_profile: bool, gates: Mapping[str, bool]) -> Profile:
    name = raw.get("schedulerName")
    if name is None:
        # Only a lone profile gets the default name; validation requires a name on every other one.
        name = DEFAULT_SCHEDULER_NAME if only_profile else ""
    custom = _plugin_sets(raw["plugins"]) if "plugins" in raw else None
    plugins = merge_plugins(default_plugins(gates), custom)
    configs: list[PluginConfig] = []
    for pc in raw.get("pluginConfig") or []:
        pname = pc.get("name", "")
        args = pc.get("args")
        if pname in ARGS_SCHEMAS:
            args = default_plugin_args(pname, args, gates)
        configs.append(PluginConfig(pname, args))
    existing = {pc.name for pc in configs}
    # Every enabled plugin with a known args type and no config gets its default args, sorted by name.
    enabled = sorted({n for ps in plugins.values() for n, _ in ps.enabled})
    for pname in enabled:
        if pname in ARGS_SCHEMAS and pname not in existing:
            configs.append(PluginConfig(pname, default_plugin_args(pname, None, gates)))
    return Profile(
        scheduler_name=name,
        percentage_of_nodes_to_score=raw.get("percentageOfNodesToScore"),
        plugins=plugins,
        plugin_config=configs,
    )


def _seconds(ns: int) -> float:
    return ns / 1_000_000_000


def _build(doc: Mapping[str, Any], gates: Mapping[str, bool]) -> SchedulerConfig:
    raw_profiles = doc.get("profiles") or [{}]
    le = doc.get("leaderElection", {})
    cc = doc.get("clientConnection", {})
    profiling = doc.get("enableProfiling", True)
    extenders = [
        Extender(
            url_prefix=x.get("urlPrefix", ""),
            filter_verb=x.get("filterVerb", ""),
            preempt_verb=x.get("preemptVerb", ""),
            prioritize_verb=x.get("prioritizeVerb", ""),
            weight=x.get("weight", 0),
            bind_verb=x.get("bindVerb", ""),
            enable_https=x.get("enableHTTPS", False),
            tls_config=x.get("tlsConfig"),
            http_timeout=_seconds(x.get("httpTimeout", 0)),
            node_cache_capable=x.get("nodeCacheCapable", False),
            managed_resources=[
                ExtenderManagedResource(m.get("name", ""), m.get("ignoredByScheduler", False))
                for m in x.get("managedResources") or []
            ],
            ignorable=x.get("ignorable", False),
        )
        for x in doc.get("extenders") or []
    ]
    return SchedulerConfig(
        parallelism=doc.get("parallelism", 16),
        leader_election=LeaderElection(
            leader_elect=le.get("leaderElect", True),
            # A zero duration counts as unset, as in upstream's recommended defaults.
            lease_duration=_seconds(le.get("leaseDuration") or 15_000_000_000),
            renew_deadline=_seconds(le.get("renewDeadline") or 10_000_000_000),
            retry_period=_seconds(le.get("retryPeriod") or 2_000_000_000),
            resource_lock=le.get("resourceLock") or "leases",
            resource_name=le.get("resourceName") or "kube-scheduler",
            resource_namespace=le.get("resourceNamespace") or "kube-system",
        ),
        client_connection=ClientConnection(
            kubeconfig=cc.get("kubeconfig", ""),
            accept_content_types=cc.get("acceptContentTypes", ""),
            content_type=cc.get("contentType") or "application/vnd.kubernetes.protobuf",
            qps=cc.get("qps") or 50.0,
            burst=cc.get("burst") or 100,
        ),
        enable_profiling=profiling,
        enable_contention_profiling=doc.get("enableContentionProfiling", profiling),
        percentage_of_nodes_to_score=doc.get("percentageOfNodesToScore", 0),
        pod_initial_backoff_seconds=doc.get("podInitialBackoffSeconds", 1),
        pod_max_backoff_seconds=doc.get("podMaxBackoffSeconds", 10),
        profiles=[_build_profile(p, len(raw_profiles) == 1, gates) for p in raw_profiles],
        extenders=extenders,
        delay_cache_until_active=doc.get("delayCacheUntilActive", False),
    )


# ---------------------------------------------------------------------------------------------------------
# The framework's plugin lists (NewFramework: updatePluginList, expandMultiPointPlugins, getScoreWeights).


def expand_plugins(
    plugin_set_by_point: Mapping[str, PluginSet],
    implements: Callable[[str, str], bool],
    *,
    registry: Collection[str] | None = None,
    scheduler_name: str | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """The plugins each extension point runs, in order, as (name, weight): the weight is the score weight at
    "score" and 0 elsewhere. `implements(name, point)` tells whether a plugin implements an extension point
    (camelCase names as in FRAMEWORK_POINTS). Given `registry` (the plugin names that exist), unknown names
    are errors; given `scheduler_name`, so are a QueueSort count other than one and no Bind plugin.

    As upstream: plugins named at a point come first as given (a plugin there that does not implement the
    point, or is named twice, is an error); MultiPoint plugins then go to every point they implement unless
    disabled there ("*" disables all MultiPoint plugins at that point); a plugin both named at a point and in
    MultiPoint keeps its explicit settings and moves ahead of the MultiPoint ones; one named twice in
    MultiPoint is an error. Score weights come from the Score entry, else the MultiPoint entry; 0 or unset
    means 1. Raises ConfigError with upstream's message."""

    def missing(kind: str, name: str) -> ConfigError:
        return ConfigError([f"{kind} {go_quote(name)} does not exist"])

    empty = PluginSet()
    out: dict[str, list[str]] = {}
    for point, kind in FRAMEWORK_POINTS.items():
        names: list[str] = []
        for name, _ in plugin_set_by_point.get(point, empty).enabled:
            if registry is not None and name not in registry:
                raise missing(kind, name)
            if not implements(name, point):
                raise ConfigError([f"plugin {go_quote(name)} does not extend {kind} plugin"])
            if name in names:
                raise ConfigError([f"plugin {go_quote(name)} already registered as {go_quote(kind)}"])
            names.append(name)
        out[point] = names

    multi = plugin_set_by_point.get("multiPoint", empty).enabled
    if multi:
        for point, kind in FRAMEWORK_POINTS.items():
            point_set = plugin_set_by_point.get(point, empty)
            disabled = set(point_set.disabled)
            if "*" in disabled:
                continue
            explicit = out[point]
            overrides: list[str] = []
            from_multi: list[str] = []
            for name, _ in multi:
                if registry is not None and name not in registry:
                    raise missing(kind, name)
                if not implements(name, point) or name in disabled:
                    continue
                if name in explicit:
                    # Explicit settings at the point win over MultiPoint's (e.g. re-weighting a default).
                    if name not in overrides:
                        overrides.append(name)
                    continue
                if name in from_multi:
                    raise ConfigError([f"plugin {go_quote(name)} already registered as {go_quote(kind)}"])
                from_multi.append(name)
            # Overridden plugins (in their explicit order), then MultiPoint's, then the other explicit ones.
            ordered = [n for n in explicit if n in overrides]
            out[point] = ordered + from_multi + [n for n in explicit if n not in overrides]

    if scheduler_name is not None:
        if len(out["queueSort"]) != 1:
            raise ConfigError(
                [
                    f"only one queue sort plugin required for profile with scheduler name {go_quote(scheduler_name)}, "
                    f"but got {len(out['queueSort'])}"
                ]
            )
        if not out["bind"]:
            raise ConfigError(
                [f"at least one bind plugin is needed for profile with scheduler name {go_quote(scheduler_name)}"]
            )

    weights: dict[str, int] = {}
    total = 0
    for name, weight in [*plugin_set_by_point.get("score", empty).enabled, *multi]:
        if name in weights or not implements(name, "score"):
            continue
        weights[name] = weight or 1
        if weights[name] * _MAX_NODE_SCORE > _MAX_TOTAL_SCORE - total:
            raise ConfigError(["total score of Score plugins could overflow"])
        total += weights[name] * _MAX_NODE_SCORE

    order = [p for p in EXTENSION_POINTS if p != "multiPoint"]
    return {p: [(n, weights.get(n, 1) if p == "score" else 0) for n in out[p]] for p in order}
