"""The motion file: its format, validation, authoring, conversion and replay (docs/architecture.md
§2)."""

from ..legacy import names_of

# primebot.pipeline.motion was a module in 0.1; its names are handed on, with a DeprecationWarning.
__getattr__ = names_of(__name__)
