"""Shared fixtures: backends are parametrised by factory so every contract test
runs against every implementation (today only PyBullet)."""

from __future__ import annotations

import os
import sys
from typing import Callable, Dict

import pytest

# Allow `python -m pytest test` from the package root without installing.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sim_bridges import BACKENDS  # noqa: E402
from sim_bridges.contract import SimBackend  # noqa: E402

#: Backend name -> factory(**constructor kwargs): the package registry, so a newly
#: registered backend (e.g. "isaac") is held to this suite automatically.
BACKEND_FACTORIES: Dict[str, Callable[..., SimBackend]] = BACKENDS


@pytest.fixture(params=sorted(BACKEND_FACTORIES))
def make_backend(request):
    """Factory creating backends of the parametrised kind; closes them afterwards."""
    created = []

    def factory(**kwargs) -> SimBackend:
        backend = BACKEND_FACTORIES[request.param](**kwargs)
        created.append(backend)
        return backend

    yield factory
    for backend in created:
        backend.close()


@pytest.fixture(scope="module", params=sorted(BACKEND_FACTORIES))
def scene_cache(request):
    """``get(scene)`` -> a loaded backend shared within the module (tests reset it)."""
    loaded: Dict[str, SimBackend] = {}

    def get(scene: str) -> SimBackend:
        if scene not in loaded:
            backend = BACKEND_FACTORIES[request.param]()
            backend.load_scene(scene)
            loaded[scene] = backend
        return loaded[scene]

    yield get
    for backend in loaded.values():
        backend.close()
