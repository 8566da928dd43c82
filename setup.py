"""Maps the source folders onto the ``primebot`` namespace.

docs/architecture.md §1 keeps the core in ``pipeline/`` and the built-ins in ``plugins/`` at
the top of the repository, but installs them as ``primebot.pipeline`` and
``primebot.plugins``; pyproject.toml alone cannot express a renaming that
reaches every sub-package, so the mapping is computed here.
"""

from setuptools import find_packages, setup

SOURCE_ROOTS = ("pipeline", "plugins")

packages = [
    f"primebot.{name}"
    for name in find_packages(include=[f"{root}*" for root in SOURCE_ROOTS])
]

setup(
    packages=packages,
    package_dir={f"primebot.{root}": root for root in SOURCE_ROOTS},
    package_data={f"primebot.{root}": ["**/*.xml", "**/*.yaml", "**/*.npz", "**/*.html"]
                  for root in SOURCE_ROOTS},
)
