"""The query side: query head + colour words on the real MiniLM, "not here" below the
threshold, co-located entries pooled, clear errors for bad head files."""

import numpy as np
import pytest

from rlstack_perception.colour_words import ColourRule, find_colour
from rlstack_perception.embed import LABELS, TextEncoder
from rlstack_perception.query_head import QueryHead
from rlstack_perception.semantic_map import Detection, MapConfig, SemanticMapCore


@pytest.fixture(scope="module")
def text():
    return TextEncoder()


@pytest.fixture(scope="module")
def head():
    return QueryHead()


def scores(head, text, q):
    return head.label_scores(q, text.encode([q])[0], LABELS)


def test_plain_and_reworded_queries_pick_their_label(head, text):
    assert 0.0 < head.threshold < 1.0 and head.card["threshold_calibrated_on"]
    for q, lab in (("the yellow cube", "yellow cube"), ("bring me the blue sphere", "blue ball"),
                   ("the cylinder coloured green", "green cylinder"), ("grab the cherry red brick", "red cube")):
        s = scores(head, text, q)
        assert LABELS[int(np.argmax(s))] == lab and s.max() >= head.threshold, (q, s.round(2))
    # category words accept every shape of the colour; a shape alone every colour
    s = scores(head, text, "the red thing")
    assert all(s[LABELS.index(f"red {sh}")] >= head.threshold for sh in ("cube", "ball", "cylinder"))
    assert all(s[LABELS.index(f"{c} {sh}")] < head.threshold for c in ("green", "blue", "yellow")
               for sh in ("cube", "ball", "cylinder"))


def test_absent_things_match_nothing(head, text):
    for q in ("the pink cube", "the red giraffe", "a white shoe", "where is the orange hat?"):
        assert scores(head, text, q).max() < head.threshold, q


def test_colour_words_through_the_survey():
    rule = ColourRule.default()
    assert find_colour("could you fetch that sky-blue box") == ("sky blue", pytest.approx(find_colour("sky blue")[1]))
    assert find_colour("the red brick", exclude=["brick"])[0] == "red"
    assert find_colour("the cube") is None
    assert rule.classify(find_colour("ruby")[1])[0] == "red" and rule.classify(find_colour("pink")[1])[0] is None
    assert rule.compat("the cube that is lime").tolist() == [0, 1, 0, 0]
    assert rule.compat("a magenta ball").tolist() == [0, 0, 0, 0]


def test_a_colour_name_before_a_basic_colour_term_names_its_shade():
    """English compounds are head-final: "candy-apple red" is a red, though "apple" alone is a green; a
    colour name before a colour name that is no basic term keeps its place ("the green wine bottle")."""
    rule = ColourRule.default()
    assert find_colour("the candy-apple red vial")[0] == "red"
    assert rule.compat("go on, get the candy-apple red salver").tolist() == [1, 0, 0, 0]
    assert find_colour("the apple green atlas")[0] == "apple green"     # the survey's own compound
    assert find_colour("the green wine bottle")[0] == "green"
    assert find_colour("the blue sand bucket")[0] == "blue"


def test_cyan_hues_are_not_ours_and_greens_blues_stay():
    """The cyan hue region has an absent anchor ("aqua"): a turquoise or aqua thing is
    not one of our four colours, while green and blue names beside that region keep their colour (the
    anchors "teal" and "dark teal" take jade, jungle green and steel blue)."""
    rule = ColourRule.default()
    for word in ("aqua", "turquoise", "aquamarine"):
        assert rule.classify(find_colour(word)[1])[0] is None, word
    for word, colour in (("jade", "green"), ("jungle green", "green"), ("emerald", "green"),
                         ("steel blue", "blue"), ("navy", "blue"), ("sky blue", "blue")):
        assert rule.classify(find_colour(word)[1])[0] == colour, word


def test_map_label_scores_threshold_and_colocated_pooling():
    protos = np.eye(len(LABELS), 16, dtype=np.float32)
    # merge_m=0: pooling at query time is what remains of two entries on one object when they are not
    # merged at update time (merging them: test_core's merge tests)
    m = SemanticMapCore(MapConfig(colocated_m=0.03, merge_m=0.0), LABELS, protos)
    cube, ball = LABELS.index("blue cube"), LABELS.index("blue ball")
    # the blue cube seen well, then once from far away as a "blue ball" 1 cm off; the real ball elsewhere
    for _ in range(5):
        m.update([Detection(np.array([1.0, 0, 0.5]), np.ones(3) * .05, protos[cube], 1.0)])
    m.update([Detection(np.array([1.0, 0.01, 0.5]), np.ones(3) * .05, protos[ball], 0.1)])
    m.update([Detection(np.array([2.0, 1.0, 0.5]), np.ones(3) * .05, protos[ball], 1.0)])
    assert len(m) == 3
    want_ball = np.zeros(len(LABELS), np.float32)
    want_ball[ball] = 1.0
    top = m.query(None, 1, 0.5, label_scores=want_ball)
    assert top and np.allclose(top[0][0].position, [2.0, 1.0, 0.5]) and top[0][1] > 0.99
    # the far look takes the well-observed entry's label: the group answers once, as the well-observed
    # "blue cube" entry (its label and position), fully; neither answers "ball"
    want_cube = np.zeros(len(LABELS), np.float32)
    want_cube[cube] = 1.0
    answers = m.query(None, 0, 0.5, label_scores=want_cube)
    assert [round(s, 6) for _, s in answers] == [1.0] and np.allclose(answers[0][0].position, [1.0, 0, 0.5])
    assert answers[0][0].label == "blue cube"
    nothing = np.zeros(len(LABELS), np.float32)
    assert m.query(None, 0, 0.35, label_scores=nothing) == []
    m.config.colocated_m = 0.0  # without pooling the far look ties with the real ball
    assert len([s for _, s in m.query(None, 0, 0.5, label_scores=want_ball)]) == 2


def test_bad_head_files_fail_clearly(tmp_path, head):
    with pytest.raises(FileNotFoundError, match="train with"):
        QueryHead(tmp_path / "missing.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="could not be read"):
        QueryHead(bad)
    with pytest.raises(ValueError, match="384-d"):
        head.compat(np.ones((1, 16), np.float32))


def test_wordnet_shape_words(head, text):
    from rlstack_perception import wordings as W
    from rlstack_perception.shape_words import ShapeRule, find_shape_word, load_table

    table = load_table()
    train = {w.replace("-", " ") for ws in W.TRAIN_SHAPES.values() for w in ws}
    assert len(table) >= 20 and set(table.values()) <= set(W.TRAIN_SHAPES)
    assert not set(table) & train and not set(table) & set(W.TRAIN_ABSENT_KINDS)
    # built from every kind's training shape words ("doughnut" is a ring's shape), and
    # adjectives derived from a thing one of its words names ("tubular": a tube, so a cylinder)
    assert table["doughnut"] == "ring" and table["conical"] == "cone" and table["tubular"] == "cylinder"
    assert "editorial" not in table   # derived from a newspaper column, not the column of the table
    assert find_shape_word("fetch the red regular hexahedron") == ("regular hexahedron", "cube")
    assert find_shape_word("the red mug") is None
    assert ShapeRule().apply("a columnar thing", np.zeros(3, np.float32)).tolist() == [0, 0, 1]
    for q, lab in (("a yellow ellipsoid", "yellow ball"), ("the blue regular hexahedron", "blue cube"),
                   ("the green columnar piece", "green cylinder")):
        s = scores(head, text, q)
        assert LABELS[int(np.argmax(s))] == lab and s.max() >= head.threshold, (q, s.round(2))
    off = QueryHead(shape_words=False)
    assert off.shape_rule is None
