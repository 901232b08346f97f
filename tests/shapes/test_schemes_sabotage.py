"""Each Sabotage control disables what it says, and only where it says.

Every test runs one scenario twice, normally and sabotaged, and asserts the
difference: the scenario passes normally and demonstrably fails under the
sabotage. That is what shows the scheme tests test something.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from axisflow.shapes import Sabotage, Scheme, Session, ShapeError, Tensor, scheme

from .test_schemes import apply, capture_scheme, mlp_layer, traced, trailing_set_dim


def outcome(run: object) -> object:
    """The value ``run()`` returns, or the text of the ShapeError it raises."""
    try:
        return run()  # type: ignore[operator]
    except ShapeError as error:
        return f"ShapeError: {error}"


def test_no_generalization_makes_applications_share_variables() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        _, layer = mlp_layer(s)
        small = apply(layer, "small", s.leaf("xs", "2|->3"), sabotage=sabotage)[0]
        big = apply(layer, "big", s.leaf("xb", "7|->3"), sabotage=sabotage)[0]
        s.close()
        return small.shape.dims(), big.shape.dims()

    assert outcome(lambda: scenario(None)) == (((2,), (), (4,)), ((7,), (), (4,)))
    sabotaged = outcome(lambda: scenario(Sabotage.NO_GENERALIZATION))
    assert isinstance(sabotaged, str)
    assert sabotaged.startswith("ShapeError: applying the shape scheme layer to big: ")
    assert "batch axes disagree" in sabotaged


def test_no_generalization_applies_to_check_too() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        _, layer = mlp_layer(s)
        apply(layer, "small", s.leaf("xs", "2|->3"), sabotage=sabotage)
        scheme.check(
            layer, application="probe", args=[s.leaf("xb", "7|->3")], sabotage=sabotage
        )
        return "consistent"

    assert outcome(lambda: scenario(None)) == "consistent"
    assert str(outcome(lambda: scenario(Sabotage.NO_GENERALIZATION))).startswith(
        "ShapeError: applying the shape scheme layer to probe: "
    )


def test_sever_shared_unties_applications_from_the_shared_weight() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        w, layer = mlp_layer(s)
        apply(layer, "first", s.leaf("x1", "8|->3"), sabotage=sabotage)
        apply(layer, "second", s.leaf("x2", "8|->5"), sabotage=sabotage)
        return w.shape.describe()

    normal = outcome(lambda: scenario(None))
    assert str(normal).startswith(
        "ShapeError: applying the shape scheme layer to second: compose 'h' of w, x2"
    )
    # Sabotaged, no application is tied to w: nothing disagrees, w learns nothing.
    assert outcome(lambda: scenario(Sabotage.SEVER_SHARED)) == "...->4"


def test_sever_shared_applies_to_check_too() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        _, layer = mlp_layer(s)
        apply(layer, "first", s.leaf("x1", "8|->3"))
        scheme.check(
            layer, application="probe", args=[s.leaf("x2", "->5")], sabotage=sabotage
        )
        return "consistent"

    assert str(outcome(lambda: scenario(None))).startswith("ShapeError: applying")
    assert outcome(lambda: scenario(Sabotage.SEVER_SHARED)) == "consistent"


def test_no_marks_loses_the_policy_that_makes_a_row_safe_to_guess() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        # The function makes its own bias; its input row is only used pointwise,
        # which the policy marks make safe to close to no axes.
        sc = traced(s, lambda xs: [s.pointwise("y", xs[0], s.param("p", "...->3"))])
        applied = scheme.instantiate(
            sc,
            application="site",
            args=[s.leaf("x", "2|->3")],
            results=[s.fresh("out")],
            sabotage=sabotage,
        )
        s.close()
        return applied.internal[0].dims()

    assert outcome(lambda: scenario(None)) == ((), (), (3,))
    sabotaged = str(outcome(lambda: scenario(Sabotage.NO_MARKS)))
    assert sabotaged.startswith(
        "ShapeError: You forgot to specify the hidden dimension(s) of parameter 'p': "
        "the number of its input axes"
    )
    assert sabotaged.endswith("in shape scheme f at application 'site')")


def test_no_internal_rows_leaves_the_intermediate_tensors_unsolved() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        _, layer = mlp_layer(s)
        applied = scheme.instantiate(
            layer,
            application="site",
            args=[s.leaf("x", "8|->3")],
            results=[s.fresh("y")],
            sabotage=sabotage,
        )
        s.close()
        return [shape.dims() for shape in applied.internal]

    assert outcome(lambda: scenario(None)) == [((8,), (), (4,)), ((8,), (), (4,))]
    assert str(outcome(lambda: scenario(Sabotage.NO_INTERNAL_ROWS))).startswith(
        "ShapeError: the shape of 'h' is not solved yet"
    )


def test_no_end_validation_lets_a_swallowed_contradiction_through() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        sc = traced(s, trailing_set_dim(s, swallow=True), sabotage=sabotage)
        # The function's own contradiction does not depend on the arguments,
        # yet the scheme now applies: it is unsound.
        apply(sc, "site", s.leaf("x", "3"))
        return "applied"

    normal = str(outcome(lambda: scenario(None)))
    assert normal.startswith("ShapeError: tracing the shape scheme f: ")
    assert "set_dim('k') has size 4" in normal
    assert outcome(lambda: scenario(Sabotage.NO_END_VALIDATION)) == "applied"


def test_no_ref_inputs_ignores_the_capture_reference() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        ref, sc = capture_scheme(s)
        s.set_dim(ref, 4)  # type: ignore[arg-type]
        apply(sc, "site", s.leaf("x", "3"), sabotage=sabotage)
        return ref.value  # type: ignore[attr-defined]

    assert "capture reference 'h' has size 4" in str(outcome(lambda: scenario(None)))
    assert outcome(lambda: scenario(Sabotage.NO_REF_INPUTS)) == 4


def test_no_ref_inputs_applies_to_check_too() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        ref, sc = capture_scheme(s)
        s.set_dim(ref, 4)  # type: ignore[arg-type]
        scheme.check(
            sc, application="probe", args=[s.leaf("x", "3")], sabotage=sabotage
        )
        return "consistent"

    assert "capture reference 'h' has size 4" in str(outcome(lambda: scenario(None)))
    assert outcome(lambda: scenario(Sabotage.NO_REF_INPUTS)) == "consistent"


# ------------------------------------------------------ only where it says


def layer_text(sabotage: Sabotage | None) -> list[str]:
    s = Session()
    _, layer = mlp_layer_traced_with(s, sabotage)
    return layer.to_lines()


def mlp_layer_traced_with(
    s: Session, sabotage: Sabotage | None
) -> tuple[Tensor, Scheme]:
    w = s.param("w", "...->4")
    ref = s.dim_ref("j")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        h = s.compose("h", w, xs[0])
        return [
            s.einsum(
                "y",
                "...|j=>...|j",
                s.pointwise("p", h, s.param("b")),
                capture_dims=[ref],
            )
        ]

    return w, traced(s, body, label="layer", sabotage=sabotage)


@pytest.mark.parametrize(
    "sabotage",
    [m for m in Sabotage if m is not Sabotage.NO_END_VALIDATION],
)
def test_sabotages_of_applications_do_not_change_the_trace(sabotage: Sabotage) -> None:
    assert layer_text(sabotage) == layer_text(None)


@pytest.mark.parametrize(
    "sabotage",
    [Sabotage.NO_MARKS, Sabotage.NO_INTERNAL_ROWS, Sabotage.NO_END_VALIDATION],
)
def test_sabotages_of_trace_and_instantiate_do_not_change_check(
    sabotage: Sabotage,
) -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        _, layer = mlp_layer(s)
        apply(layer, "first", s.leaf("x1", "8|->3"))
        results = []
        for width in (3, 5):
            x = s.leaf(f"x{width}", f"->{width}")
            results.append(
                outcome(
                    lambda x=x: scheme.check(
                        layer, application="probe", args=[x], sabotage=sabotage
                    )
                )
            )
        return results

    assert scenario(sabotage) == scenario(None)


def test_no_end_validation_does_not_change_instantiate() -> None:
    def scenario(sabotage: Sabotage | None) -> object:
        s = Session()
        w, layer = mlp_layer(s)
        y = apply(layer, "first", s.leaf("x1", "8|->3"), sabotage=sabotage)[0]
        s.close()
        return y.shape.dims(), w.shape.dims()

    assert scenario(Sabotage.NO_END_VALIDATION) == scenario(None)


def test_several_sabotages_at_once() -> None:
    s = Session()
    _, layer = mlp_layer(s)
    applied = scheme.instantiate(
        layer,
        application="site",
        args=[s.leaf("x", "8|->3")],
        results=[s.fresh("y")],
        sabotage=[Sabotage.NO_INTERNAL_ROWS, Sabotage.NO_MARKS],
    )
    assert not any(s.is_registered(shape) for shape in applied.internal)
