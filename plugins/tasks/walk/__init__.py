"""The ``walk`` task (seed 000): a planar biped learns to walk forward."""
