"""Robots: the spec plugins register, its checks, kinematics and the scaffold for a new robot."""

from ..legacy import names_of

# primebot.pipeline.robot was a module in 0.1; its names are handed on, with a DeprecationWarning.
__getattr__ = names_of(__name__)
