"""System tests: cross-package behaviour with real processes (see rlstack_testing)."""

from pathlib import Path

import pytest

pytest_plugins = ["rlstack_testing.pytest_plugin"]

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def params_dir() -> Path:
    return REPO / "launch" / "params"
