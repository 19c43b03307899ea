"""Perception's vocabulary (embed.KINDS) names exactly the kinds of objects the simulated scenes
hold (sim_bridges.scenes.kinds), and ground truth reports each object's kind."""

from rlstack_perception.embed import ALL_LABELS, COLOURS, KINDS, LABELS, SHAPES


def test_kinds_match_the_scenes_kinds():
    from sim_bridges.scenes.kinds import BASIC_KINDS, kind_names

    assert KINDS == kind_names() and SHAPES == BASIC_KINDS == KINDS[:3]
    assert len(KINDS) >= 20 and len(ALL_LABELS) == len(COLOURS) * len(KINDS) and set(LABELS) < set(ALL_LABELS)


def test_home_kinds_ground_truth_names_every_kind():
    from rlstack_perception import simtools as st
    from sim_bridges import make_backend

    with make_backend("pybullet") as sim:
        sim.load_scene("home_kinds")
        objs = st.target_objects(sim)
        assert {o.kind for o in objs.values()} == set(KINDS)
        assert all(st.label_of(o) in ALL_LABELS for o in objs.values())
        sim.load_scene("home")
        assert {st.label_of(o) for o in st.target_objects(sim).values()} == set(LABELS)
