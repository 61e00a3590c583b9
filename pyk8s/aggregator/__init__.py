"""API aggregation (upstream: k8s.io/kube-aggregator and the parts of kube-apiserver that wire it in).

`APIService` objects (`apiregistration.k8s.io/v1`) say who serves each API group version: this server
(a local APIService, registered for every built-in and CRD group version) or an extension API server behind a
Service, to which requests for the group version are proxied with the front-proxy identity headers. Their
`Available` condition, the merged discovery documents and the `kube-system/extension-apiserver-authentication`
ConfigMap are kept here too; `apiserver.APIAggregator` puts the pieces together.
"""
