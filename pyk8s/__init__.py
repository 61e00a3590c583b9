"""pyk8s: a Kubernetes control plane in Python that speaks the v1.32 API."""

__version__ = "0.1.0"

# The Kubernetes release whose API pyk8s serves; `/version` reports it (kubectl picks its binary from it).
KUBERNETES_MAJOR = "1"
KUBERNETES_MINOR = "32"
