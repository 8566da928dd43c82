"""PPO in the rsl_rl shape: algorithm (verbs), storage (buffers), networks, normaliser, config.

The pure learner: it imports torch and numpy, nothing else of primebot (docs/architecture.md §1).
NPU-safe by construction (docs/architecture.md §4): no ``torch.distributions``; Gaussian
log-prob, entropy and KL are closed-form (``gaussian``); exploration noise
arrives from the host with the observations unless the device RNG is chosen.
Import the modules themselves (``ppo.algorithm.PPO``): importing the package, or its torch-free
``ppo.config``, does not load torch.
"""
