"""Every pydantic model of the product builds its validator and serializer. `DomainModel` (and a few other models)
defer that build to a model's first use (`defer_build`, which keeps ~0.1 s off every `bearagent` start), so a model
whose schema pydantic cannot build (an unresolved forward reference, a type it cannot validate) would otherwise fail
only when a run first meets it."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from pydantic import BaseModel

import bearagent


def _subclasses(cls: type[BaseModel]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


@pytest.mark.slow
def test_every_model_of_every_module_builds() -> None:
    for info in pkgutil.walk_packages(bearagent.__path__, "bearagent."):
        if info.name.rsplit(".", 1)[-1] != "__main__":  # __main__ runs the CLI
            importlib.import_module(info.name)
    models = [m for m in _subclasses(BaseModel) if m.__module__.startswith("bearagent.")]
    assert len(models) > 100, f"only {len(models)} models found: did the walk import the product?"
    broken: list[str] = []
    for model in models:
        if model.__pydantic_generic_metadata__["parameters"]:
            continue  # an unparametrised generic is built where it is parametrised
        try:
            model.model_rebuild(force=True)
            model.model_json_schema()
        except Exception as exc:  # every failure is collected, so one run names them all
            broken.append(f"{model.__module__}.{model.__qualname__}: {exc}")
    assert not broken, "\n".join(broken)
