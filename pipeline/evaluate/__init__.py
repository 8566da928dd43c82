"""Evaluation: playing the trained policy, scoring its episodes and the verdict
(docs/architecture.md §9)."""

from ..legacy import names_of

# primebot.pipeline.evaluate was a module in 0.1; its names are handed on, with a
# DeprecationWarning.
__getattr__ = names_of(__name__)
