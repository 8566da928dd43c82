"""Devices: backends, resolving ``--device`` and probing (docs/architecture.md §4)."""

from ..legacy import names_of

# primebot.pipeline.devices was a module in 0.1; its names are handed on, with a DeprecationWarning.
__getattr__ = names_of(__name__)
