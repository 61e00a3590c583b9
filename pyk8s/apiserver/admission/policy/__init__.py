"""Admission policies: ValidatingAdmissionPolicy and its bindings, evaluated with CEL (upstream: apiserver
pkg/admission/plugin/policy and pkg/admission/plugin/cel).

compile.py compiles and evaluates admission expressions; matching.py says which requests a policy or binding
applies to; validating.py is the admission plugin.
"""
