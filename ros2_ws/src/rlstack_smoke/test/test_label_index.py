from rlstack_smoke.label_index import LabelIndex, words


def test_words_drop_articles_and_case():
    assert words("The Yellow  cube!") == {"yellow", "cube"}


def test_query_ranks_by_share_of_words():
    index = LabelIndex()
    index.observe(1, "yellow cube", (0.0, 0.0, 0.0))
    index.observe(2, "red cube", (1.0, 0.0, 0.0))
    index.observe(3, "yellow ball", (2.0, 0.0, 0.0))
    ranked = index.query("the yellow cube")
    assert [(e.object_id, s) for e, s in ranked] == [(1, 1.0), (2, 0.5), (3, 0.5)]
    assert [e.object_id for e, _ in index.query("yellow cube", max_results=1)] == [1]
    assert [e.object_id for e, _ in index.query("yellow cube", min_score=0.75)] == [1]


def test_empty_or_unknown_query_matches_nothing():
    index = LabelIndex()
    index.observe(1, "yellow cube", (0.0, 0.0, 0.0))
    assert index.query("") == []
    assert index.query("the a of") == []
    assert index.query("green cylinder") == []


def test_observing_again_updates_in_place():
    index = LabelIndex()
    index.observe(1, "cube", (0.0, 0.0, 0.0))
    entry = index.observe(1, "blue cube", (1.0, 2.0, 3.0))
    assert len(index) == 1 and 1 in index and 2 not in index
    assert entry.observations == 2 and entry.position == (1.0, 2.0, 3.0) and entry.label == "blue cube"
