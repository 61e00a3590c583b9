"""Kubernetes' CEL library functions against the results upstream's tests expect (apiserver pkg/cel/library
*_test.go and apiextensions-apiserver's validation tests), plus the environment's compile errors."""

from __future__ import annotations

import pytest

from pyk8s.cel.environment import DYN, CompileError, Decl, EvalError, compile_expression


def evaluate(expr: str, self_value: object = None, decl: Decl = DYN) -> object:
    program = compile_expression(expr, decl)
    return program.evaluate(program.activation(self_value))


RESULTS = [
    # lists
    ("[1, 2, 3].isSorted()", True),
    ("[1, 3, 2].isSorted()", False),
    ("['a', 'b', 'b'].isSorted()", True),
    ("[1, 2, 3].sum()", 6),
    ("[1.5, 2.5].sum()", 4.0),
    ("[3, 1, 2].min()", 1),
    ("[3, 1, 2].max()", 3),
    ("['b', 'a'].min()", "a"),
    ("[1, 2, 2, 3].indexOf(2)", 1),
    ("[1, 2, 2, 3].lastIndexOf(2)", 2),
    ("[1, 2].indexOf(5)", -1),
    ("[[1], [2]].indexOf([2])", 1),
    # regex
    ("'abc 123'.find('[0-9]+')", "123"),
    ("'abc'.find('[0-9]+')", ""),
    ("'123 abc 456'.findAll('[0-9]+')", ["123", "456"]),
    ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
    ("'123 abc 456'.findAll('[0-9]+', 0)", []),
    ("'baaa'.findAll('a*')", ["", "aaa"]),
    # urls
    ("url('https://example.com:80/path?k=v').getScheme()", "https"),
    ("url('https://example.com:80/path').getHost()", "example.com:80"),
    ("url('https://example.com:80/path').getHostname()", "example.com"),
    ("url('https://[::1]:80/path').getHostname()", "::1"),
    ("url('https://example.com:80/path').getPort()", "80"),
    ("url('https://example.com/path').getPort()", ""),
    ("url('https://example.com/with space').getEscapedPath()", "/with%20space"),
    ("url('https://example.com/p?k=a&k=b&j=c').getQuery()", {"k": ["a", "b"], "j": ["c"]}),
    ("url('/absolute-path').getHost()", ""),
    ("isURL('https://example.com')", True),
    ("isURL('example.com')", False),
    ("isURL('')", False),
    # quantity
    ("quantity('1Ki') == quantity('1024')", True),
    ("quantity('1000m') == quantity('1')", True),
    ("quantity('50k').isGreaterThan(quantity('50M'))", False),
    ("quantity('50M').isGreaterThan(quantity('50k'))", True),
    ("quantity('50k').isLessThan(quantity('50M'))", True),
    ("quantity('200M').compareTo(quantity('0.2G'))", 0),
    ("quantity('50k').compareTo(quantity('50M'))", -1),
    ("quantity('50k').add(quantity('20')) == quantity('50.02k')", True),
    ("quantity('50k').add(20) == quantity('50020')", True),
    ("quantity('50k').sub(quantity('20')) == quantity('49980')", True),
    ("quantity('50k').sub(20).asInteger()", 49980),
    ("quantity('5k').asApproximateFloat()", 5000.0),
    ("quantity('1.5').isInteger()", False),
    ("quantity('50M').isInteger()", True),
    ("sign(quantity('-50M'))", -1),
    ("sign(quantity('0'))", 0),
    ("isQuantity('20')", True),
    ("isQuantity('20x')", False),
    # ip
    ("string(ip('192.168.0.1'))", "192.168.0.1"),
    ("isIP('192.168.0.1')", True),
    ("isIP('192.168.0.1.0')", False),
    ("isIP('2001:db8:::68')", False),
    ("ip.isCanonical('127.0.0.1')", True),
    ("ip.isCanonical('2001:db8::68')", True),
    ("ip.isCanonical('2001:DB8::68')", False),
    ("ip('192.168.0.1').family()", 4),
    ("ip('2001:db8::68').family()", 6),
    ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('127.0.0.1').isUnspecified()", False),
    ("ip('127.0.0.1').isLoopback()", True),
    ("ip('1.2.3.4').isLoopback()", False),
    ("ip('224.0.0.1').isLinkLocalMulticast()", True),
    ("ip('224.0.1.1').isLinkLocalMulticast()", False),
    ("ip('ff02::1').isLinkLocalMulticast()", True),
    ("ip('169.254.169.254').isLinkLocalUnicast()", True),
    ("ip('192.168.0.1').isLinkLocalUnicast()", False),
    ("ip('fe80::1').isLinkLocalUnicast()", True),
    ("ip('192.168.0.1').isGlobalUnicast()", True),
    ("ip('255.255.255.255').isGlobalUnicast()", False),
    ("ip('2001:db8::68') == ip('2001:DB8::68')", True),
    # cidr
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", True),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))", False),
    ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", True),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))", True),
    ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')", False),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/24'))", True),
    ("string(cidr('192.168.0.1/24').ip())", "192.168.0.1"),
    ("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.0/24').prefixLength()", 24),
    ("cidr('2001:db8::/32').ip().family()", 6),
    ("isCIDR('192.168.0.0/24')", True),
    ("isCIDR('192.168.0.0/33')", False),
    ("isCIDR('192.168.0.0')", False),
    # cel-go ext strings v2, sets and optionals, served by the runtime
    ("'hello'.charAt(1)", "e"),
    ("'hello'.indexOf('l')", 2),
    ("'hello'.lastIndexOf('l')", 3),
    ("'Hello'.lowerAscii()", "hello"),
    ("'Hello'.upperAscii()", "HELLO"),
    ("'a-b-c'.replace('-', '+')", "a+b+c"),
    ("'a-b-c'.replace('-', '+', 1)", "a+b-c"),
    ("'a,b,c'.split(',')", ["a", "b", "c"]),
    ("'hello'.substring(1, 3)", "el"),
    ("'  x  '.trim()", "x"),
    ("['a', 'b'].join('-')", "a-b"),
    ("'%s is %d'.format(['x', 5])", "x is 5"),
    ("sets.contains([1, 2, 3], [3, 1])", True),
    ("sets.equivalent([1, 2], [2, 1, 1])", True),
    ("sets.intersects([1], [2])", False),
    ("optional.of(1).hasValue()", True),
    ("optional.none().orValue(5)", 5),
    ("{'a': 1}.?b.orValue(7)", 7),
    ("{'a': 1}.?a.value()", 1),
    # macros, has(), heterogeneous numbers
    ("[1, 2, 3].all(x, x > 0)", True),
    ("[1, 2, 3].exists(x, x > 2)", True),
    ("[1, 2, 3].exists_one(x, x > 1)", False),
    ("[1, 2, 3].map(x, x * 2)", [2, 4, 6]),
    ("[1, 2, 3].filter(x, x % 2 == 1)", [1, 3]),
    ("has({'a': 1}.a)", True),
    ("dyn(1) == 1.0", True),
    ("dyn(1) < 1.5", True),
]


@pytest.mark.parametrize(("expr", "expected"), RESULTS)
def test_function_results(expr, expected):
    result = evaluate(expr)
    assert result == expected
    assert type(result) is type(expected)


ERRORS = [
    ("[].min()", "min called on empty list"),
    ("[].max()", "max called on empty list"),
    ("[9223372036854775807, 1].sum()", "integer overflow"),
    ("'abc'.find('[')", "Illegal regex: error parsing regexp: missing closing ]: `[`"),
    (
        "url('example.com')",
        'URL parse error during conversion from string: parse "example.com": invalid URI for request',
    ),
    ("quantity('20x')", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("quantity('9223372036854775807000').asInteger()", "cannot convert value to integer"),
    (
        "ip('192.168.0.1.0')",
        'IP Address "192.168.0.1.0" parse error during conversion from string: ParseAddr("192.168.0.1.0"): IPv4 address too long',
    ),
    ("ip('::ffff:1.2.3.4')", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
    ("ip('fe80::1%eth0')", 'IP address "fe80::1%eth0" with zone value is not allowed'),
    (
        "cidr('192.168.0.0')",
        "network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0\"): no '/'",
    ),
    ("9223372036854775807 + 1", "integer overflow"),
    ("1 / 0", "division by zero"),
    ("{'a': 1}.b", "no such key: b"),
]


@pytest.mark.parametrize(("expr", "message"), ERRORS)
def test_function_errors(expr, message):
    with pytest.raises(EvalError) as err:
        evaluate(expr)
    assert str(err.value) == message


def test_self_index_out_of_bounds():
    with pytest.raises(EvalError, match=r"^index out of bounds: 5$"):
        evaluate("self[5] == 1", [1, 2], Decl("list", Decl("int")))


COMPILE_ERRORS = [
    (
        "foo == 1",
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^",
    ),
    ("self.startsWith(1)", "found no matching overload for 'startsWith' applied to '(string, int)'"),
    ("1 +", "compilation failed: ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>'"),
    ("string(cidr('10.0.0.0/8'))", "found no matching overload for 'string'"),
]


@pytest.mark.parametrize(("expr", "message"), COMPILE_ERRORS)
def test_compile_errors(expr, message):
    with pytest.raises(CompileError) as err:
        compile_expression(expr, Decl("string"))
    assert message in err.value.detail


def test_cross_type_numeric_comparison_compiles():
    """A typed int compared with a double literal: upstream's CrossTypeNumericComparisons accepts it."""
    program = compile_expression("self < 2.5", Decl("int"))
    assert program.evaluate(program.activation(2)) is True


def test_optional_old_self_errors_point_into_the_rule():
    with pytest.raises(CompileError) as err:
        compile_expression("oldSelf.hasValue() &&\n  nope", DYN, optional_old_self=True)
    assert err.value.detail.startswith("compilation failed: ERROR: <input>:2:3: undeclared reference to 'nope'")
