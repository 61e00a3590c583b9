"""Server-side apply's engine, as upstream's structured-merge-diff (sigs.k8s.io/structured-merge-diff v4):
field paths and sets (`fieldpath`), schema-aware operations on plain dict objects (`typed`: field sets,
comparison, merge, removal) and the ownership rules of Update and Apply (`updater`). The manager stack of
the API server on top of it (decoding managedFields, caps, before-first-apply, the last-applied bridge) is
`api/field_manager.py`.
"""
