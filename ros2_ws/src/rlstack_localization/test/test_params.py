"""The localizer's parameters: core dataclass <-> node declarations <-> params YAML <-> docs."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import yaml

from rlstack_localization.core import LocalizerParams

REPO = Path(__file__).resolve().parents[4]


def yaml_params() -> dict:
    data = yaml.safe_load((REPO / "launch" / "params" / "localizer.yaml").read_text())
    return data["/**"]["ros__parameters"]


def test_every_core_parameter_is_declared_and_set_with_its_default():
    from rlstack_localization.localizer_node import CORE_PARAMS

    names = {f.name for f in fields(LocalizerParams)}
    assert names == set(CORE_PARAMS)
    values = yaml_params()
    defaults = LocalizerParams()
    for name in names:
        assert name in values, f"launch/params/localizer.yaml lacks {name}"
        assert values[name] == getattr(defaults, name), name
    LocalizerParams(**{n: values[n] for n in names})   # the file's values are valid


def test_the_params_file_is_referenced_by_the_docs():
    text = (REPO / "docs" / "reference" / "localization.md").read_text()
    assert "launch/params/localizer.yaml" in text
    for key in ("/localization/state", "/amcl_pose", "/initialpose", "LOCALIZATION_LOST"):
        assert key in text
