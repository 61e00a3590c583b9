"""Results derived from a spec alone are worked out once per distinct spec and answered the same way after."""

from __future__ import annotations

from pyk8s.api.content_memo import ContentMemo
from pyk8s.api.meta import json_copy
from pyk8s.api.types.codec import codec_for, unknown_paths
from pyk8s.apiserver.registry.core import qos_class, validate_pod_spec


def test_the_memo_computes_once_per_content_and_extra_key():
    memo = ContentMemo(limit=2)
    calls: list[str] = []

    def compute(tag: str) -> str:
        calls.append(tag)
        return tag

    assert memo.get({"a": 1, "b": [1]}, lambda: compute("first")) == "first"
    assert memo.get({"b": [1], "a": 1}, lambda: compute("again")) == "first"  # same content, any key order
    assert memo.get({"a": 1, "b": [1]}, lambda: compute("other path"), extra="x") == "other path"
    assert memo.get({"a": 2**70}, lambda: compute("not json")) == "not json"  # computed, never kept
    assert memo.get({"a": 2**70}, lambda: compute("not json 2")) == "not json 2"
    assert calls == ["first", "other path", "not json", "not json 2"]


def test_repeated_specs_get_the_same_verdicts_as_the_first():
    bad = {"containers": [{"name": "c", "image": "x", "bogus": 1}], "restartPolicy": "Sometimes"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "extra": 1}, "spec": bad}
    codec = codec_for("", "v1", "Pod")
    assert codec is not None
    for _ in range(2):
        errs = validate_pod_spec(bad, "spec")
        assert [x.field for x in errs] == ["spec.restartPolicy"]
        errs.append(None)  # type: ignore[arg-type]  # the caller's list is its own
        assert validate_pod_spec(bad, "spec.template.spec")[0].field == "spec.template.spec.restartPolicy"
        unknown: list = []
        codec.decode(json_copy(pod), unknown)  # the spec's part memoised by content (codec.Memoized)
        assert unknown_paths(unknown) == ["metadata.extra", "spec.containers[0].bogus"]
    guaranteed = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}
    assert qos_class(guaranteed) == qos_class(guaranteed) == "Guaranteed"
    assert qos_class({"containers": [{"name": "c"}]}) == "BestEffort"
