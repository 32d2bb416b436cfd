"""events.construct builds what pydantic's model_construct builds, for every event type: the same
values, defaults, fields set and serialisation, and no default shared between two events when it
could be changed through one of them."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from logphase.vocabulary.events import EVENT_TYPES, EventBase, construct

WHERE: dict[str, Any] = {"line": 7, "offset": 120, "raw": "[2026-01-01 00:00:00] text", "ts": "2026-01-01T00:00:00", "rule": "r"}


def _same(a: BaseModel, b: BaseModel) -> None:
    assert type(a) is type(b)
    assert a.__dict__ == b.__dict__
    assert list(a.__dict__) == list(b.__dict__)  # field order too (iteration, repr)
    assert a.model_fields_set == b.model_fields_set
    assert a.model_dump_json() == b.model_dump_json()
    assert a == b


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
def test_every_event_type_is_built_as_model_construct_builds_it(cls: type[EventBase]) -> None:
    # only the fields every event has: each type's own fields come from its defaults
    _same(construct(cls, dict(WHERE)), cls.model_construct(**WHERE))


def test_given_fields_win_and_unknown_names_are_dropped_as_model_construct_drops_them() -> None:
    cls = next(c for c in EVENT_TYPES if c.__name__ == "ServerArgs")
    values = {**WHERE, "args": {"tp_size": 2}, "args_format": "dict", "not_a_field": 1}
    built = construct(cls, dict(values))
    _same(built, cls.model_construct(**values))
    assert "not_a_field" not in built.__dict__


class _Mutable(BaseModel):
    items: list[int] = Field(default_factory=list)
    table: dict[str, list[int]] = {"a": [1]}
    name: str = "x"
    needed: int


def test_mutable_defaults_are_never_shared() -> None:
    one, two = construct(_Mutable, {}), construct(_Mutable, {})
    _same(one, _Mutable.model_construct(**{}))
    one.items.append(1)
    one.table["a"].append(2)
    assert two.items == [] and two.table == {"a": [1]}
    assert "needed" not in one.__dict__  # a required field left out stays out, as model_construct does


class _Aliased(BaseModel):
    value: int = Field(0, alias="v")


def test_a_model_the_plan_does_not_cover_goes_to_model_construct() -> None:
    values: dict[str, Any] = {"v": 3}
    _same(construct(_Aliased, dict(values)), _Aliased.model_construct(**values))
    assert construct(_Aliased, {"v": 3}).value == 3
