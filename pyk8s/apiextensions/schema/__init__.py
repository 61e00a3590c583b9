"""The value side of CRD schemas: validating, pruning and defaulting custom resources (upstream:
apiextensions-apiserver pkg/apiserver/schema and pkg/apiserver/validation)."""
