"""The core's own CLI commands, each a plugin module implementing ``register_commands``."""
