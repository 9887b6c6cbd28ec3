"""The package list in pyproject.toml names every package of the source tree.

An editable install finds any folder, so the tests pass without it; a plain
`pip install .` installs only the listed packages, and a missing one breaks the import.
"""

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent


def source_packages():
    """Dotted names of the folders with an __init__.py, as pyproject's package-dir maps them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    names = set()
    for prefix, folder in config["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            relative = init.parent.relative_to(base).parts
            names.add(".".join((prefix, *relative)))
    return names, set(config["packages"])


def test_every_package_of_the_tree_is_listed():
    found, listed = source_packages()
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_every_listed_package_exists():
    found, listed = source_packages()
    assert listed - found == set()
