"""The ``tracking`` task: a humanoid imitates a reference motion (mjlab's BeyondMimic port is the
reference)."""
