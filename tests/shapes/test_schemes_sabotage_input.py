"""The sabotage parameter takes None, one Sabotage member or an iterable of
members, nothing else (issue 18: ``""`` and mixed lists were suspected to
pass as "no sabotage")."""

from __future__ import annotations

import pytest

from axisflow.shapes import Sabotage, Session, ShapeError, scheme

from .test_schemes import mlp_layer

BAD_SABOTAGES = [
    ("", "''"),
    ("no_marks", "'no_marks'"),
    ([Sabotage.NO_MARKS, "x"], "[<Sabotage.NO_MARKS: 'no_marks'>, 'x']"),
    (("x",), "('x',)"),
    (0, "0"),
    (False, "False"),
]


@pytest.mark.parametrize(("sabotage", "shown"), BAD_SABOTAGES)
def test_trace_refuses_a_sabotage_that_is_not_members(
    sabotage: object, shown: str
) -> None:
    s = Session()
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        with pytest.raises(ShapeError) as info:
            scheme.trace(
                s,
                var_mark=mark,
                label="f",
                args=[x],
                f=lambda: [x],
                sabotage=sabotage,  # type: ignore[arg-type]
            )
    assert str(info.value) == (
        f"tracing the shape scheme f: sabotage must be a Sabotage member, got {shown}"
    )


@pytest.mark.parametrize(("sabotage", "shown"), BAD_SABOTAGES)
def test_instantiate_refuses_a_sabotage_that_is_not_members(
    sabotage: object, shown: str
) -> None:
    s = Session()
    _, layer = mlp_layer(s)
    x = s.leaf("x", "2|->3")
    y = s.fresh("y")
    with pytest.raises(ShapeError) as info:
        scheme.instantiate(
            layer,
            application="app",
            args=[x],
            results=[y],
            sabotage=sabotage,  # type: ignore[arg-type]
        )
    message = str(info.value)
    assert message.endswith(f"sabotage must be a Sabotage member, got {shown}")
    assert "app" in message


def test_members_alone_or_in_any_iterable_are_accepted() -> None:
    def dims(sabotage: object) -> object:
        s = Session()
        _, layer = mlp_layer(s)
        y = s.fresh("y")
        scheme.instantiate(
            layer,
            application="app",
            args=[s.leaf("x", "2|->3")],
            results=[y],
            sabotage=sabotage,  # type: ignore[arg-type]
        )
        s.close()
        return y.shape.dims()

    normal = dims(None)
    assert normal == ((2,), (), (4,))
    assert dims([]) == normal
    assert dims(Sabotage.NO_END_VALIDATION) == normal
    assert dims([Sabotage.NO_END_VALIDATION]) == normal
    assert dims(iter((Sabotage.NO_END_VALIDATION, Sabotage.NO_END_VALIDATION))) == (
        normal
    )
