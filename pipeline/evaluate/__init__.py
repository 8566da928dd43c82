"""Evaluation: playing the trained policy, scoring its episodes and the verdict (docs/architecture.md §9)."""
