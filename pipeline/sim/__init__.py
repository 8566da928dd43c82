"""Simulation: batched MuJoCo physics, the VecEnv interface, the task contract and reward terms."""

from ..legacy import names_of

# primebot.pipeline.sim was a module in 0.1; its names are handed on, with a DeprecationWarning.
__getattr__ = names_of(__name__)
