"""Built-in primebot plugins: robots, reward terms, tasks, device backends, stages.

Each module here is registered through the same hooks a third-party plugin
uses; the core (``primebot.pipeline``) never imports this package.
"""
