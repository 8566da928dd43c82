"""Devices: backends, resolving ``--device`` and probing (docs/architecture.md §4)."""
