"""Shared fixtures: backends are parametrised by factory so every contract test
runs against every implementation (PyBullet and MuJoCo).

A backend that does not build a scene (today both build every shipped scene; a scene registered later
may be PyBullet-only) must
refuse it with one ``ValueError`` naming the scenes it has: the fixtures check exactly that, and
then skip the rest of that test for that backend with a reason saying so.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Dict

import pytest

# Allow `python -m pytest test` from the package root without installing.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sim_bridges import BACKENDS, backend_scenes  # noqa: E402
from sim_bridges.contract import SimBackend  # noqa: E402
from sim_bridges.scenes import scene_names  # noqa: E402

#: Backend name -> factory(**constructor kwargs): the package registry, so a newly
#: registered backend (e.g. "isaac") is held to this suite automatically.
BACKEND_FACTORIES: Dict[str, Callable[..., SimBackend]] = BACKENDS


def refuse_or_pass(backend_name: str, backend: SimBackend, scene: str) -> None:
    """For a scene ``backend_name`` does not build: check it refuses with the one clear error, then skip."""
    if scene not in scene_names() or scene in backend_scenes(backend_name):
        return
    with pytest.raises(ValueError) as err:
        _load_unwrapped(backend, scene)
    message = str(err.value)
    assert "\n" not in message and scene in message and backend_name in message
    for name in backend_scenes(backend_name):
        assert name in message
    pytest.skip(f"backend '{backend_name}' does not build scene '{scene}' (refused with: {message})")


def _load_unwrapped(backend: SimBackend, scene: str, **options) -> None:
    type(backend).load_scene(backend, scene, **options)


@pytest.fixture(params=sorted(BACKEND_FACTORIES))
def backend_name(request) -> str:
    return request.param


@pytest.fixture(params=sorted(BACKEND_FACTORIES))
def make_backend(request):
    """Factory creating backends of the parametrised kind; closes them afterwards.

    ``load_scene`` of a scene the backend does not build checks the refusal and skips the test.
    """
    created = []

    def factory(**kwargs) -> SimBackend:
        backend = BACKEND_FACTORIES[request.param](**kwargs)
        created.append(backend)

        def load_scene(name: str, **options) -> None:
            refuse_or_pass(request.param, backend, name)
            _load_unwrapped(backend, name, **options)

        backend.load_scene = load_scene
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
            try:
                refuse_or_pass(request.param, backend, scene)
            except BaseException:
                backend.close()
                raise
            backend.load_scene(scene)
            loaded[scene] = backend
        return loaded[scene]

    yield get
    for backend in loaded.values():
        backend.close()
