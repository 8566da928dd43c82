"""Built-in tasks, each a package registered through ``register_tasks``."""
