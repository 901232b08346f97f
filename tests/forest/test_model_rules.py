"""The forest model rule by rule: derived modes and maps, every refusal with
its message, the views (built values, sites, readers, dependencies) and the
numbering of loop instances; the frames helpers on small cases by hand."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from axisflow.forest import frames
from axisflow.forest.builder import ForestBuilder, labels, loop, use
from axisflow.forest.frames import (
    FrameError,
    canonical_renaming,
    explicit_protos,
    invert,
    minimal_protos,
    mode_map,
    node_labels,
    proto_closure,
    proto_modes,
)
from axisflow.forest.model import (
    Factor,
    Forest,
    Loop,
    ModelError,
    Site,
    Space,
    Tree,
    Value,
    dependencies,
    readers_of,
    renumber_unslotted,
    topological_order,
)
from axisflow.roles import Index, LoopRole

i = Index.parse


@pytest.fixture(autouse=True)
def fresh_mode_maps() -> None:
    """Every test derives its mode maps afresh: ``mode_map`` memoises per
    process, and a mutation campaign's test runs start from a process whose
    memo the first, unmutated run filled (a mutant of the derivation would
    go unseen)."""
    frames._MODE_MAPS.clear()  # pyright: ignore[reportPrivateUsage]


def chain() -> Forest:
    """X[i_1 k_1] = A[i_1 j_1] B[j_1 k_1]; Y[i_1] = X[i_1 k_1] C[k_1]; trees
    t (Y, in loops over i and k) and u (X alone), and a bare number n."""
    builder = ForestBuilder("chain").space("i", 3).space("j", 4).space("k", 5)
    builder.input("A", "i_1 j_1").input("B", "j_1 k_1").input("C", "k_1")
    builder.contraction("X", "i_1 k_1", "A i_1 j_1", "B j_1 k_1")
    builder.contraction("Y", "i_1", "X i_1 k_1", "C k_1")
    x_use = use("X", "i_1 k_1", use("A", "i_1 j_1"), use("B", "j_1 k_1"))
    builder.tree(
        "t",
        loop("i", 0, loop("k", None, use("Y", "i_1", x_use, use("C", "k_1")))),
        coeff=Fraction(1, 2),
    )
    builder.tree("u", use("X", "i_2 k_2", use("A", "i_2 j_2"), use("B", "j_2 k_2")))
    builder.tree("n", coeff=3)
    return builder.finish()


def test_node_modes_and_factor_maps() -> None:
    forest = chain()
    x, y = forest.values["X"], forest.values["Y"]
    assert x.modes == (i("i_1"), i("k_1"))
    assert x.node_modes == (i("i_1"), i("k_1"), i("j_1"))
    assert x.summed_modes == (i("j_1"),)
    assert y.summed_modes == (i("k_1"),)
    assert x.factor_maps == (
        {i("i_1"): i("i_1"), i("j_1"): i("j_1")},
        {i("j_1"): i("j_1"), i("k_1"): i("k_1")},
    )
    assert forest.values["A"].is_input and not x.is_input
    assert forest.values["A"].summed_modes == ()


def test_site_labels_instances_and_consumer_loops() -> None:
    forest = chain()
    root = forest.sites[forest.trees[0].root or 0]
    assert root.value == "Y" and root.parent is None
    # The unslotted loop over k gets the first instance after slot 0.
    assert [(lp.instance, lp.space, lp.slot) for lp in root.loops] == [
        (0, "i", 0),
        (1, "k", None),
    ]
    assert forest.instance_spaces == {0: "i", 1: "k"}
    assert root.consumer_loops(forest) == ()
    x_site = forest.sites[root.children[0]]
    assert x_site.consumer_loops(forest) == root.loops
    assert x_site.mode_labels == {
        i("i_1"): i("i_1"),
        i("k_1"): i("k_1"),
        i("j_1"): i("j_1"),
    }
    u_site = forest.sites[forest.trees[1].root or 0]
    assert u_site.mode_labels == {
        i("i_1"): i("i_2"),
        i("k_1"): i("k_2"),
        i("j_1"): i("j_2"),
    }
    assert forest.trees[2].root is None and forest.trees[0].coeff == Fraction(1, 2)


def test_a_site_clone_copies_every_field_and_is_a_new_site() -> None:
    """``Site.clone`` lists the fields by hand (``copy.copy`` is slower): a
    field added to ``Site`` and left out of it fails here."""
    for site in chain().sites:
        clone = site.clone()
        assert clone is not site
        for field in dataclasses.fields(Site):
            assert getattr(clone, field.name) is getattr(site, field.name), field.name


def test_views_of_the_forest() -> None:
    forest = chain()
    assert [v.name for v in forest.built_values()] == ["X", "Y"]
    sites = forest.sites_of()
    assert list(sites) == ["A", "B", "C", "X", "Y"]
    assert [s.tree for s in sites["X"]] == [0, 1]
    assert [s.number for s in sites["A"]] == [2, 6]
    assert topological_order(forest) == ["X", "Y", 0, 1, 2]
    assert readers_of(forest) == {"Y": [0], "X": ["Y", 1]}
    assert dependencies(forest, "Y") == ["X"]
    assert dependencies(forest, "X") == []  # A and B are inputs
    assert dependencies(forest, 0) == ["Y"]
    assert dependencies(forest, 2) == []  # a bare number


def test_a_tree_rooted_at_an_input_depends_on_nothing() -> None:
    builder = ForestBuilder().input("A", "i_1")
    builder.tree("t", use("A", "i_1"))
    forest = builder.finish()
    assert dependencies(forest, 0) == []
    assert forest.built_values() == []
    assert topological_order(forest) == [0]
    assert readers_of(forest) == {}


def test_an_unused_contraction_is_not_built() -> None:
    builder = ForestBuilder().input("A", "i_1 j_1").input("B", "j_1")
    builder.contraction("V", "i_1", "A i_1 j_1", "B j_1")
    forest = builder.finish()
    assert forest.built_values() == []


def test_a_missing_role_names_the_value_and_the_space() -> None:
    forest = chain()
    assert forest.role("Y", "i") is forest.roles[("Y", "i")]
    assert isinstance(forest.role("Y", "i"), LoopRole)
    with pytest.raises(
        ModelError,
        match=r"^value @Y has no loop role for index space q \(run classify-axes first\)$",
    ):
        forest.role("Y", "q")


def forest_of(values: list[Value], sites: list[Site], trees: int = 1) -> Forest:
    return Forest(
        "f",
        {"i": Space("i", 3)},
        {v.name: v for v in values},
        [Tree(f"t{k}", Fraction(1), 0 if k == 0 else None) for k in range(trees)],
        sites,
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            [Value("V", labels("i_1"), factors=(Factor("Z", labels("i_1")),))],
            r"^value @V: unknown factor @Z$",
        ),
        (
            [
                Value("V", labels("i_1"), factors=(Factor("W", labels("i_1")),)),
                Value("W", labels("i_1"), factors=(Factor("V", labels("i_1")),)),
            ],
            r"^value @V depends on itself$",
        ),
        (
            [
                Value("A", labels("i_1")),
                Value("V", labels("i_1 j_1"), factors=(Factor("A", labels("i_1")),)),
            ],
            r"^value @V: result mode j_1 is on no factor$",
        ),
        (
            [
                Value("A", labels("i_1")),
                Value("V", labels("i_1"), factors=(Factor("A", labels("i_1 i_2")),)),
            ],
            r"^value @V, factor @A: 2 labels for a value with 1 indices$",
        ),
    ],
)
def test_inconsistent_values_are_refused(values: list[Value], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        forest_of(values, []).finish()


def test_a_value_depending_on_itself_directly_is_refused() -> None:
    value = Value("V", labels("i_1"), factors=(Factor("V", labels("i_1")),))
    with pytest.raises(ModelError, match=r"^value @V depends on itself$"):
        forest_of([value], []).finish()


def test_inconsistent_use_sites_are_refused() -> None:
    a = Value("A", labels("i_1"))
    b = Value("B", labels("i_1"))
    v = Value("V", labels("i_1"), factors=(Factor("A", labels("i_1")),))
    with pytest.raises(
        ModelError, match=r"^use-site of @Z in tree @t0: unknown value @Z$"
    ):
        forest_of([a], [Site(0, "Z", 0, labels("i_1"), (), None)]).finish()
    with pytest.raises(
        ModelError,
        match=r"^use-site of @V in tree @t0: 0 factor use-sites for 1 factors$",
    ):
        forest_of([a, v], [Site(0, "V", 0, labels("i_1"), (), None)]).finish()
    wrong_child = [
        Site(0, "V", 0, labels("i_1"), (), None, children=(1,)),
        Site(1, "B", 0, labels("i_1"), (), 0),
    ]
    with pytest.raises(
        ModelError,
        match=r"^use-site of @V in tree @t0: factor use-site names @B, "
        r"but @V is built from @A$",
    ):
        forest_of([a, b, v], wrong_child).finish()
    with pytest.raises(
        ModelError, match=r"^use-site of @A in tree @t0: 2 labels for a value with 1"
    ):
        forest_of([a], [Site(0, "A", 0, labels("i_1 i_2"), (), None)]).finish()


def test_a_site_whose_labels_disagree_with_its_factors_is_refused() -> None:
    a = Value("A", labels("i_1 j_1"))
    v = Value("V", labels("i_1"), factors=(Factor("A", labels("i_1 j_1")),))
    # V's i_1 is labelled i_5 at the site, but its factor's i_1 is i_6 there.
    sites = [
        Site(0, "V", 0, labels("i_5"), (), None, children=(1,)),
        Site(1, "A", 0, labels("i_6 j_1"), (), 0),
    ]
    with pytest.raises(ModelError, match=r"^use-site of @V in tree @t0: "):
        forest_of([a, v], sites).finish()


def test_loops_the_scheduler_cannot_run_are_refused() -> None:
    a = Value("A", labels("i_1 j_1"))
    here = Loop(0, i("i_1"), 0)

    def check(loops: tuple[Loop, ...]) -> None:
        forest_of([a], [Site(0, "A", 0, labels("i_1 j_1"), loops, None)])
        forest = forest_of([a], [Site(0, "A", 0, labels("i_1 j_1"), loops, None)])
        forest.finish().check_loops()

    check((here, Loop(1, i("j_1"), 1)))  # fine
    with pytest.raises(
        ModelError,
        match=r"^use-site of @A in tree @t0: loop instance 0 encloses itself$",
    ):
        check((here, Loop(0, i("i_2"), 0)))
    with pytest.raises(ModelError, match=r"^loop instance 0 iterates both i and j$"):
        forest = forest_of(
            [a],
            [
                Site(0, "A", 0, labels("i_1 j_1"), (here,), None),
                Site(1, "A", 1, labels("i_1 j_1"), (Loop(0, i("j_1"), 0),), None),
            ],
            trees=2,
        )
        forest.finish().check_loops()
    with pytest.raises(
        ModelError,
        match=r"^use-site of @A in tree @t0: two enclosing loops bind i_1 \(a loop "
        r"nested in a loop over the same label\)$",
    ):
        check((here, Loop(1, i("i_1"), 1)))


def test_unslotted_loops_are_numbered_after_the_largest_slot() -> None:
    a = Value("A", labels("i_1 j_1"))
    sites = [
        Site(
            0,
            "A",
            0,
            labels("i_1 j_1"),
            (Loop(-1, i("i_1")), Loop(4, i("j_1"), 4)),
            None,
        ),
        Site(
            1, "A", 1, labels("i_1 j_1"), (Loop(-2, i("j_1")), Loop(-1, i("i_1"))), None
        ),
    ]
    forest = forest_of([a], sites, trees=2)
    renumber_unslotted(forest)
    assert [[lp.instance for lp in s.loops] for s in forest.sites] == [[5, 4], [6, 5]]
    assert forest.sites[0].loops[1].slot == 4  # slotted loops keep their slot
    # Without any slot, numbering starts at 0.
    only = forest_of([a], [Site(0, "A", 0, labels("i_1"), (Loop(-3, i("i_1")),), None)])
    renumber_unslotted(only)
    assert only.sites[0].loops[0].instance == 0
    # Nothing to renumber: the loops are left as they are (the same objects).
    slotted = (Loop(2, i("i_1"), 2),)
    kept = forest_of([a], [Site(0, "A", 0, labels("i_1"), slotted, None)])
    renumber_unslotted(kept)
    assert kept.sites[0].loops is slotted


# --------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------


def test_proto_closure_and_modes() -> None:
    nested = labels("a_1<b_1<i_1>,i_2> i_2")
    assert proto_closure(nested) == [i("b_1<i_1>"), i("i_1"), i("i_2")]
    assert proto_modes(nested) == (i("b_1<i_1>"), i("i_1"))


def test_mode_map_refusals_name_the_place() -> None:
    def refused(frame: str, here: str, protos: str, message: str) -> None:
        pairs = [(i(a), i(b)) for a, _, b in (p.partition("=") for p in protos.split())]
        with pytest.raises(FrameError, match=message):
            mode_map(labels(frame), labels(here), pairs, where="at X")

    refused("i_1 i_2", "i_3 i_3", "", r"^at X: label i_3 stands for both i_1 and i_2")
    refused(
        "i_1",
        "a_1",
        "",
        r"^at X: index a_1 stands for i_1 of the value's frame, "
        "which is of another index space$",
    )
    refused(
        "i_1 i_1",
        "i_2 i_3",
        "",
        r"^at X: the value's index i_1 is labelled both i_2 and i_3 here$",
    )
    refused(
        "a_1<i_1>",
        "a_2<i_2>",
        "j_1=i_2",
        r"^at X: the proto map names j_1, which is no mode of the value's frame$",
    )
    refused(
        "a_1<i_1>",
        "a_2<i_2,i_3>",
        "",
        r"^at X: a_2<i_2,i_3> and a_1<i_1> have proto lists of different lengths$",
    )
    refused(
        "a_1<i_1> i_1",
        "a_2<i_2> i_3",
        "",
        r"^at X: proto i_1 of a_1<i_1> maps to i_3, which is not a proto of a_2<i_2>$",
    )
    refused(
        "a_1<i_1>",
        "a_2<j_1>",
        "",
        r"^at X: proto j_1 of a_2<j_1> stands for no proto of a_1<i_1>$",
    )
    refused(
        "a_1<i_1,j_1>",
        "a_2<i_2,k_1>",
        "",
        r"^at X: proto k_1 of a_2<i_2,k_1> stands for no proto of a_1<i_1,j_1>$",
    )
    # protos shared by two composites: the pairing matters, nothing forces it
    refused(
        "a_1<i_1,i_2> b_1<i_1,i_2>",
        "a_2<i_3,i_4> b_2<i_3,i_4>",
        "",
        r"^at X: the pairing of the protos i_1, i_2 of a_1<i_1,i_2> with those of "
        r"a_2<i_3,i_4> is ambiguous; give it explicitly \(protos \[\.\.\.\]\)$",
    )


def test_mode_map_pairs_nested_protos_and_mixed_spaces() -> None:
    found = mode_map(labels("a_1<b_1<i_1>,j_1>"), labels("a_2<b_2<i_2>,j_2>"))
    assert found == {
        i("a_1<b_1<i_1>,j_1>"): i("a_2<b_2<i_2>,j_2>"),
        i("b_1<i_1>"): i("b_2<i_2>"),
        i("i_1"): i("i_2"),
        i("j_1"): i("j_2"),
    }
    # One pair given, the other of the same space forced.
    pair = mode_map(
        labels("a_1<i_1,i_2,j_1>"), labels("a_2<i_3,i_4,j_2>"), [(i("i_2"), i("i_3"))]
    )
    assert (pair[i("i_1")], pair[i("i_2")], pair[i("j_1")]) == (
        i("i_4"),
        i("i_3"),
        i("j_2"),
    )


def test_minimal_protos_are_the_choices_that_are_not_forced() -> None:
    frame, here = labels("a_1<i_1,i_2,i_3>"), labels("a_2<i_4,i_5,i_6>")
    full = {
        i("a_1<i_1,i_2,i_3>"): i("a_2<i_4,i_5,i_6>"),
        i("i_1"): i("i_6"),
        i("i_2"): i("i_4"),
        i("i_3"): i("i_5"),
    }
    chosen = minimal_protos(frame, here, full)
    assert chosen == ((i("i_1"), i("i_6")), (i("i_2"), i("i_4")))
    assert mode_map(frame, here, chosen) == full
    assert minimal_protos(labels("a_1<i_1>"), labels("a_2<i_2>"), {}) == ()
    assert explicit_protos(frame, full) == (
        (i("i_1"), i("i_6")),
        (i("i_2"), i("i_4")),
        (i("i_3"), i("i_5")),
    )
    assert invert({i("i_1"): i("i_2")}) == {i("i_2"): i("i_1")}


def test_node_labels_join_the_site_and_its_factors() -> None:
    site = {i("i_1"): i("i_7")}
    factor_maps = [{i("i_1"): i("i_1"), i("j_1"): i("j_1")}]
    found = node_labels(
        site, factor_maps, [{i("i_1"): i("i_7"), i("j_1"): i("j_3")}], "X"
    )
    assert found == {i("i_1"): i("i_7"), i("j_1"): i("j_3")}
    with pytest.raises(
        FrameError, match=r"^X: the value's index i_1 is labelled both i_7 and i_8"
    ):
        node_labels(site, factor_maps, [{i("i_1"): i("i_8"), i("j_1"): i("j_3")}], "X")
    # A summed mode labelled like a result mode of another index space, and
    # a summed mode labelled like a result mode of its own space.
    with pytest.raises(FrameError, match=r"^X: index i_7 stands for j_1 .* another"):
        node_labels(site, factor_maps, [{i("i_1"): i("i_7"), i("j_1"): i("i_7")}], "X")
    same_space = [{i("i_1"): i("i_1"), i("i_2"): i("i_2")}]
    with pytest.raises(FrameError, match=r"^X: label i_7 stands for both i_1 and i_2"):
        node_labels(site, same_space, [{i("i_1"): i("i_7"), i("i_2"): i("i_7")}], "X")
    with pytest.raises(FrameError, match=r"^X: index j_3 stands for i_1"):
        node_labels({i("i_1"): i("j_3")}, [], [], "X")
    with pytest.raises(FrameError, match=r"^X: label i_7 stands for both i_1 and i_2"):
        node_labels({i("i_1"): i("i_7"), i("i_2"): i("i_7")}, [], [], "X")


def test_canonical_renaming_numbers_by_first_appearance_then_protos() -> None:
    renaming = canonical_renaming(
        [labels("k_7 a_3<i_9> i_4"), labels("k_2 a_5<i_8,i_9>")]
    )
    assert renaming == {
        i("k_7"): i("k_1"),
        i("a_3<i_9>"): i("a_1<i_2>"),
        i("i_4"): i("i_1"),
        i("k_2"): i("k_2"),
        i("a_5<i_8,i_9>"): i("a_2<i_2,i_3>"),
        # Protos only: i_9 occurs first (list 0), then i_8 (list 1 only).
        i("i_9"): i("i_2"),
        i("i_8"): i("i_3"),
    }


@pytest.mark.parametrize(
    ("text", "renamed"),
    [
        # Two protos of b in the same place: the one without protos of its
        # own (lower height) first, whatever the labels.
        ("a_1<b_1<i_1>,b_2>", "a_1<b_2<i_1>,b_1>"),
        # Same height: the shapes are ordered by their protos' spaces (i
        # before j), not by label (b_3 before b_7).
        ("a_1<b_3<j_1>,b_7<i_1>>", "a_1<b_2<j_1>,b_1<i_1>>"),
        # A proto one level down is numbered after one at the first level.
        ("a_1<b_1<i_9>,i_4>", "a_1<b_1<i_2>,i_1>"),
        # A proto that occurs at two depths is renamed once.
        ("a_1<b_5<i_3>,i_3>", "a_1<b_1<i_1>,i_1>"),
        # Three levels, a true tie (same shapes, same places): by label.
        ("a_1<b_1<c_1<i_2>>,b_2<c_2<i_1>>>", "a_1<b_1<c_1<i_2>>,b_2<c_2<i_1>>>"),
        ("a_7<b_4<c_9<i_5>>,b_2<c_2<i_1>>>", "a_1<b_2<c_2<i_2>>,b_1<c_1<i_1>>>"),
    ],
)
def test_canonical_renaming_breaks_ties_by_shape_then_depth(
    text: str, renamed: str
) -> None:
    renaming = canonical_renaming([labels(text)])
    assert renaming[i(text)] == i(renamed)


def test_minimal_protos_refuses_a_mismatched_relabelling() -> None:
    with pytest.raises(
        FrameError, match=r"^relabelling: 2 labels for a value with 1 indices$"
    ):
        minimal_protos(labels("i_1"), labels("i_1 i_2"), {})


def test_mismatched_proto_groups_are_refused() -> None:
    # Both sides have two i protos and one j proto, or one i and two j: the
    # groups of one space do not pair up.
    with pytest.raises(
        FrameError,
        match=r"^at X: the protos of a_1<i_1,i_2,j_1> and a_2<i_3,j_2,j_3> do not "
        r"match$",
    ):
        mode_map(labels("a_1<i_1,i_2,j_1>"), labels("a_2<i_3,j_2,j_3>"), where="at X")


# c's pairing is ambiguous until a's forced j pairing (made in the first pass
# over the composites, a itself still ambiguous in i: b shares its i protos,
# so they are not interchangeable) fixes c's j_1.
FORCED_LATER_FRAME = "c_1<j_1,j_3> a_1<i_1,i_2,j_1> b_1<i_1,i_2>"
FORCED_LATER_HERE = "c_2<j_2,j_4> a_2<i_3,i_4,j_2> b_2<i_3,i_4>"


def test_a_forced_pairing_counts_as_progress_before_the_ambiguity_is_reported() -> None:
    # Only a stays ambiguous: the error names a, not c (which a resolved).
    with pytest.raises(
        FrameError,
        match=r"^at X: the pairing of the protos i_1, i_2 of a_1<i_1,i_2,j_1> with "
        r"those of a_2<i_3,i_4,j_2> is ambiguous",
    ):
        mode_map(labels(FORCED_LATER_FRAME), labels(FORCED_LATER_HERE), where="at X")
    # With the i pairing given, everything else is forced.
    found = mode_map(
        labels(FORCED_LATER_FRAME), labels(FORCED_LATER_HERE), [(i("i_1"), i("i_4"))]
    )
    assert [(str(a), str(b)) for a, b in found.items()] == [
        ("c_1<j_1,j_3>", "c_2<j_2,j_4>"),
        ("a_1<i_1,i_2,j_1>", "a_2<i_3,i_4,j_2>"),
        ("b_1<i_1,i_2>", "b_2<i_3,i_4>"),
        ("j_1", "j_2"),
        ("j_3", "j_4"),
        ("i_1", "i_4"),
        ("i_2", "i_3"),
    ]
    # The minimal pairs hold only the i choice: c's j pairing follows.
    assert minimal_protos(
        labels(FORCED_LATER_FRAME), labels(FORCED_LATER_HERE), found
    ) == ((i("i_1"), i("i_4")),)


def test_a_proto_met_twice_inside_one_composite_is_renamed_once() -> None:
    # i_9 is a proto of c_4 and of its proto x_6 (listed after i_9, so the
    # walks reach x_6's i_9 first and meet c_4's i_9 again afterwards).
    renaming = canonical_renaming([labels("a_3<c_4<i_9,x_6<i_9>>>")])
    assert renaming[i("a_3<c_4<i_9,x_6<i_9>>>")] == i("a_1<c_1<i_1,x_1<i_1>>>")
    assert renaming[i("c_4<i_9,x_6<i_9>>")] == i("c_1<i_1,x_1<i_1>>")
    assert renaming[i("x_6<i_9>")] == i("x_1<i_1>")
    assert renaming[i("i_9")] == i("i_1")


def test_more_mode_map_refusals_name_the_place() -> None:
    # A composite read as a plain label, and a composite proto explicitly
    # paired with a plain label: proto lists of different lengths.
    with pytest.raises(
        FrameError,
        match=r"^at X: a_2<i_1> and a_1 have proto lists of different lengths$",
    ):
        mode_map(labels("a_1"), labels("a_2<i_1>"), where="at X")
    with pytest.raises(
        FrameError,
        match=r"^at X: b_2 and b_1<i_1> have proto lists of different lengths$",
    ):
        mode_map(
            labels("a_1<b_1<i_1>>"),
            labels("a_2<b_2>"),
            [(i("b_1<i_1>"), i("b_2"))],
            where="at X",
        )
    # The whole text of the two binder messages that end in the frame.
    with pytest.raises(
        FrameError,
        match=r"^at X: label i_3 stands for both i_1 and i_2 of the value's frame$",
    ):
        mode_map(labels("i_1 i_2"), labels("i_3 i_3"), where="at X")
    # Without a place, the message starts with "relabelling".
    with pytest.raises(
        FrameError, match=r"^relabelling: 2 labels for a value with 1 indices$"
    ):
        mode_map(labels("i_1"), labels("i_1 i_2"))


def test_mode_maps_are_shared_between_equal_readings() -> None:
    # Documented: one map per distinct (frame, labels, protos); callers key
    # derived labels by the map's identity.
    first = mode_map(labels("a_1<i_1> j_1"), labels("a_4<i_2> j_3"))
    again = mode_map(labels("a_1<i_1> j_1"), labels("a_4<i_2> j_3"))
    assert again is first
    assert first == {
        i("a_1<i_1>"): i("a_4<i_2>"),
        i("j_1"): i("j_3"),
        i("i_1"): i("i_2"),
    }
    assert mode_map(labels("j_1"), labels("j_3")) is not first


def test_node_labels_check_every_factor_mode() -> None:
    # A mode every map already names, labelled differently by the factor.
    with pytest.raises(
        FrameError,
        match=r"^X: the value's index i_1 is labelled both i_7 and i_8 here$",
    ):
        node_labels(
            {i("i_1"): i("i_7")}, [{i("i_1"): i("i_1")}], [{i("i_1"): i("i_8")}], "X"
        )
    # A summed mode labelled with a fresh label of another index space.
    with pytest.raises(
        FrameError,
        match=r"^X: index k_3 stands for j_1 of the value's frame, which is of "
        r"another index space$",
    ):
        node_labels(
            {i("i_1"): i("i_7")},
            [{i("i_1"): i("i_1"), i("j_1"): i("j_1")}],
            [{i("i_1"): i("i_7"), i("j_1"): i("k_3")}],
            "X",
        )
    # A summed mode only the second factor has is labelled too.
    found = node_labels(
        {i("i_1"): i("i_7")},
        [{i("i_1"): i("i_1")}, {i("i_1"): i("i_1"), i("j_1"): i("j_1")}],
        [{i("i_1"): i("i_7")}, {i("i_1"): i("i_7"), i("j_1"): i("j_4")}],
        "X",
    )
    assert found == {i("i_1"): i("i_7"), i("j_1"): i("j_4")}


def test_values_listed_before_their_factors_are_finished() -> None:
    # Y and X come before the leaves they read, and X is met again (as Y's
    # factor) before the walk reaches it as a root.
    a, b = Value("A", labels("i_1 j_1")), Value("B", labels("j_1"))
    x = Value(
        "X",
        labels("i_1"),
        factors=(Factor("A", labels("i_1 j_1")), Factor("B", labels("j_1"))),
    )
    y = Value("Y", labels("i_1"), factors=(Factor("X", labels("i_1")),))
    z = Value("Z", labels("j_1"), factors=(Factor("B", labels("j_1")),))
    forest = forest_of([y, a, x, z, b], [])
    forest.finish()
    assert (x.node_modes, y.node_modes, z.node_modes) == (
        labels("i_1 j_1"),
        labels("i_1"),
        labels("j_1"),
    )


def test_a_cycle_below_the_first_value_is_refused() -> None:
    # X reads V, V and W read each other: found from X, named at V.
    values = [
        Value("X", labels("i_1"), factors=(Factor("V", labels("i_1")),)),
        Value("V", labels("i_1"), factors=(Factor("W", labels("i_1")),)),
        Value("W", labels("i_1"), factors=(Factor("V", labels("i_1")),)),
    ]
    with pytest.raises(ModelError, match=r"^value @V depends on itself$"):
        forest_of(values, []).finish()


def test_a_second_site_whose_labels_disagree_with_equal_factors_is_refused() -> None:
    # Two sites of V whose factor sites read A alike: the first agrees, the
    # second labels V's i_1 as i_5 while A's i_1 is i_1 there.
    a = Value("A", labels("i_1 j_1"))
    v = Value("V", labels("i_1"), factors=(Factor("A", labels("i_1 j_1")),))
    sites = [
        Site(0, "V", 0, labels("i_1"), (), None, children=(1,)),
        Site(1, "A", 0, labels("i_1 j_1"), (), 0),
        Site(2, "V", 1, labels("i_5"), (), None, children=(3,)),
        Site(3, "A", 1, labels("i_1 j_1"), (), 2),
    ]
    with pytest.raises(
        ModelError,
        match=r"^use-site of @V in tree @t1: the value's index i_1 is labelled both "
        r"i_5 and i_1 here$",
    ):
        forest_of([a, v], sites, trees=2).finish()


# Finishing derives each map once per identity of the (shared) label tuples
# it reads: the IR reader gives equal label lists one tuple. These forests
# share tuples on purpose, to show every derivation keyed by all it reads.


def test_factors_read_with_one_label_tuple_keep_their_own_maps() -> None:
    shared = labels("i_3 i_4")
    pairs = ((i("i_1"), i("i_3")), (i("i_2"), i("i_4")))
    swapped = ((i("i_1"), i("i_4")), (i("i_2"), i("i_3")))
    composite = labels("a_2<i_3,i_4>")
    forest = forest_of(
        [
            Value("A", labels("i_1 i_2")),
            Value("B", labels("i_2 i_1")),
            Value("R", shared, factors=(Factor("A", shared), Factor("B", shared))),
            Value("X", labels("a_1<i_1,i_2>")),
            Value(
                "S",
                composite,
                factors=(
                    Factor("X", composite, pairs),
                    Factor("X", composite, swapped),
                ),
            ),
        ],
        [],
    ).finish()
    assert forest.values["R"].factor_maps == (
        {i("i_1"): i("i_3"), i("i_2"): i("i_4")},
        {i("i_2"): i("i_3"), i("i_1"): i("i_4")},
    )
    first, second = forest.values["S"].factor_maps
    assert (first[i("i_1")], second[i("i_1")]) == (i("i_3"), i("i_4"))


def test_sites_read_with_one_label_tuple_keep_their_own_maps() -> None:
    shared = labels("i_3 i_4")
    composite = labels("a_2<i_3,i_4>")
    pairs = ((i("i_1"), i("i_3")), (i("i_2"), i("i_4")))
    swapped = ((i("i_1"), i("i_4")), (i("i_2"), i("i_3")))
    forest = forest_of(
        [
            Value("A", labels("i_1 i_2")),
            Value("B", labels("i_2 i_1")),
            Value("X", labels("a_1<i_1,i_2>")),
        ],
        [
            Site(0, "A", 0, shared, (), None),
            Site(1, "B", 1, shared, (), None),
            Site(2, "X", 2, composite, (), None, (), pairs),
            Site(3, "X", 3, composite, (), None, (), swapped),
        ],
        trees=4,
    ).finish()
    maps = [site.mode_map for site in forest.sites]
    assert maps[0] == {i("i_1"): i("i_3"), i("i_2"): i("i_4")}
    assert maps[1] == {i("i_2"): i("i_3"), i("i_1"): i("i_4")}
    assert (maps[2][i("i_1")], maps[3][i("i_1")]) == (i("i_3"), i("i_4"))


def test_sites_of_two_values_with_equal_maps_keep_their_own_node_labels() -> None:
    # R1 and R2 are read alike and built from A and B read alike, but they
    # name the mode they sum differently (i_5, i_6): each site's node labels
    # are its own value's, and a site equal to an earlier one shares them.
    result, a_here, b_here = labels("i_3"), labels("i_3 i_4"), labels("i_4")
    values = [
        Value("A", labels("i_1 i_2")),
        Value("B", labels("i_2")),
        Value(
            "R1",
            labels("i_1"),
            labels("i_5"),
            (Factor("A", labels("i_1 i_5")), Factor("B", labels("i_5"))),
        ),
        Value(
            "R2",
            labels("i_1"),
            labels("i_6"),
            (Factor("A", labels("i_1 i_6")), Factor("B", labels("i_6"))),
        ),
    ]
    sites: list[Site] = []
    for tree, name in enumerate(["R1", "R2", "R1"]):
        root = len(sites)
        sites.append(Site(root, name, tree, result, (), None, (root + 1, root + 2)))
        sites.append(Site(root + 1, "A", tree, a_here, (), root))
        sites.append(Site(root + 2, "B", tree, b_here, (), root))
    forest = Forest(
        "f",
        {"i": Space("i", 3)},
        {v.name: v for v in values},
        [Tree(f"t{k}", Fraction(1), 3 * k) for k in range(3)],
        sites,
    ).finish()
    assert forest.sites[0].mode_labels == {i("i_1"): i("i_3"), i("i_5"): i("i_4")}
    assert forest.sites[3].mode_labels == {i("i_1"): i("i_3"), i("i_6"): i("i_4")}
    assert forest.sites[6].mode_labels == forest.sites[0].mode_labels
