"""The motion file: its format, validation, authoring, conversion and replay (docs/architecture.md §2)."""
