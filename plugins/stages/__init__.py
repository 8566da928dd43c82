"""Built-in pipeline stages, registered through ``register_stages`` like any plugin's."""
