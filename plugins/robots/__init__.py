"""Built-in robots, each a package with its MJCF and a spec module registered through
``register_robots``."""
