"""The CRD server: CustomResourceDefinitions and the custom resources they define (upstream: apiextensions-apiserver)."""
