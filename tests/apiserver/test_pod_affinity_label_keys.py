"""matchLabelKeys and mismatchLabelKeys of pod (anti-)affinity terms (MatchLabelKeysInPodAffinity, beta and on
in v1.32): the API server folds them into the term's labelSelector when a pod is created and validates them
after that (upstream: pkg/registry/core/pod/strategy.go mutatePodAffinity and its Test_mutatePodAffinity;
pkg/apis/core/validation validateMatchLabelKeysAndMismatchLabelKeys and TestValidatePod's cases)."""

from __future__ import annotations

from typing import Any

import pytest

REQ_AFF = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
PREF_AFF = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
REQ_ANTI = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
PREF_ANTI = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
PLACES = {REQ_AFF: ("podAffinity", False), PREF_AFF: ("podAffinity", True)}
PLACES |= {REQ_ANTI: ("podAntiAffinity", False), PREF_ANTI: ("podAntiAffinity", True)}


def term(selector: dict[str, Any] | None = None, **keys: list[str]) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": "k8s.io/zone", **keys}
    if selector is not None:
        t["labelSelector"] = selector
    return t


def affinity_at(place: str, t: dict[str, Any]) -> dict[str, Any]:
    kind, preferred = PLACES[place]
    if preferred:
        return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": t}]}}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [t]}}


def term_at(place: str, pod: dict[str, Any]) -> dict[str, Any]:
    kind, preferred = PLACES[place]
    aff = pod["spec"]["affinity"][kind]
    if preferred:
        return aff["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    return aff["requiredDuringSchedulingIgnoredDuringExecution"][0]


def pod(name: str, labels: dict[str, str], affinity: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}], "affinity": affinity},
    }


def create(cluster: Any, ns: str, body: dict[str, Any]) -> tuple[int, Any]:
    return cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", body)


def created(cluster: Any, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    status, out = create(cluster, ns, body)
    assert status == 201, out
    return out


def causes(body: Any) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


JAPAN = {"country": "Japan", "city": "Kyoto"}
ASIA = {"matchLabels": {"region": "Asia"}}


@pytest.mark.parametrize("place", list(PLACES))
def test_match_label_keys_fold_in_and_mismatch_label_keys_fold_not_in(cluster, ns, place):
    t = term(ASIA, matchLabelKeys=["country"], mismatchLabelKeys=["city"])
    out = created(cluster, ns, pod("p", JAPAN, affinity_at(place, t)))
    assert term_at(place, out) == {
        "labelSelector": {
            "matchLabels": {"region": "Asia"},
            "matchExpressions": [
                {"key": "country", "operator": "In", "values": ["Japan"]},
                {"key": "city", "operator": "NotIn", "values": ["Kyoto"]},
            ],
        },
        "topologyKey": "k8s.io/zone",
        "matchLabelKeys": ["country"],
        "mismatchLabelKeys": ["city"],
    }
    stored = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/p")[1]
    assert term_at(place, stored) == term_at(place, out)


def test_every_term_is_folded_with_its_own_keys(cluster, ns):
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                term(ASIA, matchLabelKeys=["country"]),
                term(ASIA, mismatchLabelKeys=["city"]),
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term(ASIA, matchLabelKeys=["city"])}
            ],
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(ASIA, mismatchLabelKeys=["country"])],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term(ASIA)},
                {"weight": 2, "podAffinityTerm": term(ASIA, matchLabelKeys=["country", "city"])},
            ],
        },
    }
    aff = created(cluster, ns, pod("p", JAPAN, affinity))["spec"]["affinity"]
    exprs = [
        t.get("labelSelector", {}).get("matchExpressions")
        for t in aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    ]
    assert exprs == [
        [{"key": "country", "operator": "In", "values": ["Japan"]}],
        [{"key": "city", "operator": "NotIn", "values": ["Kyoto"]}],
    ]
    pref = aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert pref["labelSelector"]["matchExpressions"] == [{"key": "city", "operator": "In", "values": ["Kyoto"]}]
    anti = aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["labelSelector"]["matchExpressions"] == [{"key": "country", "operator": "NotIn", "values": ["Japan"]}]
    untouched, both = (
        w["podAffinityTerm"] for w in aff["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    )
    assert untouched["labelSelector"] == {"matchLabels": {"region": "Asia"}}
    assert both["labelSelector"]["matchExpressions"] == [
        {"key": "country", "operator": "In", "values": ["Japan"]},
        {"key": "city", "operator": "In", "values": ["Kyoto"]},
    ]


@pytest.mark.parametrize(
    ("labels", "selector", "keys", "want"),
    [
        pytest.param(
            JAPAN,
            ASIA,
            {"matchLabelKeys": ["city", "not-found"]},
            {
                "matchLabels": {"region": "Asia"},
                "matchExpressions": [{"key": "city", "operator": "In", "values": ["Kyoto"]}],
            },
            id="keys the pod has no label for are skipped",
        ),
        pytest.param(
            {},
            ASIA,
            {"matchLabelKeys": ["country"], "mismatchLabelKeys": ["city"]},
            ASIA,
            id="a pod without the labels leaves the selector as it was",
        ),
        pytest.param(
            JAPAN,
            {},
            {"matchLabelKeys": ["country"]},
            {"matchExpressions": [{"key": "country", "operator": "In", "values": ["Japan"]}]},
            id="an empty selector gets the expressions",
        ),
        pytest.param(
            JAPAN,
            {"matchExpressions": [{"key": "city", "operator": "NotIn", "values": ["Osaka"]}]},
            {"mismatchLabelKeys": ["city"]},
            {
                "matchExpressions": [
                    {"key": "city", "operator": "NotIn", "values": ["Osaka"]},
                    {"key": "city", "operator": "NotIn", "values": ["Kyoto"]},
                ]
            },
            id="a mismatchLabelKeys key may also be in the selector; the new expression comes last",
        ),
        pytest.param(
            {"app": ""},
            {},
            {"matchLabelKeys": ["app"]},
            {"matchExpressions": [{"key": "app", "operator": "In", "values": [""]}]},
            id="an empty label value is a value",
        ),
        pytest.param(
            {"key": "value1"},
            {"matchLabels": {"other": "x"}, "matchExpressions": [{"key": "key", "operator": "Exists"}]},
            {"matchLabelKeys": ["key"]},
            None,
            id="a matchLabelKeys key already in the selector's expressions is refused once folded",
        ),
        pytest.param(
            {},
            {"matchLabels": {"key": "value1"}},
            {"matchLabelKeys": ["key"]},
            {"matchLabels": {"key": "value1"}},
            id="a matchLabelKeys key in the selector passes when the pod has no such label (nothing folded)",
        ),
    ],
)
def test_folding_cases(cluster, ns, labels, selector, keys, want):
    status, out = create(cluster, ns, pod("p", labels, affinity_at(REQ_AFF, term(selector, **keys))))
    if want is None:
        assert status == 422, out
        return
    assert status == 201, out
    assert term_at(REQ_AFF, out)["labelSelector"] == want


def test_a_term_without_selector_and_keys_is_left_alone(cluster, ns):
    out = created(cluster, ns, pod("p", JAPAN, affinity_at(REQ_ANTI, term())))
    assert term_at(REQ_ANTI, out) == {"topologyKey": "k8s.io/zone"}


def test_later_updates_keep_what_was_folded_at_creation(cluster, ns):
    t = term(ASIA, matchLabelKeys=["country"], mismatchLabelKeys=["city"])
    first = created(cluster, ns, pod("p", JAPAN, affinity_at(REQ_AFF, t)))
    path = f"/api/v1/namespaces/{ns}/pods/p"
    patch = {"metadata": {"labels": {"country": "France", "city": "Paris"}}}
    status, out = cluster.request("PATCH", path, patch, "application/merge-patch+json")
    assert status == 200, out
    assert out["metadata"]["labels"] == {"country": "France", "city": "Paris"}
    assert term_at(REQ_AFF, out) == term_at(REQ_AFF, first)
    # A full PUT of the stored pod passes validation again: the folded expressions do not count as duplicates.
    status, out = cluster.request("PUT", path, out)
    assert status == 200, out
    assert term_at(REQ_AFF, out) == term_at(REQ_AFF, first)


def test_pod_templates_are_not_folded(cluster, ns):
    template_affinity = affinity_at(REQ_AFF, term(ASIA, matchLabelKeys=["country"]))
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": JAPAN},
            "template": {
                "metadata": {"labels": JAPAN},
                "spec": {"containers": [{"name": "c", "image": "i"}], "affinity": template_affinity},
            },
        },
    }
    status, out = cluster.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", deploy)
    assert status == 201, out
    assert out["spec"]["template"]["spec"]["affinity"] == template_affinity


INVALID_KEY = 'Invalid value: "/simple": prefix part must be non-empty'


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("field", ["matchLabelKeys", "mismatchLabelKeys"])
def test_keys_must_be_label_names(cluster, ns, place, field):
    selector = {"matchExpressions": [{"key": "key", "operator": "NotIn", "values": ["value1", "value2"]}]}
    status, out = create(cluster, ns, pod("p", {}, affinity_at(place, term(selector, **{field: ["/simple"]}))))
    assert status == 422 and out["reason"] == "Invalid", out
    assert causes(out) == [("FieldValueInvalid", f"{place}.{field}[0]", INVALID_KEY)]
    assert out["message"] == f'Pod "p" is invalid: {place}.{field}[0]: {INVALID_KEY}'


@pytest.mark.parametrize("place", list(PLACES))
def test_a_match_label_key_also_in_the_selector_is_refused_after_folding(cluster, ns, place):
    # Upstream's error path is the term's with the key's index appended (no ".matchLabelKeys"), in v1.32.
    selector = {"matchExpressions": [{"key": "key", "operator": "NotIn", "values": ["value2"]}]}
    body = pod("p", {"key": "value1"}, affinity_at(place, term(selector, matchLabelKeys=["key"])))
    status, out = create(cluster, ns, body)
    assert status == 422, out
    msg = 'Invalid value: "key": exists in both matchLabelKeys and labelSelector'
    assert causes(out) == [("FieldValueInvalid", f"{place}[0]", msg)]


def test_a_match_label_key_in_match_labels_is_refused_after_folding(cluster, ns):
    body = pod(
        "p",
        {"a": "1", "key": "v"},
        affinity_at(REQ_AFF, term({"matchLabels": {"key": "v"}}, matchLabelKeys=["a", "key"])),
    )
    status, out = create(cluster, ns, body)
    assert status == 422, out
    msg = 'Invalid value: "key": exists in both matchLabelKeys and labelSelector'
    assert causes(out) == [("FieldValueInvalid", f"{REQ_AFF}[1]", msg)]


def test_a_repeated_match_label_key_is_refused_when_the_pod_has_the_label(cluster, ns):
    body = pod("p", {"app": "web"}, affinity_at(REQ_AFF, term({}, matchLabelKeys=["app", "app"])))
    status, out = create(cluster, ns, body)
    assert status == 422, out
    msg = 'Invalid value: "app": exists in both matchLabelKeys and labelSelector'
    assert causes(out) == [("FieldValueInvalid", f"{REQ_AFF}[1]", msg)]
    # Without the label nothing is folded and v1.32 lets the repetition through.
    created(cluster, ns, pod("q", {}, affinity_at(REQ_AFF, term({}, matchLabelKeys=["app", "app"]))))


@pytest.mark.parametrize("place", list(PLACES))
def test_a_key_in_both_match_and_mismatch_label_keys_is_refused(cluster, ns, place):
    selector = {"matchExpressions": [{"key": "key", "operator": "NotIn", "values": ["value1", "value2"]}]}
    t = term(selector, matchLabelKeys=["samekey"], mismatchLabelKeys=["samekey"])
    status, out = create(cluster, ns, pod("p", {}, affinity_at(place, t)))
    assert status == 422, out
    msg = 'Invalid value: "samekey": exists in both matchLabelKeys and mismatchLabelKeys'
    assert causes(out) == [("FieldValueInvalid", f"{place}.matchLabelKeys[0]", msg)]


def test_a_key_in_both_lists_and_in_the_pods_labels_fails_both_checks(cluster, ns):
    t = term({}, matchLabelKeys=["samekey"], mismatchLabelKeys=["samekey"])
    status, out = create(cluster, ns, pod("p", {"samekey": "v"}, affinity_at(PREF_ANTI, t)))
    assert status == 422, out
    assert causes(out) == [
        (
            "FieldValueInvalid",
            f"{PREF_ANTI}[0]",
            'Invalid value: "samekey": exists in both matchLabelKeys and labelSelector',
        ),
        (
            "FieldValueInvalid",
            f"{PREF_ANTI}.matchLabelKeys[0]",
            'Invalid value: "samekey": exists in both matchLabelKeys and mismatchLabelKeys',
        ),
    ]


@pytest.mark.parametrize("place", list(PLACES))
def test_keys_need_a_label_selector(cluster, ns, place):
    t = term(None, matchLabelKeys=["country", "/bad"], mismatchLabelKeys=["city"])
    status, out = create(cluster, ns, pod("p", JAPAN, affinity_at(place, t)))
    assert status == 422, out
    msg = "Forbidden: must not be specified when labelSelector is not set"
    assert causes(out) == [
        ("FieldValueForbidden", f"{place}.matchLabelKeys", msg),
        ("FieldValueForbidden", f"{place}.mismatchLabelKeys", msg),
    ]


def test_an_empty_key_is_not_a_label_name(cluster, ns):
    status, out = create(cluster, ns, pod("p", {}, affinity_at(REQ_AFF, term({}, mismatchLabelKeys=["ok", ""]))))
    assert status == 422, out
    regex = (
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )
    field = f"{REQ_AFF}.mismatchLabelKeys[1]"
    assert causes(out) == [
        ("FieldValueInvalid", field, 'Invalid value: "": name part must be non-empty'),
        ("FieldValueInvalid", field, f'Invalid value: "": {regex}'),
    ]
