"""The scheduler's feature gates: `--feature-gates` read as upstream's flag reads it, v1.32's defaults and locks,
gates pyk8s does not implement refused rather than silently ignored, names it does not know reported and
ignored; the gates reach the configuration's defaults and offline evaluation."""

from __future__ import annotations

import click
import pytest

from pyk8s.scheduler.cli import _feature_gates, _load_scheduler_config
from pyk8s.scheduler.evaluate import ScenarioError, evaluate
from pyk8s.scheduler.framework.features import (
    DEFAULT_FEATURE_GATES,
    GATES,
    FeatureGateError,
    parse_feature_gates,
    process_gates,
    process_gates_set,
    resolve_feature_gates,
)
from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.scheduler import Scheduler
from tests.scheduler.wrappers import make_node, make_pod


def test_v1_32_defaults():
    assert DEFAULT_FEATURE_GATES["SchedulerQueueingHints"] is True  # beta and on from v1.32
    assert DEFAULT_FEATURE_GATES["PodLevelResources"] is False
    assert DEFAULT_FEATURE_GATES["InPlacePodVerticalScaling"] is False
    assert DEFAULT_FEATURE_GATES["SchedulerAsyncPreemption"] is False
    assert DEFAULT_FEATURE_GATES["DynamicResourceAllocation"] is False
    assert GATES["PodSchedulingReadiness"].locked and GATES["PodDisruptionConditions"].locked
    # gone before v1.32 (GA in v1.30): minDomains is always honoured
    assert "MinDomainsInPodTopologySpread" not in GATES
    assert FrameworkHandle().feature_gates == DEFAULT_FEATURE_GATES


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("", {}),
        ("PodLevelResources=true", {"PodLevelResources": True}),
        (" A=1, B=F ,C=TRUE,D=False,", {"A": True, "B": False, "C": True, "D": False}),
    ],
)
def test_parse(text, want):
    assert parse_feature_gates(text) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("PodLevelResources", "missing bool value for PodLevelResources"),
        ("PodLevelResources=yes",
         'invalid value of PodLevelResources=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
    ],
)  # fmt: skip
def test_parse_errors(text, message):
    with pytest.raises(FeatureGateError) as e:
        parse_feature_gates(text)
    assert str(e.value) == message


def test_resolve_sets_known_gates_and_reports_unknown_ones():
    gates, ignored = resolve_feature_gates({"PodLevelResources": True, "KubeletInUserNamespace": True})
    assert gates == {**DEFAULT_FEATURE_GATES, "PodLevelResources": True}
    assert ignored == ["KubeletInUserNamespace"]
    # a gate pyk8s does not implement may be given its default
    assert resolve_feature_gates({"SchedulerAsyncPreemption": False})[0] == DEFAULT_FEATURE_GATES
    assert resolve_feature_gates({"PodDisruptionConditions": True})[0] == DEFAULT_FEATURE_GATES


@pytest.mark.parametrize(
    ("requested", "message"),
    [
        ({"PodSchedulingReadiness": False},
         "cannot set feature gate PodSchedulingReadiness to false, feature is locked to true"),
        ({"PodDisruptionConditions": False},
         "cannot set feature gate PodDisruptionConditions to false, feature is locked to true"),
        ({"DynamicResourceAllocation": True}, "feature gate DynamicResourceAllocation=true is not implemented: "),
        ({"SchedulerAsyncPreemption": True}, "feature gate SchedulerAsyncPreemption=true is not implemented: "),
        ({"DRAAdminAccess": True}, "feature gate DRAAdminAccess=true is not implemented: "),
        ({"AllAlpha": True}, "is not implemented"),
        ({"AllBeta": True}, "feature gate DynamicResourceAllocation=true is not implemented"),
    ],
)  # fmt: skip
def test_resolve_refuses(requested, message):
    with pytest.raises(FeatureGateError) as e:
        resolve_feature_gates(requested)
    assert message in str(e.value)


def test_all_alpha_and_all_beta():
    gates, _ = resolve_feature_gates({"AllAlpha": True, "DRAAdminAccess": False, "SchedulerAsyncPreemption": False})
    assert gates["PodLevelResources"] and gates["InPlacePodVerticalScaling"] and gates["VolumeCapacityPriority"]
    gates, _ = resolve_feature_gates({"AllBeta": False, "SidecarContainers": True})
    assert not gates["SchedulerQueueingHints"] and not gates["MatchLabelKeysInPodTopologySpread"]
    assert gates["SidecarContainers"]  # the explicit setting wins


def test_cli_flag(caplog):
    with caplog.at_level("WARNING"):
        gates = _feature_gates("PodLevelResources=true,NoSuchGate=false")
    assert gates["PodLevelResources"] is True
    assert "feature gate NoSuchGate does not change what a v1.32 scheduler decides; ignored" in caplog.text
    with pytest.raises(click.BadParameter, match="SchedulerAsyncPreemption=true is not implemented"):
        _feature_gates("SchedulerAsyncPreemption=true")
    with pytest.raises(click.BadParameter, match="invalid value of X=maybe"):
        _feature_gates("X=maybe")


def test_gates_reach_the_configuration_defaults():
    # VolumeCapacityPriority gives VolumeBinding a default shape, as upstream's defaulting does
    config = _load_scheduler_config(None, _feature_gates("VolumeCapacityPriority=true"))
    assert config.profiles[0].plugin_args["VolumeBinding"]["shape"]
    assert "shape" not in _load_scheduler_config(None, _feature_gates("")).profiles[0].plugin_args["VolumeBinding"]


def test_scheduler_sets_the_process_gates():
    with process_gates_set({}):
        Scheduler(None, feature_gates={"PodLevelResources": True, "InPlacePodVerticalScaling": True})
        assert process_gates().pod_level_resources and process_gates().in_place_pod_vertical_scaling
        Scheduler(None)
        assert not process_gates().pod_level_resources
    assert not process_gates().pod_level_resources


def test_evaluate_refuses_unimplemented_gates():
    scenario = {"pod": make_pod("web"), "nodes": [make_node("n1")], "featureGates": {"DynamicResourceAllocation": True}}
    with pytest.raises(ScenarioError, match="featureGates: feature gate DynamicResourceAllocation=true is not"):
        evaluate(scenario)
    scenario["featureGates"] = {"PodLevelResources": "yes"}
    with pytest.raises(ScenarioError, match="featureGates: must be a map of name to bool"):
        evaluate(scenario)
