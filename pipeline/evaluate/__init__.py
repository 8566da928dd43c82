"""Evaluation: playing the trained policy, scoring its episodes, the verdict.

See docs/architecture.md §9.
"""
