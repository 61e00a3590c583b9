"""What an object is, shared by every component (upstream: apimachinery): errors, the resource table,
metadata helpers, selectors, schemas and patches."""
