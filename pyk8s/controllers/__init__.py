"""Controllers (upstream: pkg/controller) and the controller manager that runs them."""
