"""Plugin settings of the scheduler config (pyk8s.scheduler.config): plugin args validation, upstream's
mergePluginSet cases (default_plugins_test.go), the framework's MultiPoint expansion (framework_test.go's
expansion cases, re-expressed) and Go durations."""

from __future__ import annotations

import json
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api.duration import format_go_duration, parse_go_duration
from pyk8s.scheduler.config import API_VERSION, KIND, ConfigError, PluginSet, config_from_dict, expand_plugins
from pyk8s.scheduler.config_decode import parse_document
from pyk8s.scheduler.config_defaults import merge_plugin_set, validate_node_resources_fit_args

HEADER = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"
ARGS = "profiles[0].pluginConfig[0].args"


def load(text: str, **kw):
    return config_from_dict(parse_document(HEADER + textwrap.dedent(text)), **kw)


# ---------------------------------------------------------------------------------------------------------
# Plugin args validation.


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}}]}]\n",
            [
                f"{ARGS}.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                f"{ARGS}.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
            ],
        ),
        (
            "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercentage: 101, minCandidateNodesAbsolute: -1}}]}]\n",
            [
                f"{ARGS}.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
                f"{ARGS}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
            ],
        ),
        (
            "profiles: [{pluginConfig: [{name: InterPodAffinity, args: {hardPodAffinityWeight: 101}}]}]\n",
            [f"{ARGS}.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"],
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeResourcesBalancedAllocation, args: {resources: [{name: cpu, weight: 2}, {name: cpu}]}}]}]\n",
            [
                f"{ARGS}.resources[0].weight: Invalid value: 2: must be 1",
                f'{ARGS}.resources[1].name: Duplicate value: "cpu"',
            ],
        ),
        (
            "profiles: [{pluginConfig: [{name: VolumeBinding, args: {bindTimeoutSeconds: -1}}]}]\n",
            [
                f"{ARGS}.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value"
            ],
        ),
        (
            "profiles: [{pluginConfig: [{name: VolumeBinding, args: {shape: [{utilization: 0, score: 0}]}}]}]\n",
            [
                f"{ARGS}.shape: Invalid value: []config.UtilizationShapePoint{{config.UtilizationShapePoint{{Utilization:0, Score:0}}}}: unexpected field `shape`, remove it or turn on the feature gate VolumeCapacityPriority"
            ],
        ),
        (
            "profiles: [{pluginConfig: [{name: PodTopologySpread, args: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}}]}]\n",
            [f'{ARGS}.defaultingType: Invalid value: "System": when .defaultConstraints are not empty'],
        ),
        (
            "profiles: [{pluginConfig: [{name: PodTopologySpread, args: {defaultingType: List, defaultConstraints: ["
            "{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}},"
            " {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule},"
            " {maxSkew: 1, topologyKey: '', whenUnsatisfiable: Maybe}]}}]}]\n",
            [
                f"{ARGS}.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
                f"{ARGS}.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod",
                f'{ARGS}.defaultConstraints[1]: Duplicate value: "{{zone, DoNotSchedule}}"',
                f"{ARGS}.defaultConstraints[2].topologyKey: Required value: can not be empty",
                f'{ARGS}.defaultConstraints[2].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"',
            ],
        ),
        (
            "profiles: [{pluginConfig: [{name: PodTopologySpread, args: {defaultingType: Auto}}]}]\n",
            [f'{ARGS}.defaultingType: Unsupported value: "Auto": supported values: "System", "List"'],
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeAffinity, args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: ["
            "{matchExpressions: [{key: zone, operator: Near}, {key: zone, operator: In}]},"
            " {matchFields: [{key: metadata.name, operator: Exists}]}]}}}}]}]\n",
            [
                f'{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
                f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
                f'{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchFields[0].operator: Unsupported value: "Exists": supported values: "In", "NotIn"',
            ],
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeAffinity, args: {addedAffinity: {preferredDuringSchedulingIgnoredDuringExecution: ["
            "{weight: 1, preference: {matchExpressions: [{key: gen, operator: Gt, values: [a]}]}},"
            " {weight: 0, preference: {matchExpressions: [{key: gen, operator: Gt, values: [a]}]}}]}}}]}]\n",
            [
                f"{ARGS}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchExpressions[0].values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
            ],
        ),
    ],
)
def test_plugin_args_errors(text, want):
    with pytest.raises(ConfigError) as exc:
        load(text)
    assert exc.value.errors == want


def test_node_resources_fit_args_checked_by_plugin_not_config():
    # Upstream's config validation files NodeResourcesFit's check under a wrong key; the plugin checks.
    args = {"scoringStrategy": {"type": "Foo", "resources": [{"name": "cpu", "weight": 101}]}}
    cfg = load(f"profiles: [{{pluginConfig: [{{name: NodeResourcesFit, args: {json.dumps(args)}}}]}}]\n")
    got = [str(x) for x in validate_node_resources_fit_args(cfg.profiles[0].plugin_args["NodeResourcesFit"])]
    assert got == [
        'scoringStrategy.type: Unsupported value: "Foo": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        "scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
    ]


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 1}]}},
            [
                "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio"
            ],
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {}}},
            [
                "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"
            ],
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11}, {"utilization": 40}]},
                }
            },
            [
                "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 40: values must be sorted in increasing order",
                "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
            ],
        ),
        (
            {"ignoredResourceGroups": ["example.com/x"], "scoringStrategy": {"type": "MostAllocated"}},
            ["ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group name can't contain '/'"],
        ),
        ({}, ["scoringStrategy: Required value: ScoringStrategy field is required"]),
    ],
)
def test_validate_node_resources_fit_args(args, want):
    assert [str(x) for x in validate_node_resources_fit_args(args)] == want


# ---------------------------------------------------------------------------------------------------------
# mergePluginSet (default_plugins_test.go's cases).


def ps(enabled=(), disabled=()):
    return PluginSet([(e, None) if isinstance(e, str) else e for e in enabled], list(disabled))


@pytest.mark.parametrize(
    ("default", "custom", "want"),
    [
        (ps(["D1", "D2"]), ps(["C"]), ps(["D1", "D2", "C"])),
        (ps(["D1", "D2"]), ps(["C", "D2"], ["D2"]), ps(["D1", "C", "D2"], ["D2"])),
        (ps(["D1", "D2"]), ps(["C", "D1", "D2"], ["*"]), ps(["C", "D1", "D2"], ["*"])),
        (ps(["D1", "D2"]), ps(["D2", "D1"], ["*"]), ps(["D2", "D1"], ["*"])),
        (ps(["P1", "P2", "P3"]), ps([("P1", 2), ("P3", 3)]), ps([("P1", 2), "P2", ("P3", 3)])),
        (ps(["P1", "P2", "P3"]), ps([("P2", 2), ("P1", 1)]), ps([("P1", 1), ("P2", 2), "P3"])),
        # A repeated custom plugin: the last one replaces the default, the other is appended.
        (ps(["P1", "P2", "P3"]), ps(["P1", ("P2", 2), "P3", ("P2", 4)]), ps(["P1", ("P2", 4), "P3", ("P2", 2)])),
        (ps(["D1", "D2"]), ps(["C1", "C2"], ["D2"]), ps(["D1", "C1", "C2"], ["D2"])),
        (ps(["D"], ["D2"]), ps(["C"]), ps(["D", "C"], ["D2"])),
        (ps(["D"]), ps([], ["D"]), ps([], ["D"])),
    ],
)
def test_merge_plugin_set(default, custom, want):
    assert merge_plugin_set(default, custom) == want


# ---------------------------------------------------------------------------------------------------------
# expand_plugins (framework_test.go's MultiPoint expansion cases).

ALL_POINTS = [
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
]
TEST_IMPL = {
    "TestPlugin": set(ALL_POINTS),
    "ScorePlugin1": {"preScore", "score"},
    "ScorePlugin2": {"score"},
    "ScoreWithNormalize1": {"score"},
    "QueueSort": {"queueSort"},
    "Bind": {"bind"},
}


def fake_implements(name: str, point: str) -> bool:
    return point in TEST_IMPL.get(name, set())


def everywhere(name: str, score_weight: int = 1) -> dict[str, list[tuple[str, int]]]:
    return {p: [(name, score_weight if p == "score" else 0)] for p in ALL_POINTS}


@pytest.mark.parametrize(
    ("sets", "want"),
    [
        ({"multiPoint": ps([("TestPlugin", 5)])}, everywhere("TestPlugin", 5)),
        (
            {"multiPoint": ps(["TestPlugin"]), "preScore": ps([], ["TestPlugin"]), "score": ps([], ["TestPlugin"])},
            {**everywhere("TestPlugin"), "preScore": [], "score": []},
        ),
        (
            {"multiPoint": ps(["TestPlugin", "ScorePlugin1"])},
            {
                **everywhere("TestPlugin"),
                "preScore": [("TestPlugin", 0), ("ScorePlugin1", 0)],
                "score": [("TestPlugin", 1), ("ScorePlugin1", 1)],
            },
        ),
        (
            {"multiPoint": ps(["TestPlugin", "ScorePlugin1"]), "preScore": ps([], ["*"])},
            {**everywhere("TestPlugin"), "preScore": [], "score": [("TestPlugin", 1), ("ScorePlugin1", 1)]},
        ),
        (
            {
                "multiPoint": ps(["ScoreWithNormalize1", "TestPlugin", "ScorePlugin1"]),
                "score": ps(["ScorePlugin1", "TestPlugin"]),
            },
            {
                **everywhere("TestPlugin"),
                "preScore": [("TestPlugin", 0), ("ScorePlugin1", 0)],
                "score": [("ScorePlugin1", 1), ("TestPlugin", 1), ("ScoreWithNormalize1", 1)],
            },
        ),
        (
            {
                "multiPoint": ps(["TestPlugin", "ScorePlugin1"]),
                "score": ps(["ScoreWithNormalize1", "ScorePlugin1", "TestPlugin"]),
            },
            {
                **everywhere("TestPlugin"),
                "preScore": [("TestPlugin", 0), ("ScorePlugin1", 0)],
                "score": [("ScorePlugin1", 1), ("TestPlugin", 1), ("ScoreWithNormalize1", 1)],
            },
        ),
        (
            {"multiPoint": ps(["TestPlugin", "ScorePlugin1"]), "score": ps([("ScorePlugin1", 5), ("TestPlugin", 3)])},
            {
                **everywhere("TestPlugin"),
                "preScore": [("TestPlugin", 0), ("ScorePlugin1", 0)],
                "score": [("ScorePlugin1", 5), ("TestPlugin", 3)],
            },
        ),
        (
            {"multiPoint": ps(["QueueSort", "Bind", "ScorePlugin1"], ["*"])},
            {
                **{p: [] for p in ALL_POINTS},
                "queueSort": [("QueueSort", 0)],
                "bind": [("Bind", 0)],
                "preScore": [("ScorePlugin1", 0)],
                "score": [("ScorePlugin1", 1)],
            },
        ),
        (
            {
                "multiPoint": ps(["TestPlugin", "ScorePlugin1"]),
                "score": ps([("ScorePlugin1", 5), ("ScorePlugin2", 5), ("TestPlugin", 3)]),
            },
            {
                **everywhere("TestPlugin"),
                "preScore": [("TestPlugin", 0), ("ScorePlugin1", 0)],
                "score": [("ScorePlugin1", 5), ("TestPlugin", 3), ("ScorePlugin2", 5)],
            },
        ),
        # No MultiPoint: the explicit lists as given.
        (
            {"score": ps([("ScorePlugin2", 0)]), "queueSort": ps(["QueueSort"]), "bind": ps(["Bind"])},
            {
                **{p: [] for p in ALL_POINTS},
                "queueSort": [("QueueSort", 0)],
                "bind": [("Bind", 0)],
                "score": [("ScorePlugin2", 1)],
            },
        ),
    ],
)
def test_expand_plugins(sets, want):
    assert expand_plugins(sets, fake_implements, registry=TEST_IMPL) == want


@pytest.mark.parametrize(
    ("sets", "kw", "want"),
    [
        (
            {"multiPoint": ps(["TestPlugin", "TestPlugin"])},
            {},
            'plugin "TestPlugin" already registered as "PreFilterPlugin"',
        ),
        ({"filter": ps(["TestPlugin", "TestPlugin"])}, {}, 'plugin "TestPlugin" already registered as "FilterPlugin"'),
        ({"filter": ps(["ScorePlugin1"])}, {}, 'plugin "ScorePlugin1" does not extend FilterPlugin plugin'),
        ({"filter": ps(["Nope"])}, {"registry": TEST_IMPL}, 'FilterPlugin "Nope" does not exist'),
        ({"multiPoint": ps(["Nope"])}, {"registry": TEST_IMPL}, 'PreFilterPlugin "Nope" does not exist'),
        (
            {"multiPoint": ps(["Bind"])},
            {"scheduler_name": "s"},
            'only one queue sort plugin required for profile with scheduler name "s", but got 0',
        ),
        (
            {"multiPoint": ps(["QueueSort"])},
            {"scheduler_name": "s"},
            'at least one bind plugin is needed for profile with scheduler name "s"',
        ),
        ({"score": ps([("ScorePlugin2", 2**62)])}, {}, "total score of Score plugins could overflow"),
    ],
)
def test_expand_plugins_errors(sets, kw, want):
    with pytest.raises(ConfigError) as exc:
        expand_plugins(sets, fake_implements, **kw)
    assert str(exc.value) == want


def test_expand_unknown_multi_point_plugin_without_registry_is_skipped():
    assert expand_plugins({"multiPoint": ps(["Nope", "Bind"])}, fake_implements)["bind"] == [("Bind", 0)]


# ---------------------------------------------------------------------------------------------------------
# Go durations.


@pytest.mark.parametrize(
    ("text", "ns", "shown"),
    [
        ("15s", 15_000_000_000, "15s"),
        ("1m30s", 90_000_000_000, "1m30s"),
        ("1h", 3_600_000_000_000, "1h0m0s"),
        ("1.5s", 1_500_000_000, "1.5s"),
        ("300ms", 300_000_000, "300ms"),
        ("1.5ms", 1_500_000, "1.5ms"),
        ("2us", 2_000, "2µs"),
        ("7ns", 7, "7ns"),
        ("-2m", -120_000_000_000, "-2m0s"),
        ("0", 0, "0s"),
        (".5h", 1_800_000_000_000, "30m0s"),
    ],
)
def test_go_durations(text, ns, shown):
    assert parse_go_duration(text) == ns
    assert format_go_duration(ns) == shown


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("", 'time: invalid duration ""'),
        ("5", 'time: missing unit in duration "5"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        (".s", 'time: invalid duration ".s"'),
    ],
)
def test_go_duration_errors(text, msg):
    with pytest.raises(ValueError, match=msg):
        parse_go_duration(text)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_go_duration_round_trip(ns):
    assert parse_go_duration(format_go_duration(ns)) == ns
