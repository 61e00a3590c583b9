"""A pod's spec.nodeName must be a possible node name (upstream ValidatePodSpec's ValidateNodeName)."""

from __future__ import annotations

import pytest

from pyk8s.apiserver.registry.core import validate_pod_spec

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@pytest.mark.parametrize("name", ["a/b", "..", "Node-1", "ünï"])
def test_a_node_name_that_cannot_be_a_node_is_invalid(name: str) -> None:
    errs = validate_pod_spec({"nodeName": name, "containers": [{"name": "c", "image": "busybox"}]}, "spec")
    assert [(x.field, x.value, x.detail) for x in errs] == [("spec.nodeName", name, SUBDOMAIN)]


def test_node_names_that_can_be_nodes_are_valid() -> None:
    for name in ("n1", "lt-0", "ip-10-0-0-1.ec2.internal"):
        assert validate_pod_spec({"nodeName": name, "containers": [{"name": "c", "image": "busybox"}]}, "spec") == []
