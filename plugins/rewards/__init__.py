"""Built-in reward terms, registered through ``register_reward_terms`` like any plugin's."""
