"""kubectl's JSONPath (client-go util/jsonpath): the cases of upstream's jsonpath_test.go and parser_test.go, with
Go structs written as the JSON objects the API server evaluates templates over."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pyk8s.api.jsonpath import (
    NO_VALUE,
    FilterNode,
    JSONPathError,
    ListNode,
    UnionNode,
    parse,
)


def run(template: str, data: Any, allow_missing_keys: bool = False) -> str:
    return parse("test", template, allow_missing_keys=allow_missing_keys).execute(data)


def error_of(template: str, data: Any, allow_missing_keys: bool = False) -> str:
    with pytest.raises(JSONPathError) as err:
        run(template, data, allow_missing_keys)
    return str(err.value)


TYPES = {
    "bools": [True, False, True, False],
    "integers": [1, 2, 3, 4],
    "floats": [1.0, 2.2, 3.3, 4.0],
    "strings": ["one", "two", "three", "four"],
    "interfaces": [True, "one", 1, 1.1],
    "maps": [
        {"name": "one", "value": 1},
        {"name": "two", "value": 2.02},
        {"name": "three", "value": 3.03},
        {"name": "four", "value": 4.04},
    ],
}


@pytest.mark.parametrize(
    ("template", "expect"),
    [
        ("{ .bools }", "[true,false,true,false]"),
        ("{ .bools[0] }", "true"),
        ("{ .bools[-1] }", "false"),
        ("{ .bools[0:2] }", "true false"),
        ("{ .bools[:2] }", "true false"),
        ("{ .bools[:4:2] }", "true true"),
        ("{ .integers }", "[1,2,3,4]"),
        ("{ .integers[0] }", "1"),
        ("{ .integers[-2] }", "3"),
        ("{ .integers[0:2] }", "1 2"),
        ("{ .integers[:4:2] }", "1 3"),
        ("{ .floats }", "[1,2.2,3.3,4]"),
        ("{ .floats[0] }", "1"),
        ("{ .floats[-2] }", "3.3"),
        ("{ .floats[:4:2] }", "1 3.3"),
        ("{ .strings }", '["one","two","three","four"]'),
        ("{ .strings[-2] }", "three"),
        ("{ .strings[:4:2] }", "one three"),
        ("{ .interfaces }", '[true,"one",1,1.1]'),
        ("{ .interfaces[0:2] }", "true one"),
        ("{ .interfaces[:4:2] }", "true 1"),
        (
            "{ .maps }",
            '[{"name":"one","value":1},{"name":"two","value":2.02},{"name":"three","value":3.03},{"name":"four","value":4.04}]',
        ),
        ("{ .maps[-2] }", '{"name":"three","value":3.03}'),
        ("{ .maps[::2] }", '{"name":"one","value":1} {"name":"three","value":3.03}'),
        ("{ .maps[1::2] }", '{"name":"two","value":2.02} {"name":"four","value":4.04}'),
    ],
)
def test_types_input(template, expect):
    assert run(template, TYPES) == expect


STORE = {
    "Name": "jsonpath",
    "Book": [
        {"Category": "reference", "Author": "Nigel Rees", "Title": "Sayings of the Centurey", "Price": 8.95},
        {"Category": "fiction", "Author": "Evelyn Waugh", "Title": "Sword of Honour", "Price": 12.99},
        {"Category": "fiction", "Author": "Herman Melville", "Title": "Moby Dick", "Price": 8.99},
    ],
    "Bicycle": [{"Color": "red", "Price": 19.95, "IsNew": True}, {"Color": "green", "Price": 20.01, "IsNew": False}],
    "Labels": {"engieer": 10, "web/html": 15, "k8s-app": 20},
    "Employees": {"jason": "manager", "dan": "clerk"},
}
MOBY_DICK = '{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}'


@pytest.mark.parametrize(
    ("template", "data", "expect"),
    [
        ("hello jsonpath", None, "hello jsonpath"),
        ("{..}", [1, 2, 3], "[1,2,3]"),
        ("{[?(@<5)]}", [2, 6, 3, 7], "2 3"),
        ('{"{"}', None, "{"),
        ("{[1,3,4]}", [0, 1, 2, 3, 4], "1 3 4"),
        ("{[0:2]}", ["Monday", "Tudesday"], "Monday Tudesday"),
        ("hello {.Name}", STORE, "hello jsonpath"),
        ("{$.Labels.web/html}", STORE, "15"),
        ("{$.Employees.jason}", STORE, "manager"),
        ("{.Labels.k8s-app}", STORE, "20"),
        ("{.Bicycle[*].Color}", STORE, "red green"),
        ("{.Book[*].Author}", STORE, "Nigel Rees Evelyn Waugh Herman Melville"),
        ('{range .Bicycle[*]}{ "{" }{ @.* }{ "} " }{end}', STORE, "{red 19.95 true} {green 20.01 false} "),
        ("{..Price}", STORE, "8.95 12.99 8.99 19.95 20.01"),
        ("{...Price}", STORE, "8.95 12.99 8.99 19.95 20.01"),
        (
            "{.Bicycle}",
            STORE,
            '[{"Color":"red","IsNew":true,"Price":19.95},{"Color":"green","IsNew":false,"Price":20.01}]',
        ),
        (
            '{range .Bicycle[*]}{ @ }{ " " }{end}',
            STORE,
            '{"Color":"red","IsNew":true,"Price":19.95} {"Color":"green","IsNew":false,"Price":20.01} ',
        ),
        ("{.Book[-1:]}", STORE, MOBY_DICK),
        ("{..Book[2]}", STORE, MOBY_DICK),
        ("{.Bicycle[?(@.IsNew==true)]}", STORE, '{"Color":"red","IsNew":true,"Price":19.95}'),
        # Go's %v of floats: shortest digits, exponent from 1e+06 and below 1e-04
        (
            "{.a} {.b} {.c} {.d} {.e}",
            {"a": 1e6, "b": 123456.0, "c": 0.0001, "d": 0.00001, "e": -2.5e-7},
            "1e+06 123456 0.0001 1e-05 -2.5e-07",
        ),
        # maps and lists print as Go's json.Marshal: sorted keys, HTML characters escaped, integral floats bare
        ("{.m}", {"m": {"z": "<a&b>", "a": [1.0, 1e21]}}, '{"a":[1,1e+21],"z":"\\u003ca\\u0026b\\u003e"}'),
    ],
)
def test_struct_input(template, data, expect):
    assert run(template, data) == expect


def test_deep_recursive_descent_does_not_parse():
    with pytest.raises(JSONPathError, match=r"^invalid multiple recursive descent$"):
        parse("superrecurfields", "{" + "." * 60 + "Price}")


@pytest.mark.parametrize(
    ("template", "expect"),
    [("{.hello}", ""), ("before-{.hello}after", "before-after")],
)
def test_missing_keys_allowed(template, expect):
    assert run(template, STORE, allow_missing_keys=True) == expect


@pytest.mark.parametrize(
    ("template", "data", "expect"),
    [
        ("{hello}", STORE, "unrecognized identifier hello"),
        ("{.hello}", STORE, "hello is not found"),
        ("{.Labels[0]}", STORE, "map[string]interface {} is not array or slice"),
        ("{.Name[0]}", STORE, "string is not array or slice"),
        ("{.Book[?(@.Price<>10)]}", STORE, "unrecognized filter operator <>"),
        ("{range .Labels.*}{@}{end}{end}", STORE, "not in range, nothing to end"),
        (
            "{.Labels[?(@.x==1)]}",
            STORE,
            "map[engieer:10 k8s-app:20 web/html:15] is not array or slice and cannot be filtered",
        ),
        ("{.n[?(@.x==1)]}", {"n": None}, "<nil> is not array or slice and cannot be filtered"),
        ("{.Book[?(@.Price==9)]}", STORE, "incompatible types for comparison"),
        ("{.Book[?(@.Price<9.0)].Author}", STORE, None),
        ("{.Bicycle[?(@.IsNew<true)]}", STORE, "invalid type for comparison"),
        ("{.Book[?(@.Title==@.Category)]}", STORE, None),
        ("{.Bicycle[?(@.*==true)]}", STORE, "can only compare one element at a time"),
        ("{[?(@.a==1)]}", [{"a": None}], "invalid type for comparison"),
    ],
)
def test_execution_errors(template, data, expect):
    if expect is None:
        run(template, data)  # compares fine
    else:
        assert error_of(template, data) == expect


POINTS = [
    {"id": "i1", "x": 4, "y": -5},
    {"id": "i2", "x": -2, "y": -5, "z": 1},
    {"id": "i3", "x": 8, "y": 3},
    {"id": "i4", "x": -6, "y": -1},
    {"id": "i5", "x": 0, "y": 2, "z": 1},
    {"id": "i6", "x": 1, "y": 4},
    {"id": "i7", "x": None, "y": 4},
]


@pytest.mark.parametrize(
    ("template", "expect"),
    [
        ("{[?(@.z)].id}", "i2 i5"),
        ("{[0]['id']}", "i1"),
        ("{[-1]['x']}", "null"),
        # a key present with a null value exists
        ("{[?(@.x)].id}", "i1 i2 i3 i4 i5 i6 i7"),
        ("{[?(@.x>0)].id}", None),  # i7's null x cannot be compared
        ("{[?(@.y>=3)].id}", "i3 i6 i7"),
        ("{[?(@.y<=-1)].id}", "i1 i2 i4"),
        ("{[?(@.y!=-5)].id}", "i3 i4 i5 i6 i7"),
        ("{[?(@.y<-1)].id}", "i1 i2"),
        ("{[?(@.y>3)].id}", "i6 i7"),
    ],
)
def test_json_input(template, expect):
    if expect is None:
        assert error_of(template, POINTS) == "invalid type for comparison"
    else:
        assert run(template, POINTS) == expect


NODES = json.loads("""{
  "kind": "List",
  "items": [
    {"kind": "None", "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
     "status": {"capacity": {"cpu": "4"}, "ready": true,
                "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]}},
    {"kind": "None", "metadata": {"name": "127.0.0.2", "labels": {"kubernetes.io/hostname": "127.0.0.2"}},
     "status": {"capacity": {"cpu": "8"}, "ready": false,
                "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.2"},
                              {"type": "another", "address": "127.0.0.3"}]}}
  ],
  "users": [{"name": "myself", "user": {}}, {"name": "e2e", "user": {"username": "admin", "password": "secret"}}]
}""")


@pytest.mark.parametrize(
    ("template", "expect"),
    [
        ("{range .items[*]}{.metadata.name}, {end}{.kind}", "127.0.0.1, 127.0.0.2, List"),
        ('{range .items[*]}{.metadata.name}{"\\t"}{end}', "127.0.0.1\t127.0.0.2\t"),
        ("{.items[*].status.addresses[*].address}", "127.0.0.1 127.0.0.2 127.0.0.3"),
        (
            "{range .items[*]}{range .status.addresses[*]}{.address}, {end}{end}",
            "127.0.0.1, 127.0.0.2, 127.0.0.3, ",
        ),
        ("{.items[*].metadata.name}", "127.0.0.1 127.0.0.2"),
        ("{.items[*]['metadata.name', 'status.capacity']}", '127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}'),
        (
            "{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}",
            '[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] ',
        ),
        ('{.users[?(@.name=="e2e")].user.password}', "secret"),
        ("{.items[0].metadata.labels.kubernetes\\.io/hostname}", "127.0.0.1"),
        ('{.items[?(@.metadata.labels.kubernetes\\.io/hostname=="127.0.0.1")].kind}', "None"),
        ("{.items[?(@..ready==true)].metadata.name}", "127.0.0.1"),
        ("{.items[?(@.status.ready==false)].metadata.name}", "127.0.0.2"),
        ("{.items[0].metadata['labels']}", '{"kubernetes.io/hostname":"127.0.0.1"}'),
    ],
)
def test_kubernetes(template, expect):
    assert run(template, NODES) == expect


def test_recursive_name_finds_every_name():
    assert sorted(run("{..name}", NODES).split()) == sorted(["127.0.0.1", "127.0.0.2", "myself", "e2e"])


def test_bracketed_key_splits_on_dots_as_upstream():
    # ['a.b'] reads as .a.b, so a label key with a dot must be escaped with a backslash instead
    assert run("{.items[0].metadata.labels['kubernetes.io/hostname']}", NODES, allow_missing_keys=True) == ""
    assert error_of("{.items[0].metadata.labels['kubernetes.io/hostname']}", NODES) == "kubernetes is not found"


@pytest.mark.parametrize(
    "template",
    [
        "{range .items[*]}{.metadata.name}{end}",
        '{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}',
    ],
)
def test_empty_range(template):
    assert run(template, {"items": []}, allow_missing_keys=True) == ""


def test_empty_range_still_walks_its_body():
    # upstream walks the body once over no value to find the `end`, so a missing key there is still an error
    assert error_of("{range .items[*]}{.metadata.name}{end}", {"items": []}) == "metadata is not found"


PODS = {
    "items": [
        {
            "metadata": {"name": "pod1"},
            "spec": {
                "containers": [
                    {"name": "foo", "another": [{"name": "value1"}, {"name": "value2"}]},
                    {"name": "bar", "another": [{"name": "value1"}, {"name": "value2"}]},
                ]
            },
        },
        {
            "metadata": {"name": "pod2"},
            "spec": {"containers": [{"name": "baz", "another": [{"name": "value1"}, {"name": "value2"}]}]},
        },
    ]
}


@pytest.mark.parametrize(
    ("template", "expect"),
    [
        (
            '{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}',
            "pod1:foo,bar,+pod2:baz,+",
        ),
        (
            '{range .items[*]}{.metadata.name}{"~"}{range @.spec.containers[*]}{.name}{":"}'
            '{range @.another[*]}{.name}{","}{end}{"+"}{end}{"#"}{end}',
            "pod1~foo:value1,value2,+bar:value1,value2,+#pod2~baz:value1,value2,+#",
        ),
        (
            '{range .items[*]}{.metadata.name}{"\\t"}{range @.spec.containers[*]}{.name}{" "}{end}'
            '{"\\t"}{range @.spec.containers[*]}{.name}{" "}{end}{"\\n"}{end}',
            "pod1\tfoo bar \tfoo bar \npod2\tbaz \tbaz \n",
        ),
    ],
)
def test_nested_ranges(template, expect):
    assert run(template, PODS) == expect


def test_compiled_template_is_reusable():
    jp = parse("names", '{range .items[*]}{.metadata.name}{","}{end}')
    assert jp.execute(PODS) == "pod1,pod2,"
    assert jp.execute(PODS) == "pod1,pod2,"


def test_range_over_a_null_prints_no_value():
    assert run("{range .items[*]}[{@}]{end}", {"items": [None, 1]}) == "[<no value>][1]"


ANNOTATED = {
    "kind": "List",
    "items": [
        {"kind": "Pod", "metadata": {"name": "pod1", "annotations": {"color": "blue"}}},
        {"kind": "Pod", "metadata": {"name": "pod2"}},
        {"kind": "Pod", "metadata": {"name": "pod3", "annotations": {"color": "green"}}},
        {"kind": "Pod", "metadata": {"name": "pod4", "annotations": {"color": "blue"}}},
    ],
}


def test_filter_over_items_missing_the_key():
    template = '{.items[?(@.metadata.annotations.color=="blue")].metadata.name}'
    assert run(template, ANNOTATED, allow_missing_keys=True) == "pod1 pod4"
    assert error_of(template, ANNOTATED) == "annotations is not found"


CONTAINERS = {"spec": {"containers": [{"image": "radial/busyboxplus:curl", "name": f"fake{i}"} for i in range(4)]}}


@pytest.mark.parametrize(
    ("index", "expect"),
    [
        ("0", "fake0"),
        ("0:0", ""),
        ("0:-1", "fake0 fake1 fake2"),
        ("-1:0", "starting index 3 is greater than ending index 0"),
        ("-1", "fake3"),
        ("-1:", "fake3"),
        ("-2", "fake2"),
        ("-2:", "fake2 fake3"),
        ("-3", "fake1"),
        ("-4", "fake0"),
        ("-4:", "fake0 fake1 fake2 fake3"),
        ("-5", "array index out of bounds: index -1, length 4"),
        ("4", "array index out of bounds: index 4, length 4"),
        ("1:5", "array index out of bounds: index 4, length 4"),
        ("5:5", ""),
        ("-5:-5", ""),
        ("3:1", "starting index 3 is greater than ending index 1"),
        ("-1:-2", "starting index 3 is greater than ending index 2"),
    ],
)
def test_negative_index(index, expect):
    template = f"{{.spec.containers[{index}].name}}"
    if expect.startswith(("array", "starting")):
        assert error_of(template, CONTAINERS) == expect
    else:
        assert run(template, CONTAINERS) == expect


def test_running_pods_range_over_filter():
    data = {
        "kind": "List",
        "items": [{"kind": "Pod", "metadata": {"name": f"pod{i}"}, "status": {"phase": "Running"}} for i in (1, 2, 3)]
        + [{"resourceVersion": ""}],
    }
    template = '{range .items[?(.status.phase=="Running")]}{.metadata.name}{" is Running\\n"}{end}'
    assert run(template, data, allow_missing_keys=True) == "pod1 is Running\npod2 is Running\npod3 is Running\n"


SIX = {"spec": {"containers": [{"name": f"fake{i}"} for i in range(6)]}}


@pytest.mark.parametrize(
    ("index", "expect"),
    [
        ("0:", "fake0 fake1 fake2 fake3 fake4 fake5"),
        ("0:6:", "fake0 fake1 fake2 fake3 fake4 fake5"),
        ("0:6:1", "fake0 fake1 fake2 fake3 fake4 fake5"),
        ("0:6:0", None),
        ("0:6:-1", None),
        ("1:4:2", "fake1 fake3"),
        ("1:4:3", "fake1"),
        ("1:4:4", "fake1"),
        ("0:6:2", "fake0 fake2 fake4"),
        ("0:6:3", "fake0 fake3"),
        ("0:6:5", "fake0 fake5"),
        ("0:6:6", "fake0"),
    ],
)
def test_step(index, expect):
    template = f"{{.spec.containers[{index}].name}}"
    if expect is None:
        assert error_of(template, SIX) == "step must be > 0"
    else:
        assert run(template, SIX) == expect


def test_empty_selection_ends_the_step_for_later_inputs():
    # upstream returns from the array step at the first empty selection, dropping the remaining inputs
    data = {"items": [{"l": []}, {"l": [1, 2]}]}
    assert run("{.items[*].l[*]}", data) == ""
    assert run("{.items[*].l[*]}", {"items": [{"l": [1, 2]}, {"l": []}, {"l": [3]}]}) == "1 2"


def test_wildcard_and_union_over_objects():
    data = {"spec": {"a": 1, "b": "x", "c": None}}
    assert run("{.spec.*}", data) == "1 x null"
    assert run("{.spec['a','b']}", data) == "1 x"
    assert run("{.spec[*]}", {"spec": [True, 2.5]}) == "true 2.5"


def test_find_results_groups_by_template_piece():
    jp = parse("x", "a{.n}b{.l[*]}")
    assert jp.find_results({"n": None, "l": [1, "2"]}) == [["a"], [None], ["b"], [1, "2"]]
    assert jp.print_results([NO_VALUE, None, {"k": 1}]) == '<no value> null {"k":1}'


# -- the parser (parser_test.go) ----------------------------------------------------------------------


def collect(node: Any) -> list[Any]:
    out = [node]
    if isinstance(node, ListNode):
        for child in node.nodes:
            out += collect(child)
    elif isinstance(node, FilterNode):
        out += collect(node.left) + collect(node.right)
    elif isinstance(node, UnionNode):
        for member in node.lists:
            out += collect(member)
    return out


@pytest.mark.parametrize(
    ("text", "nodes"),
    [
        ("hello jsonpath", ["NodeText: hello jsonpath"]),
        ("hello {.jsonpath}", ["NodeText: hello ", "NodeList", "NodeField: jsonpath"]),
        ("hello {['jsonpath']}", ["NodeText: hello ", "NodeList", "NodeField: jsonpath"]),
        ('{"{"}', ["NodeList", "NodeText: {"]),
        ("{[1:3]}", ["NodeList", "NodeArray: [{1 true false} {3 true false} {0 false false}]"]),
        (
            "{.book[*].author}",
            [
                "NodeList",
                "NodeField: book",
                "NodeArray: [{0 false false} {0 false false} {0 false false}]",
                "NodeField: author",
            ],
        ),
        ("{.bicycle.*}", ["NodeList", "NodeField: bicycle", "NodeWildcard"]),
        (
            "{[?(@.price<3)]}",
            ["NodeList", "NodeFilter: NodeList < NodeList", "NodeList", "NodeField: price", "NodeList", "NodeInt: 3"],
        ),
        ("{..}", ["NodeList", "NodeRecursive"]),
        ("{..price}", ["NodeList", "NodeRecursive", "NodeField: price"]),
        ("{['book.price']}", ["NodeList", "NodeField: book", "NodeField: price"]),
        (
            "{['bicycle.price', 3, 'book.price']}",
            [
                "NodeList",
                "NodeUnion",
                "NodeList",
                "NodeField: bicycle",
                "NodeField: price",
                "NodeList",
                "NodeArray: [{3 true false} {4 true true} {0 false false}]",
                "NodeList",
                "NodeField: book",
                "NodeField: price",
            ],
        ),
        (
            "{range .items}{.name},{end}",
            [
                "NodeList",
                "NodeIdentifier: range",
                "NodeField: items",
                "NodeList",
                "NodeField: name",
                "NodeText: ,",
                "NodeList",
                "NodeIdentifier: end",
            ],
        ),
        *[
            (
                f"{{[?(@.status.nodeInfo.osImage == {operand})]}}",
                [
                    "NodeList",
                    "NodeFilter: NodeList == NodeList",
                    "NodeList",
                    "NodeField: status",
                    "NodeField: nodeInfo",
                    "NodeField: osImage",
                    "NodeList",
                    f"NodeText: {text}",
                ],
            )
            for operand, text in [
                ('"()"', "()"),
                ('"(\\"\\")"', '("")'),
                ('"{[()]}"', "{[()]}"),
                ("\"''\"", "''"),
                ("'\"\"'", '""'),
                ("'\\\\\\''", "\\'"),
                ("'Linux'", "Linux"),
            ]
        ],
        (
            '{[?(@.test == "())(")]}',
            [
                "NodeList",
                "NodeFilter: NodeList == NodeList",
                "NodeList",
                "NodeField: test",
                "NodeList",
                "NodeText: ())(",
            ],
        ),
        ("{[-5:]}", ["NodeList", "NodeArray: [{-5 true false} {0 false false} {0 false false}]"]),
        ("{[-1]}", ["NodeList", "NodeArray: [{-1 true false} {0 true true} {0 false false}]"]),
        ("{[1:-1]}", ["NodeList", "NodeArray: [{1 true false} {-1 true false} {0 false false}]"]),
        (
            "{[?(@.ok==true)]}",
            ["NodeList", "NodeFilter: NodeList == NodeList", "NodeList", "NodeField: ok", "NodeList", "NodeBool: true"],
        ),
        (
            "{[?(@.x>1.5)]}",
            [
                "NodeList",
                "NodeFilter: NodeList > NodeList",
                "NodeList",
                "NodeField: x",
                "NodeList",
                "NodeFloat: 1.500000",
            ],
        ),
        ("{[?(@.x)]}", ["NodeList", "NodeFilter: NodeList exists NodeList", "NodeList", "NodeField: x", "NodeList"]),
        ("{.a\\.b}", ["NodeList", "NodeField: a.b"]),
    ],
)
def test_parser(text, nodes):
    assert [str(n) for n in collect(parse("test", text).root)[1:]] == nodes


@pytest.mark.parametrize(
    ("text", "err"),
    [
        ("{.hello", "unclosed action"),
        ("{*}", "unrecognized character in action: U+002A '*'"),
        ("{\\\\\\}", "unrecognized character in action: U+005C '\\'"),
        ("{\t.a}", "unrecognized character in action: U+0009"),
        ("{.a\n}", "unclosed action"),
        ("{+12.3.0}", "cannot parse number +12.3.0"),
        ("{[1}", "unterminated array"),
        ("{[?(.price]}", "unterminated filter"),
        ("{[?(@.a==1)x}", "unclosed array expect ]"),
        ("{........}", "invalid multiple recursive descent"),
        ('{"abc}', "unterminated quoted string"),
        ("{'\\\"'}", "unquote string '\\\"' error invalid syntax"),
        ('{"\\q"}', 'unquote string "\\q" error invalid syntax'),
        ("{[a]}", "invalid array index a"),
        ('{["a.b"]}', 'invalid array index "a.b"'),
        ("{[-]}", "array index - is not a number"),
        ('{[?(@.a=~"x")]}', "unrecognized character in action: U+007E '~'"),
    ],
)
def test_fail_parser(text, err):
    with pytest.raises(JSONPathError) as got:
        parse("test", text)
    assert str(got.value) == err


@pytest.mark.parametrize(
    ("template", "expect"),
    [
        ('{"a\\tb\\u00e9\\x41\\101"}', "a\tbéAA"),
        ("{'it\\'s'}", "it's"),
        ("{.a} {1} {-2.5} {true}", "x 1 -2.5 true"),
    ],
)
def test_literals(template, expect):
    assert run(template, {"a": "x"}) == expect
