"""Training: the session behind ``primebot train``, the runner, configuration, checkpoints and log
(docs/architecture.md §3)."""
