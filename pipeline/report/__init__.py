"""The run report: report.html and its curves."""

from ..legacy import names_of

# primebot.pipeline.report was a module in 0.1; its names are handed on, with a DeprecationWarning.
__getattr__ = names_of(__name__)
