"""Query wordings put in the form the query head reads best (rlstack_perception.query_text)."""

import numpy as np
import pytest

from rlstack_perception import wordings as W
from rlstack_perception.query_head import load_default
from rlstack_perception.query_text import canonical_query, fold_one


@pytest.fixture(scope="module")
def head():
    return load_default()


@pytest.mark.parametrize("text,expected", [
    ("the can, the blue one", "the blue can"),
    ("the duplo, the deep red one, please", "the deep red duplo, please"),
    ("the doorknob, the one that is yellow", "the yellow doorknob"),
    ("the cube, the one that's red", "the red cube"),
    ("hey robot, the orb, the green one", "hey robot, the green orb"),
    # no back-reference: unchanged
    ("the red one", "the red one"),
    ("the cube that is red", "the cube that is red"),
    ("the cube, the one over there", "the cube, the one over there"),
    ("robot, could I have the red cube", "robot, could I have the red cube"),
])
def test_fold_one(text, expected):
    assert fold_one(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("the cranberry cube", "the ruby cube"),                      # attributive: a colour
    ("the cube that's cranberry", "the cube that's ruby"),        # after a predicate cue
    ("the cube, the one that is cranberry", "the ruby cube"),
    ("could you fetch that sky-blue box", "could you fetch that light blue box"),
    ("the apple green cylinder", "the grass green cylinder"),     # reaches past the thing's name "apple"
    # a colour name used as the thing asked for, or inside a thing's name, is left alone
    ("the banana that is yellow", "the banana that is yellow"),
    ("the cranberry, please", "the cranberry, please"),
    ("the tea tray: bright green", "the tea tray: bright green"),
    ("the red brick", "the red brick"),
    ("the red cube", "the red cube"),
    # a shade named by a compound goes whole: a noun or a colour name before a basic colour term only names
    # the shade (a hyphened compound is one word); the head then reads no other thing in the query
    ("the postbox red cylinder", "the red cylinder"),
    ("where's the taxi yellow ball hiding?", "where's the yellow ball hiding?"),
    ("the candy-apple red cylinder", "the red cylinder"),
    ("the bowl that looks postbox red", "the bowl that looks red"),   # a copula: predicate
    ("the cube that's postbox red", "the cube that's red"),
    ("find red cube", "find red cube"),                                # a verb, not a shade
    ("the round green toy", "the round green toy"),                    # an attribute: round things
])
def test_colour_names_replaced_by_their_anchor(head, text, expected):
    assert head.canonical(text) == expected


def test_canonical_is_a_no_op_on_training_wordings_and_keeps_the_colour_class(head):
    """The shipped head was trained on the raw training wordings: the rewrite must change none of them;
    and the colour rule gives an anchored query the colour it gave the original."""
    for q in W.training_wordings(4000, seed=7):
        assert head.canonical(q.text) == q.text, q.text
    for text in ("the cranberry cube", "the cube that's cranberry", "the apple green cylinder", "the cyan cube",
                 "a scarlet ball", "the jade cylinder", "the mustard cube", "the postbox red cube",
                 "the candy-apple red cube"):
        before = head.colour_rule.compat(text, head._not_colours)
        after = head.colour_rule.compat(head.canonical(text), head._not_colours)
        assert before is not None and after is not None and before.tolist() == after.tolist(), text


def test_without_colour_rule_only_the_back_reference_is_folded():
    assert canonical_query("the cranberry cube") == "the cranberry cube"
    assert canonical_query("the cube, the cranberry one") == "the cranberry cube"


def test_text_encoder_cache_overflow_keeps_this_calls_texts():
    """A batch with texts already cached and new ones that overflow the cache: the cache is cleared, and
    the call still returns every text's embedding (it raised KeyError for the cached ones before)."""
    from rlstack_perception.embed import TextEncoder

    enc = TextEncoder(cache_size=3)
    first = enc.encode(["the red cube", "the blue ball"])
    out = enc.encode(["the red cube", "the green cylinder", "the yellow cube"])
    assert out.shape == (3, 384)
    np.testing.assert_allclose(out[0], first[0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
