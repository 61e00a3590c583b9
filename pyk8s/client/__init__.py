"""Talking to an API server (upstream: client-go): kubeconfig, the REST client, informers, workqueue,
leader election, events and manifests."""
