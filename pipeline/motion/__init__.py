"""The motion file: format, validation, authoring, conversion and replay.

See docs/architecture.md §2.
"""
