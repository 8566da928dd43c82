"""Pipeline stages: the stage contract, the runner, the run record and the presets."""

from ..legacy import names_of

# primebot.pipeline.stages was a module in 0.1; its names are handed on, with a DeprecationWarning.
__getattr__ = names_of(__name__)
