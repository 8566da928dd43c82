"""Simulation: batched MuJoCo physics, the VecEnv interface, the task contract and reward terms."""
