"""The user's tensors by input key: keys, axis layout, sources (.npz, Zarr,
Dask), and every shape, extent and symmetry error with its exact message."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import dask.array
import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axisflow.execution import (
    InputError,
    evaluate_expression,
    input_keys,
    input_signatures,
    read_inputs,
    signature_of,
)
from axisflow.sequant import Expression, PolicyError, SequantSyntaxError, parse
from tests.conftest import EXAMPLES
from tests.einsum_oracle import oracle_inputs, oracle_residual
from tests.forest.strategies import expressions, permuted

FOCK_T = "f{i_1;i_2} * t{a_1;i_2}"
F = np.arange(4.0).reshape(2, 2)
T = np.arange(6.0).reshape(3, 2)
PAIRS = "C{a_1<i_1,i_2>;μ̃_1} * E{b_1<i_1>;μ̃_1}"
"""A composite whose protos i_1, i_2 the frontend pairs in either order."""


def refused(expression: str, inputs: object, message: str, **options: object) -> None:
    with pytest.raises(InputError) as caught:
        read_inputs(expression, inputs, **options)  # type: ignore[arg-type]
    assert str(caught.value) == message


# --------------------------------------------------------------------------
# Keys and axes
# --------------------------------------------------------------------------


def test_the_inputs_of_the_csv_doubles_with_their_keys_axes_and_ties() -> None:
    text = (EXAMPLES / "sequant" / "csv_ccsd_doubles_residual_df.txt").read_text(
        "utf-8"
    )
    signatures = input_signatures(parse(text))
    keys = input_keys(signatures)
    listed = [
        (keys[s.exact_key], s.exact_key, s.axis_kinds, s.ties) for s in signatures
    ]
    assert listed[:8] == [
        ("g{μ̃;i;Κ}", "g{μ̃_1;i_1;Κ_1}", ("μ̃", "i", "Κ"), ()),
        ("C{a<i>;μ̃}", "C{a_1<i_1>;μ̃_1}", ("a<1>", "μ̃", "i"), ()),
        ("C{a<i,i>;μ̃}", "C{a_1<i_1,i_2>;μ̃_1}", ("a<2>", "μ̃", "i", "i"), ((2, 3),)),
        ("s{μ̃;μ̃}", "s{μ̃_1;μ̃_2}", ("μ̃", "μ̃"), ()),
        ("C{μ̃;a<i,i>}", "C{μ̃_1;a_1<i_1,i_2>}", ("μ̃", "a<2>", "i", "i"), ((2, 3),)),
        ("C{μ̃;a<i>}", "C{μ̃_1;a_1<i_1>}", ("μ̃", "a<1>", "i"), ()),
        ("t{a<i>;i}", "t{a_1<i_1>;i_1}", ("a<1>", "i"), ()),
        (
            "t{a<i,i>,a<i,i>;i,i}",
            "t{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}",
            ("a<2>", "a<2>", "i", "i"),
            (),
        ),
    ]
    assert len(signatures) == 14
    composite = signatures[2]
    assert [str(m) for m in composite.modes] == ["a_1<i_1,i_2>", "μ̃_1", "i_1", "i_2"]


def test_the_inputs_of_the_spin_free_doubles() -> None:
    text = (EXAMPLES / "sequant" / "ccsd_doubles_residual_sf.txt").read_text("utf-8")
    keys = input_keys(input_signatures(parse(text)))
    assert sorted(keys.values()) == sorted(
        [
            "g{i,a;i,i}",
            "t{a;i}",
            "t{a,a;i,i}",
            "g{i,i;a,a}",
            "g{a,a;i,a}",
            "g{i,a;a,i}",
            "g{a,a;a,a}",
            "g{i,a;i,a}",
            "f{i;i}",
            "g{i,i;i,i}",
            "f{a;a}",
            "g{i,a;a,a}",
            "g{i,i;i,a}",
            "f{a;i}",
            "g{a,a;i,i}",
            "f{i;a}",
        ]
    )


def test_an_occurrence_names_its_input_and_its_labels_on_every_axis() -> None:
    (term,) = parse("C{μ̃_7;a_5<i_2,i_9>}").terms
    signature, labels = signature_of(term.tensors[0])
    assert signature.exact_key == "C{μ̃_1;a_1<i_1,i_2>}"
    assert [str(labels[m]) for m in signature.modes] == [
        "μ̃_7",
        "a_5<i_2,i_9>",
        "i_2",
        "i_9",
    ]


def test_inputs_with_one_short_key_are_known_by_their_exact_keys() -> None:
    text = "X{a_1<i_1,i_2>,b_1<i_1,i_2>} * X{a_2<i_3,i_4>,b_2<i_5,i_6>}"
    keys = input_keys(input_signatures(parse(text)))
    assert list(keys.values()) == [
        "X{a_1<i_1,i_2>,b_1<i_1,i_2>;}",
        "X{a_1<i_1,i_2>,b_1<i_3,i_4>;}",
    ]
    refused(
        text,
        {"X{a<i,i>,b<i,i>}": np.ones((2, 2, 3, 3))},
        "inputs['X{a<i,i>,b<i,i>}']: the key names 2 inputs "
        "(X{a_1<i_1,i_2>,b_1<i_1,i_2>;}, X{a_1<i_1,i_2>,b_1<i_3,i_4>;}); give "
        "one array per input, by its key",
    )


@pytest.mark.parametrize(
    "name",
    ["t", "t{a;i}", " t{ a ; i } ", "t{a_1;i_1}", "t{a_4;i_7}:N-N-S", "t{a;i}:N-N-N"],
)
def test_an_input_is_given_by_label_key_or_any_spelling(name: str) -> None:
    inputs = read_inputs(FOCK_T, {"f": F, name: T})
    assert np.array_equal(inputs.array("t{a_1;i_1}"), T)
    assert inputs.extents == {"i": 2, "a": 3}


@pytest.mark.parametrize(
    ("written", "given"), [("e\u0301", "\u00e9"), ("\u00e9", "e\u0301")]
)
def test_labels_and_keys_are_compared_in_nfc(written: str, given: str) -> None:
    text = f"{written}{{i_1;a_1}} * x{{a_1;i_1}}"
    inputs = read_inputs(text, {f"{given}{{i;a}}": T.T, "x": T})
    assert inputs.keys == {"\u00e9{i_1;a_1}": "\u00e9{i;a}", "x{a_1;i_1}": "x{a;i}"}


# --------------------------------------------------------------------------
# Errors, each message exact
# --------------------------------------------------------------------------


def test_a_key_that_is_no_input() -> None:
    refused(
        FOCK_T,
        {"f": F, "t": T, "x": T},
        "inputs['x']: no input of the expression has this key; its inputs are "
        "f{i;i}, t{a;i}",
    )


def test_a_label_with_several_inputs() -> None:
    refused(
        "C{a_1<i_1,i_2>;μ̃_1} * C{μ̃_1;a_2<i_1,i_2>}",
        {"C": np.ones((4, 3, 2, 2))},
        "inputs['C']: the label names 2 inputs (C{a<i,i>;μ̃}, C{μ̃;a<i,i>}); "
        "give one array per input, by its key",
    )


def test_an_input_given_twice() -> None:
    refused(
        FOCK_T,
        {"f": F, "t": T, "t{a_2;i_5}": T},
        "inputs['t'] and inputs['t{a_2;i_5}'] are the same input t{a;i}",
    )


def test_missing_inputs_with_their_axes() -> None:
    refused(
        PAIRS,
        {},
        "no array given for C{a<i,i>;μ̃} (axes a_1<i_1,i_2>, μ̃_1, i_1, i_2), "
        "E{b<i>;μ̃} (axes b_1<i_1>, μ̃_1, i_1)",
    )


def test_complex_data() -> None:
    refused(
        FOCK_T,
        {"f": F, "t": T.astype(complex)},
        "input t{a;i}: dtype complex128, but the evaluation takes real numbers "
        "(float64)",
    )


def test_a_nan_or_an_infinity_is_refused_naming_the_first() -> None:
    nan_f = F.copy()
    nan_f[1, 0] = np.nan
    nan_f[1, 1] = np.inf  # after the NaN in C order: not the one named
    refused(
        FOCK_T,
        {"f": nan_f, "t": T},
        "input f{i;i}: element [1, 0] is nan; the evaluation takes finite numbers",
    )
    negative = T.copy()
    negative[2, 1] = -np.inf
    refused(
        FOCK_T,
        {"f": F, "t": negative},
        "input t{a;i}: element [2, 1] is -inf; the evaluation takes finite numbers",
    )


def test_the_finite_check_goes_slab_by_slab_to_the_last_element(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import axisflow.execution.inputs as inputs_module

    # slabs of one row: the element is found in the last slab, at its index
    monkeypatch.setattr(inputs_module, "_FINITE_CHECK_ELEMENTS", 2)
    # a transposed view, as given: named in its own axes, not copied
    stored = np.ones((2, 5))
    stored[1, 4] = np.nan
    refused(
        FOCK_T,
        {"f": F, "t": stored.T},
        "input t{a;i}: element [4, 1] is nan; the evaluation takes finite numbers",
    )
    read_inputs(FOCK_T, {"f": F, "t": T})  # every slab finite: accepted
    # finite values whose sum overflows: looked at one by one, accepted
    huge = np.full((3, 2), np.finfo(np.float64).max)
    assert read_inputs(FOCK_T, {"f": F, "t": huge}).extents == {"a": 3, "i": 2}


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    positions=st.lists(st.integers(0, 10**6), min_size=1, max_size=3),
    bad=st.sampled_from([np.nan, np.inf, -np.inf]),
    transposed=st.booleans(),
    slab=st.integers(1, 8),
)
def test_the_finite_check_names_the_first_bad_element_in_c_order(
    shape: list[int],
    positions: list[int],
    bad: float,
    transposed: bool,
    slab: int,
) -> None:
    import axisflow.execution.inputs as inputs_module

    stored = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    array = stored.T if transposed else stored  # a view, in its own axes
    flat_positions = sorted({p % array.size for p in positions})
    for position in flat_positions:
        array[np.unravel_index(position, array.shape)] = bad
    first = [int(k) for k in np.unravel_index(flat_positions[0], array.shape)]
    original = inputs_module._FINITE_CHECK_ELEMENTS  # pyright: ignore[reportPrivateUsage]
    inputs_module._FINITE_CHECK_ELEMENTS = slab  # pyright: ignore[reportPrivateUsage]
    try:
        with pytest.raises(InputError) as caught:
            inputs_module._check_finite("x", array)  # pyright: ignore[reportPrivateUsage]
    finally:
        inputs_module._FINITE_CHECK_ELEMENTS = original  # pyright: ignore[reportPrivateUsage]
    element = ", ".join(map(str, first))
    assert str(caught.value) == (
        f"input x: element [{element}] is {array[tuple(first)]}; the evaluation "
        "takes finite numbers"
    )


def test_the_number_of_axes() -> None:
    refused(
        FOCK_T,
        {"f": F, "t": np.ones((3, 2, 1))},
        "input t{a;i}: 3 axes, expected 2 (a_1, i_1)",
    )


def test_an_axis_against_the_extents_given() -> None:
    refused(
        FOCK_T,
        {"f": F, "t": T},
        "input f{i;i}, axis 0 (i_1, space i): size 2, but extents give i=3",
        extents="i=3",
    )


def test_an_axis_against_the_input_the_extent_was_taken_from() -> None:
    refused(
        FOCK_T,
        {"f": F, "t": np.ones((3, 3))},
        "input t{a;i}, axis 1 (i_1, space i): size 3, but input f{i;i} has size 2 "
        "on axis 0 (i)",
    )


def test_a_composite_axis_against_its_space_when_its_kind_has_no_extent() -> None:
    refused(
        PAIRS,
        {"C": np.ones((4, 3, 2, 2)), "E": np.ones((2, 3, 2))},
        "input C{a<i,i>;μ̃}, axis 0 (a_1<i_1,i_2>, composite kind a<2>): size 4, "
        "but extents give a=5 (and no a<2>)",
        extents={"a": 5},
    )


def test_a_composite_axis_against_its_kind() -> None:
    refused(
        PAIRS,
        {"C": np.ones((4, 3, 2, 2)), "E": np.ones((2, 3, 2))},
        "input C{a<i,i>;μ̃}, axis 0 (a_1<i_1,i_2>, composite kind a<2>): size 4, "
        "but extents give a<2>=6",
        extents="a=5,a<2>=6",
    )


def test_an_empty_axis() -> None:
    refused(
        FOCK_T,
        {"f": F, "t": np.ones((3, 0))},
        "input t{a;i}, axis 1 (i_1, space i): size 0, extents must be positive",
    )


def test_argument_errors_name_the_argument() -> None:
    cases: list[tuple[object, object, dict[str, object], type, str]] = [
        (
            FOCK_T,
            {"f": F, "t": {"a": 1}},
            {},
            TypeError,
            "inputs['t'] must be an array (NumPy, Dask, Zarr or array-like), got dict",
        ),
        (
            FOCK_T,
            3,
            {},
            TypeError,
            "inputs must be a mapping of input key to array, or the path of a "
            ".npz file or a Zarr store, got int",
        ),
        (FOCK_T, {1: F}, {}, TypeError, "inputs keys must be input keys (str), got 1"),
        (
            FOCK_T,
            {"f": F, "t": T},
            {"extents": [1]},
            TypeError,
            'extents must be a mapping, a string such as "i=80,a=896" or None, '
            "got list",
        ),
        (
            FOCK_T,
            {"f": F, "t": T},
            {"extents": {"i": 0}},
            ValueError,
            "extents['i'] must be positive, got 0",
        ),
        (
            FOCK_T,
            {"f": F, "t": T},
            {"extents": "x=3"},
            PolicyError,
            "index space 'x' does not occur in the expression (its spaces: a, i)",
        ),
        (
            FOCK_T,
            {"f": F, "t": T},
            {"assume_symmetric": 1},
            TypeError,
            "assume_symmetric must be True or False, got 1",
        ),
        (
            3,
            {},
            {},
            TypeError,
            "expression must be SeQuant text (str) or a parsed Expression, got int",
        ),
    ]
    for expression, inputs, options, kind, message in cases:
        with pytest.raises(kind) as caught:
            read_inputs(expression, inputs, **options)  # type: ignore[arg-type]
        assert str(caught.value) == message


def test_extents_by_ascii_alias_and_kind() -> None:
    text = "g{μ̃_1;i_1;Κ_1} * C{a_1<i_1,i_2>;μ̃_1}"
    inputs = read_inputs(
        text,
        {"g": np.ones((3, 2, 4)), "C": np.ones((5, 3, 2, 2))},
        extents="Kappa=4,mutilde=3,a<2>=5",
    )
    assert inputs.extents == {"Κ": 4, "μ̃": 3, "a<2>": 5, "i": 2}


def test_text_that_does_not_parse_is_located() -> None:
    with pytest.raises(SequantSyntaxError, match="1:3"):
        read_inputs("t{", {})


# --------------------------------------------------------------------------
# The proto symmetry the frontend relies on
# --------------------------------------------------------------------------


def pairs_inputs(symmetric: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    c = rng.standard_normal((3, 4, 2, 2))
    if symmetric:
        c = (c + c.transpose(0, 1, 3, 2)) / 2
    return {"C{a<i,i>;μ̃}": c, "E{b<i>;μ̃}": rng.standard_normal((2, 4, 2))}


def test_a_non_symmetric_input_is_silently_wrong_without_the_check() -> None:
    # Two terms that differ only in factor order: summed, they must be twice
    # one of them. The frontend pairs C's protos by the term's labels, so on
    # data that is not symmetric in them the two terms read C differently.
    both = f"{PAIRS} + E{{b_1<i_1>;μ̃_1}} * C{{a_1<i_1,i_2>;μ̃_1}}"
    twice = f"2 {PAIRS}"
    inputs = pairs_inputs(symmetric=False)
    sum_of_both = evaluate_expression(both, inputs, assume_symmetric=True).residual
    two_of_one = evaluate_expression(twice, inputs, assume_symmetric=True).residual
    assert np.linalg.norm(sum_of_both - two_of_one) > 0.1 * np.linalg.norm(two_of_one)
    symmetric = pairs_inputs(symmetric=True)
    assert np.allclose(
        evaluate_expression(both, symmetric).residual,
        evaluate_expression(twice, symmetric).residual,
        rtol=1e-12,
        atol=0,
    )


NOT_SYMMETRIC = (
    "input C{a<i,i>;μ̃} is not symmetric in i_1 and i_2 (axes 2 and 3), the "
    "protos of a_1<i_1,i_2>: the frontend pairs them in either order (relative "
    "difference 1.4 on a random projection); symmetrize the array or pass "
    "assume_symmetric=True"
)


def one_off_diagonal() -> np.ndarray:
    c = np.zeros((3, 4, 2, 2))
    c[1, 2, 0, 1] = 1.0  # |M - M^T| / |M| = sqrt(2) on any projection
    return c


def test_a_non_symmetric_input_is_refused_naming_the_pairing() -> None:
    inputs = {"C": one_off_diagonal(), "E": np.ones((2, 4, 2))}
    refused(PAIRS, inputs, NOT_SYMMETRIC)
    with pytest.raises(InputError) as caught:
        evaluate_expression(PAIRS, inputs)
    assert str(caught.value) == NOT_SYMMETRIC
    assert read_inputs(PAIRS, inputs, assume_symmetric=True).extents["a<2>"] == 3


def test_symmetric_data_within_the_tolerance_passes() -> None:
    inputs = pairs_inputs(symmetric=True)
    noisy = inputs["C{a<i,i>;μ̃}"] * (1 + 1e-13 * np.random.default_rng(3).random())
    read_inputs(PAIRS, {**inputs, "C{a<i,i>;μ̃}": noisy})
    inputs["C{a<i,i>;μ̃}"][0, 0, 0, 1] += 1e-6
    with pytest.raises(InputError, match="not symmetric in i_1 and i_2"):
        read_inputs(PAIRS, inputs)


def test_nested_tied_protos_are_exchanged_with_their_own_protos() -> None:
    # b_1<i_1> and b_2<i_2> are tied, and so are i_1, i_2 (axes: a_1, b_1,
    # i_1, b_2, i_2): exchanging the b's exchanges the i's too.
    text = "X{a_1<b_1<i_1>,b_2<i_2>>;} * Y{a_1<b_1<i_1>,b_2<i_2>>;}"
    signature, _ = signature_of(parse(text).terms[0].tensors[0])
    assert signature.ties == ((1, 3), (2, 4))
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 3, 4))
    symmetric = (x + x.transpose(0, 3, 4, 1, 2)) / 2
    read_inputs(text, {"X": symmetric, "Y": symmetric})
    with pytest.raises(InputError, match=r"not symmetric in b_1<i_1> and b_2<i_2>"):
        read_inputs(text, {"X": x, "Y": symmetric})


# --------------------------------------------------------------------------
# Sources: .npz, Zarr, Dask
# --------------------------------------------------------------------------


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    np.savez(path, **arrays)  # type: ignore[arg-type]


def test_inputs_from_an_npz_file(tmp_path: Path) -> None:
    inputs = pairs_inputs(symmetric=True)
    path = tmp_path / "inputs.npz"
    save_npz(path, {**inputs, "unrelated": np.ones(3)})  # other entries ignored
    from_file = evaluate_expression(PAIRS, path).residual
    assert np.array_equal(from_file, evaluate_expression(PAIRS, inputs).residual)
    save_npz(path, {"C": one_off_diagonal(), "E{b<i>;μ̃}": np.ones((2, 4, 2))})
    refused(PAIRS, str(path), NOT_SYMMETRIC)
    save_npz(path, {"C": np.ones((3, 4, 2, 2))})
    refused(PAIRS, path, "no array given for E{b<i>;μ̃} (axes b_1<i_1>, μ̃_1, i_1)")


def test_inputs_from_a_zarr_store_are_read_when_evaluated(tmp_path: Path) -> None:
    inputs = pairs_inputs(symmetric=True)
    store = zarr.open_group(str(tmp_path / "inputs.zarr"), mode="w")
    for key, array in inputs.items():
        store.create_array(key, data=array, chunks=(2, 2, 2, 2)[: array.ndim])
    read = read_inputs(PAIRS, tmp_path / "inputs.zarr")
    assert all(isinstance(a, zarr.Array) for a in read.arrays.values())
    from_store = evaluate_expression(PAIRS, str(tmp_path / "inputs.zarr")).residual
    assert np.array_equal(from_store, evaluate_expression(PAIRS, inputs).residual)
    stored = store["C{a<i,i>;μ̃}"]
    assert isinstance(stored, zarr.Array)
    stored[...] = one_off_diagonal()
    refused(PAIRS, tmp_path / "inputs.zarr", NOT_SYMMETRIC)


def chunked(array: np.ndarray) -> dask.array.Array:
    """A Dask array in chunks of 2 along every axis."""
    chunks: Any = 2  # dask's from_array leaves `chunks` unannotated (str inferred)
    return dask.array.from_array(array, chunks=chunks)


def test_dask_arrays_are_checked_lazily_and_evaluated() -> None:
    inputs = pairs_inputs(symmetric=True)
    lazy = {key: chunked(a) for key, a in inputs.items()}
    read = read_inputs(PAIRS, lazy)
    assert all(isinstance(a, dask.array.Array) for a in read.arrays.values())
    assert np.array_equal(
        evaluate_expression(PAIRS, lazy).residual,
        evaluate_expression(PAIRS, inputs).residual,
    )
    lazy["C{a<i,i>;μ̃}"] = chunked(one_off_diagonal())
    refused(PAIRS, lazy, NOT_SYMMETRIC)


def test_lazy_inputs_are_checked_finite_when_read(tmp_path: Path) -> None:
    inputs = pairs_inputs(symmetric=True)
    with_nan = inputs["E{b<i>;μ̃}"].copy()
    with_nan[0, 1, 1] = np.nan
    message = (
        "input E{b<i>;μ̃}: element [0, 1, 1] is nan; the evaluation takes finite numbers"
    )
    lazy = {**inputs, "E{b<i>;μ̃}": chunked(with_nan)}
    read_inputs(PAIRS, lazy)  # not read yet
    with pytest.raises(InputError) as caught:
        evaluate_expression(PAIRS, lazy)
    assert str(caught.value) == message
    store = zarr.open_group(str(tmp_path / "inputs.zarr"), mode="w")
    for key, array in {**inputs, "E{b<i>;μ̃}": with_nan}.items():
        store.create_array(key, data=array, chunks=(2, 2, 2, 2)[: array.ndim])
    with pytest.raises(InputError) as caught:
        evaluate_expression(PAIRS, tmp_path / "inputs.zarr")
    assert str(caught.value) == message


def test_paths_that_are_no_store(tmp_path: Path) -> None:
    missing = tmp_path / "absent.npz"
    refused(FOCK_T, missing, f"inputs: no such file or directory: {str(missing)!r}")
    text_file = tmp_path / "inputs.npz"
    text_file.write_text("not an archive")
    refused(
        FOCK_T,
        text_file,
        f"inputs: {str(text_file)!r} is not a .npz file (no zip archive)",
    )
    refused(
        FOCK_T,
        tmp_path,
        f"inputs: {str(tmp_path)!r} is neither a .npz file nor a Zarr store",
    )


# --------------------------------------------------------------------------
# Invariance: the factor order of a product does not change the residual
# --------------------------------------------------------------------------


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(expressions())
def test_factor_order_does_not_change_the_residual(
    case: tuple[Expression, str],
) -> None:
    # one term: the random terms of an expression need not form one residual
    expression = Expression(case[0].terms[:1])
    extents = dict.fromkeys(expression.space_keys(), 2)
    inputs = oracle_inputs(expression, extents)
    reordered = permuted(expression, random.Random(5))
    first = evaluate_expression(expression, inputs, extents=extents)
    second = evaluate_expression(reordered, inputs, extents=extents)
    _, reference = oracle_residual(expression, extents)
    assert np.allclose(first.residual, reference, rtol=1e-10, atol=1e-12)
    assert np.allclose(second.residual, reference, rtol=1e-10, atol=1e-12)
