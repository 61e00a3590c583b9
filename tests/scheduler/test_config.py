"""KubeSchedulerConfiguration loading (pyk8s.scheduler.config): v1 defaults, plugin merging, MultiPoint
expansion, plugin args defaults and validation messages, re-expressed from upstream's v1 defaults tests,
default_plugins_test.go, validation tests and framework_test.go's MultiPoint expansion cases."""

from __future__ import annotations

import json
import textwrap

import pytest

from pyk8s.scheduler.config import (
    API_VERSION,
    KIND,
    ConfigError,
    PluginSet,
    config_from_dict,
    default_config,
    load_config,
)
from pyk8s.scheduler.config_decode import parse_document
from pyk8s.scheduler.config_defaults import (
    DEFAULT_MULTI_POINT,
)

HEADER = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"

# Which extension points the in-tree default plugins implement in v1.32 (upstream's ExpandedPluginsV1).
IMPLEMENTS: dict[str, set[str]] = {
    "SchedulingGates": {"preEnqueue"},
    "PrioritySort": {"queueSort"},
    "NodeUnschedulable": {"filter"},
    "NodeName": {"filter"},
    "TaintToleration": {"filter", "preScore", "score"},
    "NodeAffinity": {"preFilter", "filter", "preScore", "score"},
    "NodePorts": {"preFilter", "filter"},
    "NodeResourcesFit": {"preFilter", "filter", "preScore", "score"},
    "VolumeRestrictions": {"preFilter", "filter"},
    "NodeVolumeLimits": {"preFilter", "filter"},
    "VolumeBinding": {"preFilter", "filter", "reserve", "preScore", "score", "preBind"},
    "VolumeZone": {"preFilter", "filter"},
    "PodTopologySpread": {"preFilter", "filter", "preScore", "score"},
    "InterPodAffinity": {"preFilter", "filter", "preScore", "score"},
    "DefaultPreemption": {"postFilter"},
    "NodeResourcesBalancedAllocation": {"preScore", "score"},
    "ImageLocality": {"score"},
    "DefaultBinder": {"bind"},
    # Out-of-tree plugins used below.
    "CustomSort": {"queueSort"},
    "CustomScore": {"preScore", "score"},
    "CustomFilter": {"filter"},
}


def implements(name: str, point: str) -> bool:
    return point in IMPLEMENTS.get(name, set())


def load(text: str, **kw):
    return config_from_dict(parse_document(HEADER + textwrap.dedent(text)), **kw)


def expanded(text: str = "", profile: int = 0, **kw) -> dict[str, list[tuple[str, int]]]:
    cfg = load(text, **kw)
    return cfg.profiles[profile].expand(implements, registry=IMPLEMENTS)


DEFAULT_SCORE = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("VolumeBinding", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]
DEFAULT_PLUGIN_CONFIG = [
    ("DefaultPreemption", {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}),
    ("InterPodAffinity", {"hardPodAffinityWeight": 1}),
    ("NodeAffinity", {}),
    ("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            }
        },
    ),
    ("PodTopologySpread", {"defaultingType": "System"}),
    ("VolumeBinding", {"bindTimeoutSeconds": 600}),
]


def names(entries: list[tuple[str, int]]) -> list[str]:
    return [n for n, _ in entries]


# ---------------------------------------------------------------------------------------------------------
# Defaults.


def test_default_config_top_level():
    cfg = default_config()
    assert load_config(None) == cfg
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score == 0
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (True, 15.0, 10.0, 2.0)
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == ("leases", "kube-scheduler", "kube-system")
    cc = cfg.client_connection
    assert (cc.qps, cc.burst, cc.content_type) == (50.0, 100, "application/vnd.kubernetes.protobuf")
    assert cfg.enable_profiling and cfg.enable_contention_profiling
    assert cfg.extenders == [] and not cfg.delay_cache_until_active
    [prof] = cfg.profiles
    assert prof.scheduler_name == "default-scheduler"
    assert prof.percentage_of_nodes_to_score is None


def test_default_profile_plugins_and_args():
    prof = default_config().profiles[0]
    assert prof.plugins["multiPoint"] == PluginSet(enabled=list(DEFAULT_MULTI_POINT))
    assert names(prof.plugins["multiPoint"].enabled)[:2] == ["SchedulingGates", "PrioritySort"]
    assert all(prof.plugins[p] == PluginSet() for p in prof.plugins if p != "multiPoint")
    assert [(pc.name, pc.args) for pc in prof.plugin_config] == DEFAULT_PLUGIN_CONFIG
    assert prof.plugin_args["VolumeBinding"] == {"bindTimeoutSeconds": 600}


def test_default_profile_expanded():
    got = default_config().profiles[0].expand(implements, registry=IMPLEMENTS)
    assert got["score"] == DEFAULT_SCORE
    assert names(got["preEnqueue"]) == ["SchedulingGates"]
    assert names(got["queueSort"]) == ["PrioritySort"]
    assert names(got["preFilter"]) == [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ]
    assert names(got["filter"]) == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ]
    assert names(got["postFilter"]) == ["DefaultPreemption"]
    assert names(got["preScore"]) == [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ]
    assert got["reserve"] == got["preBind"] == [("VolumeBinding", 0)]
    assert got["bind"] == [("DefaultBinder", 0)]
    assert got["permit"] == got["postBind"] == []


def test_dynamic_resources_gate_inserts_before_default_preemption():
    cfg = default_config(feature_gates={"DynamicResourceAllocation": True})
    mp = names(cfg.profiles[0].plugins["multiPoint"].enabled)
    assert mp[mp.index("DynamicResources") + 1] == "DefaultPreemption"


@pytest.mark.parametrize(
    ("text", "check"),
    [
        ("parallelism: 4\n", lambda c: c.parallelism == 4),
        ("percentageOfNodesToScore: 30\n", lambda c: c.percentage_of_nodes_to_score == 30),
        # A zero duration is unset (component-base's recommended defaults).
        ("leaderElection: {leaseDuration: 0s, renewDeadline: 3s}\n", lambda c: c.leader_election.lease_duration == 15),
        (
            "leaderElection: {leaseDuration: 1m30s, renewDeadline: 1.5s}\n",
            lambda c: c.leader_election.lease_duration == 90,
        ),
        (
            "leaderElection: {leaderElect: false, resourceLock: endpoints}\n",
            lambda c: not c.leader_election.leader_elect,
        ),
        (
            "clientConnection: {qps: 0, burst: 0, kubeconfig: /k}\n",
            lambda c: (c.client_connection.qps, c.client_connection.burst) == (50, 100),
        ),
        ("enableProfiling: false\n", lambda c: not c.enable_contention_profiling),
        ("delayCacheUntilActive: true\n", lambda c: c.delay_cache_until_active),
        ("profiles: []\n", lambda c: [p.scheduler_name for p in c.profiles] == ["default-scheduler"]),
        ("profiles: [{percentageOfNodesToScore: 0}]\n", lambda c: c.profiles[0].percentage_of_nodes_to_score == 0),
        ("profiles: [{schedulerName: custom}]\n", lambda c: c.profiles[0].scheduler_name == "custom"),
        (
            "extenders: [{urlPrefix: 'http://x', prioritizeVerb: p, weight: 2, httpTimeout: 100ms}]\n",
            lambda c: (c.extenders[0].http_timeout, c.extenders[0].weight) == (0.1, 2),
        ),
        (
            "extenders: [{urlPrefix: 'http://x', filterVerb: f}]\n",
            lambda c: c.extenders[0].effective_http_timeout == 5.0,
        ),
    ],
)
def test_top_level_settings(text, check):
    assert check(load(text))


# ---------------------------------------------------------------------------------------------------------
# Profiles' plugins.


def test_disable_default_score_plugin():
    text = """
    profiles:
    - plugins:
        score:
          disabled: [{name: ImageLocality}, {name: NodeResourcesBalancedAllocation}]
    """
    prof = load(text).profiles[0]
    assert prof.plugins["score"] == PluginSet([], ["ImageLocality", "NodeResourcesBalancedAllocation"])
    assert prof.plugins["multiPoint"].enabled == list(DEFAULT_MULTI_POINT)
    got = expanded(text)
    assert got["score"] == [
        p for p in DEFAULT_SCORE if p[0] not in ("ImageLocality", "NodeResourcesBalancedAllocation")
    ]
    # Only the Score point is affected: the PreScore half of the plugin still runs.
    assert "NodeResourcesBalancedAllocation" in names(got["preScore"])


def test_disable_all_default_score_plugins():
    got = expanded("profiles: [{plugins: {score: {disabled: [{name: '*'}], enabled: [{name: CustomScore}]}}}]\n")
    assert got["score"] == [("CustomScore", 1)]
    # Enabled at Score only, so it does not run at PreScore; the defaults' PreScore halves still do.
    assert "CustomScore" not in names(got["preScore"])
    assert "TaintToleration" in names(got["preScore"])


def test_custom_weight_on_score_point_moves_plugin_first():
    got = expanded("profiles: [{plugins: {score: {enabled: [{name: NodeAffinity, weight: 5}]}}}]\n")
    assert got["score"][0] == ("NodeAffinity", 5)
    assert sorted(got["score"][1:]) == sorted(p for p in DEFAULT_SCORE if p[0] != "NodeAffinity")


def test_custom_weight_through_multi_point_keeps_position():
    text = "profiles: [{plugins: {multiPoint: {enabled: [{name: ImageLocality, weight: 7}, {name: CustomScore, weight: 4}]}}}]\n"
    prof = load(text).profiles[0]
    assert prof.plugins["multiPoint"].enabled[-2:] == [("DefaultBinder", None), ("CustomScore", 4)]
    assert ("ImageLocality", 7) in prof.plugins["multiPoint"].enabled
    got = expanded(text)
    assert got["score"] == [*DEFAULT_SCORE[:-1], ("ImageLocality", 7), ("CustomScore", 4)]


def test_explicit_score_entry_without_weight_gets_one():
    # The explicit Score entry wins over MultiPoint's weight 3, and an unset weight means 1.
    got = expanded("profiles: [{plugins: {score: {enabled: [{name: TaintToleration}]}}}]\n")
    assert got["score"][0] == ("TaintToleration", 1)


def test_multi_point_disable_all_then_enable_some():
    text = """
    profiles:
    - plugins:
        multiPoint:
          disabled: [{name: '*'}]
          enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: NodeName}, {name: ImageLocality, weight: 3}]
    """
    prof = load(text).profiles[0]
    assert prof.plugins["multiPoint"] == PluginSet(
        [("PrioritySort", None), ("DefaultBinder", None), ("NodeName", None), ("ImageLocality", 3)], ["*"]
    )
    # Only plugins still enabled get default args: none of these has an args type.
    assert prof.plugin_config == []
    got = expanded(text)
    assert got["filter"] == [("NodeName", 0)]
    assert got["score"] == [("ImageLocality", 3)]


def test_disable_plugin_in_multi_point_drops_its_default_args():
    prof = load("profiles: [{plugins: {multiPoint: {disabled: [{name: VolumeBinding}]}}}]\n").profiles[0]
    assert "VolumeBinding" not in names(prof.plugins["multiPoint"].enabled)
    assert "VolumeBinding" not in prof.plugin_args
    assert "VolumeBinding" not in names(
        expanded("profiles: [{plugins: {multiPoint: {disabled: [{name: VolumeBinding}]}}}]\n")["filter"]
    )


def test_two_profiles():
    text = """
    profiles:
    - schedulerName: default-scheduler
    - schedulerName: no-scoring-scheduler
      plugins:
        preScore: {disabled: [{name: '*'}]}
        score: {disabled: [{name: '*'}]}
    """
    cfg = load(text)
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler", "no-scoring-scheduler"]
    assert cfg.profile("no-scoring-scheduler") is cfg.profiles[1]
    assert expanded(text, 0)["score"] == DEFAULT_SCORE
    second = expanded(text, 1)
    assert second["score"] == second["preScore"] == []
    assert names(second["filter"]) == names(expanded(text, 0)["filter"])


# ---------------------------------------------------------------------------------------------------------
# pluginConfig.


def test_plugin_args_defaults_merged_with_user_args():
    text = """
    profiles:
    - pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources: [{name: cpu}, {name: nvidia.com/gpu, weight: 5}]
      - name: DefaultPreemption
        args: {minCandidateNodesPercentage: 50}
      - name: CustomScore
        args: {anything: [1, 2], goes: true}
    """
    prof = load(text).profiles[0]
    got = [(pc.name, pc.args) for pc in prof.plugin_config]
    assert got[:3] == [
        (
            "NodeResourcesFit",
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 5}],
                }
            },
        ),
        ("DefaultPreemption", {"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 100}),
        ("CustomScore", {"anything": [1, 2], "goes": True}),
    ]
    # The remaining enabled plugins' defaults follow, sorted by name.
    assert got[3:] == [c for c in DEFAULT_PLUGIN_CONFIG if c[0] not in ("NodeResourcesFit", "DefaultPreemption")]


@pytest.mark.parametrize(
    ("name", "args", "want", "gates"),
    [
        (
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated"}},
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                }
            },
            None,
        ),
        (
            "NodeResourcesFit",
            {"ignoredResources": ["foo"]},
            {
                "ignoredResources": ["foo"],
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                },
            },
            None,
        ),
        (
            "NodeResourcesBalancedAllocation",
            {"resources": [{"name": "cpu", "weight": 0}, {"name": "x.io/y"}]},
            {"resources": [{"name": "cpu", "weight": 1}, {"name": "x.io/y", "weight": 1}]},
            None,
        ),
        ("InterPodAffinity", {"hardPodAffinityWeight": 0}, {"hardPodAffinityWeight": 0}, None),
        ("PodTopologySpread", {"defaultingType": "List"}, {"defaultingType": "List"}, None),
        ("VolumeBinding", {"bindTimeoutSeconds": 0}, {"bindTimeoutSeconds": 0}, None),
        (
            "VolumeBinding",
            {},
            {"bindTimeoutSeconds": 600, "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
            {"VolumeCapacityPriority": True},
        ),
        # apiVersion/kind inside args are accepted and dropped.
        (
            "InterPodAffinity",
            {"apiVersion": API_VERSION, "kind": "InterPodAffinityArgs"},
            {"hardPodAffinityWeight": 1},
            None,
        ),
        ("NodeAffinity", None, {}, None),
    ],
)
def test_plugin_args_defaults(name, args, want, gates):
    pc = {"name": name} if args is None else {"name": name, "args": args}
    cfg = config_from_dict(
        {"apiVersion": API_VERSION, "kind": KIND, "profiles": [{"pluginConfig": [pc]}]}, feature_gates=gates
    )
    assert cfg.profiles[0].plugin_args[name] == want


# ---------------------------------------------------------------------------------------------------------
# Errors: each names its field, with upstream's wording.

ARGS = "profiles[0].pluginConfig[0].args"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # Decoding.
        ("foo: 1\n", ['strict decoding error: unknown field "foo"']),
        (
            "profiles: [{plugins: {score: {enable: []}}}]\n",
            ['strict decoding error: unknown field "profiles[0].plugins.score.enable"'],
        ),
        (
            "profiles: [{pluginConfig: [{name: InterPodAffinity, args: {hardPodAffinityWeigth: 2}}]}]\n",
            [f'strict decoding error: unknown field "{ARGS}.hardPodAffinityWeigth"'],
        ),
        (
            "profiles: [{plugins: {score: {enabled: [{name: A, weight: 1}, {name: B, weight: high}]}}}]\n",
            ['profiles[0].plugins.score.enabled[1].weight: Invalid value: "high": expected int32, got string'],
        ),
        ("parallelism: 1.5\n", ["parallelism: Invalid value: 1.5: expected int32, got number"]),
        ("parallelism: 3000000000\n", ["parallelism: Invalid value: 3000000000: number out of range for int32"]),
        (
            "leaderElection: {leaderElect: 'yes please'}\n",
            ['leaderElection.leaderElect: Invalid value: "yes please": expected bool, got string'],
        ),
        (
            "leaderElection: {leaseDuration: 15}\n",
            ["leaderElection.leaseDuration: Invalid value: 15: expected duration string, got number"],
        ),
        (
            "leaderElection: {leaseDuration: abc}\n",
            ['leaderElection.leaseDuration: Invalid value: "abc": time: invalid duration "abc"'],
        ),
        (
            "extenders: [{httpTimeout: 5x}]\n",
            ['extenders[0].httpTimeout: Invalid value: "5x": time: unknown unit "x" in duration "5x"'],
        ),
        (
            "profiles: {schedulerName: x}\n",
            ['profiles: Invalid value: {"schedulerName": "x"}: expected array, got object'],
        ),
        (
            "profiles: [{schedulerName: 5}]\n",
            ["profiles[0].schedulerName: Invalid value: 5: expected string, got number"],
        ),
        (
            "profiles: [{pluginConfig: [{name: VolumeBinding, args: [1]}]}]\n",
            [f"{ARGS}: Invalid value: [1]: expected object, got array"],
        ),
        (
            "profiles: [{pluginConfig: [{name: InterPodAffinity, args: {kind: VolumeBindingArgs}}]}]\n",
            [
                "decoding .profiles[0].pluginConfig[0]: args for plugin InterPodAffinity were not of type InterPodAffinityArgs.kubescheduler.config.k8s.io, got VolumeBindingArgs.kubescheduler.config.k8s.io"
            ],
        ),
        # Top level.
        ("parallelism: 0\n", ["parallelism: Invalid value: 0: should be an integer value greater than zero"]),
        (
            "percentageOfNodesToScore: 101\n",
            ["percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"],
        ),
        (
            "profiles: [{percentageOfNodesToScore: -1}]\n",
            ["profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"],
        ),
        ("podInitialBackoffSeconds: 0\n", ["podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"]),
        (
            "podMaxBackoffSeconds: 0\n",
            ["podMaxBackoffSeconds: Invalid value: 0: must be greater than or equal to PodInitialBackoffSeconds"],
        ),
        (
            "podInitialBackoffSeconds: 20\n",
            ["podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to PodInitialBackoffSeconds"],
        ),
        ("clientConnection: {burst: -1}\n", ["clientConnection.burst: Invalid value: -1: must be non-negative"]),
        (
            "leaderElection: {leaseDuration: 5s}\n",
            ["leaderElection.leaseDuration: Invalid value: 10s: must be greater than `RenewDeadline`"],
        ),
        (
            "leaderElection: {retryPeriod: -1s}\n",
            ["leaderElection.retryPeriod: Invalid value: -1s: must be greater than zero"],
        ),
        (
            "leaderElection: {resourceLock: endpoints}\n",
            ['leaderElection.resourceLock: Invalid value: "endpoints": resourceLock value must be "leases"'],
        ),
        # Profiles.
        ("profiles: [{schedulerName: a}, {}]\n", ["profiles[1].schedulerName: Required value"]),
        ("profiles: [{schedulerName: ''}]\n", ["profiles[0].schedulerName: Required value"]),
        (
            "profiles: [{schedulerName: a}, {schedulerName: b}, {schedulerName: a}]\n",
            ["profiles[2].schedulerName: Duplicate value: profiles[0].schedulerName"],
        ),
        (
            "profiles: [{schedulerName: a}, {schedulerName: b, plugins: {queueSort: {enabled: [{name: CustomSort}], disabled: [{name: '*'}]}}}]\n",
            [
                'profiles[1].plugins.queueSort: Invalid value: config.PluginSet{Enabled:[]config.Plugin{config.Plugin{Name:"CustomSort", Weight:0}}, Disabled:[]config.Plugin{config.Plugin{Name:"*", Weight:0}}}: must be the same for all profiles'
            ],
        ),
        (
            "profiles: [{schedulerName: a, plugins: {queueSort: {enabled: [{name: CustomSort}, {name: PrioritySort}]}}}]\n",
            ["profiles[0].plugins.queueSort.Enabled: Invalid value: 2: only one queue sort plugin can be enabled"],
        ),
        (
            "profiles: [{schedulerName: a, plugins: {queueSort: {enabled: [{name: CustomSort}]}}, pluginConfig: [{name: CustomSort, args: {x: 1}}]},"
            " {schedulerName: b, plugins: {queueSort: {enabled: [{name: CustomSort}]}}, pluginConfig: [{name: CustomSort, args: {x: 2}}]}]\n",
            ['profiles[1].pluginConfig.args: Invalid value: {"x":2}: queueSort must be the same for all profiles'],
        ),
        (
            "profiles: [{pluginConfig: [{name: VolumeBinding}, {name: VolumeBinding, args: {bindTimeoutSeconds: 5}}]}]\n",
            ['profiles[0].pluginConfig[1]: Duplicate value: "VolumeBinding"'],
        ),
        (
            "profiles: [{plugins: {filter: {enabled: [{name: CustomFilter}, {name: EBSLimits}]}}, pluginConfig: [{name: GCEPDLimits}]}]\n",
            [
                'profiles[0].plugins.filter.enabled[1]: Invalid value: "EBSLimits": was invalid in version "kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")',
                'profiles[0].pluginConfig[0]: Invalid value: "GCEPDLimits": was invalid in version "kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")',
            ],
        ),
        # Extenders.
        (
            "extenders: [{urlPrefix: 'http://x', prioritizeVerb: p}]\n",
            ["extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"],
        ),
        (
            "extenders: [{urlPrefix: 'http://x', bindVerb: b}, {urlPrefix: 'http://y', bindVerb: b}]\n",
            ['extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'],
        ),
        (
            "extenders: [{urlPrefix: 'http://x', managedResources: [{name: example.com/foo}, {name: cpu}]}, {urlPrefix: 'http://y', managedResources: [{name: example.com/foo}]}]\n",
            [
                'extenders[0].managedResources[1].name: Invalid value: "cpu": is an invalid extended resource name',
                'extenders[1].managedResources[0].name: Invalid value: "example.com/foo": duplicate extender managed resource name',
            ],
        ),
    ],
)
def test_errors(text, want):
    with pytest.raises(ConfigError) as exc:
        load(text)
    assert exc.value.errors == want
    assert str(exc.value) == (want[0] if len(want) == 1 else "[" + ", ".join(want) + "]")
    assert isinstance(exc.value, ValueError)


def test_all_errors_are_joined():
    with pytest.raises(ConfigError) as exc:
        load("parallelism: -1\npercentageOfNodesToScore: 200\nextenders: [{prioritizeVerb: p}]\n")
    assert str(exc.value) == (
        "[parallelism: Invalid value: -1: should be an integer value greater than zero, "
        "percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100], "
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it]"
    )


def test_unknown_fields_listed_together():
    with pytest.raises(ConfigError) as exc:
        load("foo: 1\nprofiles: [{bar: 2}]\n")
    assert exc.value.errors == ['strict decoding error: unknown field "foo", unknown field "profiles[0].bar"']


def test_shape_allowed_with_volume_capacity_priority():
    gates = {"VolumeCapacityPriority": True}
    cfg = load(
        "profiles: [{pluginConfig: [{name: VolumeBinding, args: {shape: [{utilization: 0, score: 10}]}}]}]\n",
        feature_gates=gates,
    )
    assert cfg.profiles[0].plugin_args["VolumeBinding"]["shape"] == [{"utilization": 0, "score": 10}]
    with pytest.raises(ConfigError, match=r"args\.shape\[0\]\.score: Invalid value: 11: not in valid range \[0, 10\]"):
        load(
            "profiles: [{pluginConfig: [{name: VolumeBinding, args: {shape: [{utilization: 0, score: 11}]}}]}]\n",
            feature_gates=gates,
        )


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        (
            {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND},
            'no kind "KubeSchedulerConfiguration" is registered for version "kubescheduler.config.k8s.io/v1beta3"',
        ),
        (
            {"apiVersion": API_VERSION, "kind": "SchedulerConfig"},
            'no kind "SchedulerConfig" is registered for version "kubescheduler.config.k8s.io/v1"',
        ),
        (
            {"apiVersion": API_VERSION, "kind": "NodeResourcesFitArgs"},
            "couldn't decode as KubeSchedulerConfiguration, got kubescheduler.config.k8s.io/v1, Kind=NodeResourcesFitArgs",
        ),
        ({"apiVersion": API_VERSION}, "Object 'Kind' is missing in the config"),
        ({"kind": KIND}, "Object 'apiVersion' is missing in the config"),
        ([1], "couldn't decode as KubeSchedulerConfiguration: expected an object, got list"),
    ],
)
def test_type_meta(doc, want):
    with pytest.raises(ConfigError) as exc:
        config_from_dict(doc)
    assert str(exc.value) == want


# ---------------------------------------------------------------------------------------------------------
# Files.


def test_load_yaml_and_json_files(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text(
        HEADER + "parallelism: 8\nprofiles:\n- schedulerName: s\n  plugins: {score: {disabled: [{name: '*'}]}}\n"
    )
    j = tmp_path / "c.json"
    j.write_text(
        json.dumps(
            {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "parallelism": 8,
                "profiles": [{"schedulerName": "s", "plugins": {"score": {"disabled": [{"name": "*"}]}}}],
            }
        )
    )
    assert load_config(str(y)) == load_config(str(j))
    assert load_config(str(y)).profiles[0].plugins["score"].disabled == ["*"]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (HEADER + "parallelism: 1\nparallelism: 2\n", 'line 4: key "parallelism" already set in map'),
        (
            f'{{"apiVersion": "{API_VERSION}", "kind": "{KIND}", "parallelism": 1, "parallelism": 2}}',
            'strict decoding error: duplicate field "parallelism"',
        ),
        (HEADER + "profiles: [\n", "error converting YAML to JSON"),
        ("", "Object 'Kind' is missing"),
    ],
)
def test_file_errors(tmp_path, text, want):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=want.replace("[", r"\[")):
        load_config(str(f))


def test_yaml_dates_and_integral_floats():
    # Dates stay strings (JSON has no dates); YAML 2.0 reaches an integer field as 2.
    cfg = load("parallelism: 2.0\nprofiles: [{schedulerName: 2024-01-01}]\n")
    assert cfg.parallelism == 2 and cfg.profiles[0].scheduler_name == "2024-01-01"
