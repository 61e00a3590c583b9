"""`pyk8s nodes --node-template FILE`: a Node manifest every simulated node of the process is registered from, as
KWOK and kubemark take one. What a kubelet could be configured with carries over; what others own does not.

From the template: `metadata.labels` (the topology zone and region and the instance type become the node's own,
so the kubelet's beta twins follow), `metadata.annotations`, `spec.taints`, `spec.providerID`, and
`status.capacity` / `status.allocatable` (cpu, memory, pods, ephemeral-storage and any extended resource such as
`nvidia.com/gpu`; allocatable defaults to capacity less the kubelet's hard-eviction reserve). Names, conditions,
addresses, nodeInfo and podCIDR are the kubelet's or the controllers' and are ignored. Command-line flags given
explicitly win over the template.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..api.goyaml import YAMLDecodeError, load
from ..api.quantity import parse_quantity

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
_STANDARD = ("cpu", "memory", "pods", "ephemeral-storage")


class TemplateError(ValueError):
    """The template is not a Node the simulated kubelet can register from; the message says where."""


def load_template(path: Path) -> dict[str, Any]:
    """NodeSpec keyword arguments from the Node manifest at `path` (YAML or JSON)."""
    try:
        doc = load(path.read_bytes())
    except OSError as e:
        raise TemplateError(f"{path}: {e.strerror}") from None
    except YAMLDecodeError as e:
        raise TemplateError(f"{path}: {e}") from None
    return spec_from_template(doc)


def spec_from_template(doc: Any) -> dict[str, Any]:
    """NodeSpec keyword arguments from a Node object (parsed)."""
    if not isinstance(doc, Mapping):
        raise TemplateError("want a Node object")
    if doc.get("kind") not in (None, "Node") or doc.get("apiVersion") not in (None, "v1"):
        raise TemplateError(f"want apiVersion v1, kind Node; got {doc.get('apiVersion')}, {doc.get('kind')}")
    md, spec, status = (_mapping(doc, k) for k in ("metadata", "spec", "status"))
    out: dict[str, Any] = {}
    labels = {str(k): _string(v, f"metadata.labels.{k}") for k, v in _mapping(md, "labels", "metadata.").items()}
    for key, field in ((ZONE, "zone"), (REGION, "region"), (INSTANCE_TYPE, "instance_type")):
        if key in labels:
            out[field] = labels.pop(key)
    if labels:
        out["labels"] = labels
    annotations = _mapping(md, "annotations", "metadata.")
    if annotations:
        out["annotations"] = {str(k): _string(v, f"metadata.annotations.{k}") for k, v in annotations.items()}
    taints = spec.get("taints")
    if taints is not None:
        out["taints"] = [_taint(t, i) for i, t in enumerate(taints if isinstance(taints, list) else [None])]
    if spec.get("providerID") is not None:
        out["provider_id"] = _string(spec["providerID"], "spec.providerID")
    capacity = _resources(status, "capacity")
    for name, field in (("cpu", "cpu"), ("memory", "memory"), ("ephemeral-storage", "ephemeral_storage")):
        if name in capacity:
            out[field] = capacity[name]
    if "pods" in capacity:
        if not capacity["pods"].isdigit() or int(capacity["pods"]) < 1:
            raise TemplateError(f"status.capacity.pods: want a whole number of pods; got {capacity['pods']}")
        out["pods"] = int(capacity["pods"])
    extended = {k: v for k, v in capacity.items() if k not in _STANDARD}
    if extended:
        out["extended_capacity"] = extended
    allocatable = _resources(status, "allocatable")
    if allocatable:
        out["allocatable_overrides"] = allocatable
    return out


def _mapping(doc: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    val = doc.get(key)
    if val is None:
        return {}
    if not isinstance(val, Mapping):
        raise TemplateError(f"{prefix}{key}: want an object")
    return val


def _string(val: Any, where: str) -> str:
    if not isinstance(val, str):
        raise TemplateError(f"{where}: want a string")
    return val


def _taint(t: Any, i: int) -> dict[str, str]:
    where = f"spec.taints[{i}]"
    if not isinstance(t, Mapping) or not isinstance(t.get("key"), str) or not t.get("key"):
        raise TemplateError(f"{where}: want an object with a key")
    if t.get("effect") not in TAINT_EFFECTS:
        raise TemplateError(f"{where}.effect: want one of {', '.join(TAINT_EFFECTS)}")
    taint = {"key": t["key"], "effect": t["effect"]}
    if t.get("value") is not None:
        taint["value"] = _string(t["value"], f"{where}.value")
    return taint


def _resources(status: Mapping[str, Any], key: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, raw in _mapping(status, key, "status.").items():
        text = str(raw) if isinstance(raw, int) and not isinstance(raw, bool) else raw
        if not isinstance(text, str):
            raise TemplateError(f"status.{key}.{name}: want a quantity")
        try:
            parse_quantity(text)
        except ValueError as e:
            raise TemplateError(f"status.{key}.{name}: {e}") from None
        out[str(name)] = text
    return out
