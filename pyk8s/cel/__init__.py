"""CEL for Kubernetes: the environment rules compile in (environment.py), Kubernetes' library functions
(library.py, kubetypes.py), JSON values as rules see them (values.py), and the checked tree with a static cost
estimate (checked.py, schemacheck.py). Upstream: apiserver pkg/cel and cel-go.

The runtime is cel-expr-python (Google's cel-cpp), chosen by measurement over common-expression-language (Rust
cel-interpreter) and cel-python (pure Python celpy). Per call on this machine, for `self.minReplicas <=
self.replicas && self.replicas <= self.maxReplicas` / `self.items.all(x, x.name.startsWith('a'))` (10 items) /
`self.replicas >= oldSelf.replicas`:

    compile (us)          cel-cpp 50 / 38 / 24    Rust 20 / 17 / 8     celpy 263 / 263 / 90
    evaluate (us)         cel-cpp 2.9 / 5.9 / 2.7  Rust 3.1 / 30 / 3.4  celpy 168 / 1071 / 113 (37 transpiled)

Only cel-cpp has a type checker (cel-go's `undeclared reference` and `found no matching overload` errors, in
cel-go's format), typed overloads for custom functions, the `.?`/`[?]` optional syntax, and cel-go's strings v2,
sets and optional libraries; all three have the macros, `has()` and int overflow errors. What cel-cpp lacks:
cross-type numeric comparisons in its checker (a rule failing on them is compiled again with numbers as dyn),
object types outside protobuf (objects are `map(string, dyn)`, `undefined field` is found by schemacheck.py),
type parameters and optional-typed variables in its Python binding (list functions take `list(dyn)`;
optionalOldSelf is bound with `cel.bind`), `string(cidr)`, and cost tracking: a rule is charged its static cost
estimate (over the actual value's sizes when that estimate is large), and the runtime itself stops any
evaluation after 10,000 comprehension iterations, reported as upstream's per-call cost limit.
"""
