"""The docs check: README.md and docs/ name only what exists, guide commands are covered, the
reference tables are current, pages stay short. Fast (no process is started but `make -n`)."""

import re
import subprocess
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
import check_docs  # noqa: E402


def test_docs_name_only_what_exists_and_every_guide_command_is_covered():
    problems = []
    for page in check_docs.pages():
        problems += check_docs.check_page(page)
    assert not problems, "\n".join(problems)


def test_generated_reference_tables_are_current():
    problems = check_docs.check_generated()
    assert not problems, "\n".join(problems) + "\nrun: source env.sh && python tools/gen_reference.py"


def test_launch_file_header_examples_name_declared_arguments():
    problems = check_docs.check_launch_headers()
    assert not problems, "\n".join(problems)


def test_pages_are_short():
    assert len((REPO / "README.md").read_text().splitlines()) <= 150
    long = {str(p.relative_to(REPO)): n for p in (REPO / "docs").rglob("*.md")
            if (n := len(p.read_text().splitlines())) > 500}
    assert not long, long


def test_the_check_finds_each_kind_of_problem():
    """A page with one mistake of every kind: each is reported, and a correct page is not."""
    page = REPO / "docs" / "guides" / "_check_docs_example.md"
    bad = "\n".join([
        "See [the guide](quickstart.md#no-such-heading) and [gone](nowhere.md).",
        "The file `launch/params/no_such_node.yaml` and `rlstack_nav/no_such_module.py`.",
        "Run `make no-such-target`, start `nonexistent.launch.yaml`, import `rlstack_nav.no_such_thing`.",
        "```bash",
        "source env.sh",
        "python -m rlstack_launch launch/fetch.launch.yaml no_such_arg:=1",
        "```",
        "```bash",
        "# runs in: tests/test_docs.py::no_such_test",
        "ros2_ws/install/rlstack_perception/lib/rlstack_perception/semantic_map --ros-args -p no_such_param:=1",
        "python -m rlstack_no_such_module",
        "```",
        "| parameter | default |",
        "|---|---|",
        "| `no_such_parameter` | 1 |",
        "",
    ])
    found = "\n".join(check_docs.check_page(page, bad))
    for expected in ("no heading '#no-such-heading'", "nowhere.md", "launch/params/no_such_node.yaml does not exist",
                     "rlstack_nav/no_such_module.py matches no file", "make no-such-target", "nonexistent.launch.yaml",
                     "rlstack_nav.no_such_thing", "launch argument 'no_such_arg'", "without '# runs in",
                     "defines no test function no_such_test", "parameter 'no_such_param'",
                     "python -m rlstack_no_such_module", "parameter 'no_such_parameter' is declared by no node"):
        assert expected in found, f"not reported: {expected}\n{found}"
    good = "\n".join([
        "See [the guide](quickstart.md#2-the-same-graph-started-by-hand), `launch/params/mission.yaml`,",
        "`make train`, `fetch.launch.yaml`, `rlstack_nav.parameters`, `rlstack_common.declare_parameter`.",
        "```bash",
        "# runs in: tests/test_docs.py::test_the_check_finds_each_kind_of_problem",
        "source env.sh",
        "python -m rlstack_launch launch/fetch.launch.yaml seed:=3 backend:=mujoco",
        "ros2_ws/install/rlstack_perception/lib/rlstack_perception/semantic_map --ros-args "
        "-p use_sim_time:=false -p map_frame:=odom",
        "```",
        "| parameter | default |",
        "|---|---|",
        "| `map_frame`, `max_range_m` | odom |",
        "",
    ])
    assert check_docs.check_page(page, good) == []


def test_make_train_exports_to_a_new_folder_unless_overwrite_is_given():
    def recipe(*args):
        out = subprocess.run(["make", "-n", "train", "TASK=cartpole", *args], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout
        return next(ln for ln in out.splitlines() if "rlstack_learning.train" in ln)

    plain, overwrite = recipe(), recipe("OVERWRITE=1")
    assert "--export" in plain and "--overwrite" not in plain
    assert re.search(r"--export --overwrite\b", overwrite)


def test_every_docs_page_named_anywhere_in_the_repository_exists():
    """Comments, docstrings, launch files, params files, READMEs and model cards point users at
    docs/ pages: each page they name exists."""
    names = re.compile(r"(?<![\w/.-])(docs/[\w./-]+\.md)")
    missing = []
    for rel in check_docs.tracked():
        path = REPO / rel
        if rel.startswith(("docs/", "out/")) or path.suffix not in (
                ".py", ".md", ".yaml", ".yml", ".sh", ".xml", ".txt", ".msg", ".srv", ".action", ".rviz", ".cfg") \
                and path.name not in ("Makefile", "Dockerfile", "env.sh"):
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for m in names.finditer(text):
            if not (REPO / m.group(1)).is_file():
                missing.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(1)}")
    assert not missing, "\n".join(missing)
