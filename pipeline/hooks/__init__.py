"""The plugin host: hook specifications, loading plugins and the registry they fill
(docs/architecture.md §1)."""
