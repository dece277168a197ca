"""Tests never depend on which sources the user scaffolded in their own tree."""
import subprocess

from ingest import scaffold
from ingest.source import metadata_todos
from tests.helpers.pipeline import copy_project, user_added_sources
from tests.helpers.scaffold import RECORDED_AT, load_module


def git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_a_copy_of_the_project_leaves_out_the_users_own_scaffolds(tmp_path):
    tree = tmp_path / "tree"
    (tree / "ingest" / "sources").mkdir(parents=True)
    (tree / "ingest" / "sources" / "shipped.py").write_text("# part of the project\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    # the user's own source, scaffolded in the tree (untracked)
    written = scaffold.write(scaffold.plan("gpu_prices", root=tree, recorded_at=RECORDED_AT), root=tree)
    assert user_added_sources(tree) == ["gpu_prices"]

    copy = tmp_path / "copy"
    copy_project(tree, copy, lambda folder, names: set())
    assert (copy / "ingest" / "sources" / "shipped.py").exists()
    assert not [p for p in written if (copy / p).exists()]
    # so a test may scaffold the same name in its copy
    assert scaffold.plan("gpu_prices", root=copy, recorded_at=RECORDED_AT).name == "gpu_prices"


def test_a_name_registered_in_this_tree_is_free_in_another_tree(tmp_path):
    # `openrouter` is a source of this project, not of an empty tree a test builds
    assert scaffold.plan("openrouter", root=tmp_path, recorded_at=RECORDED_AT).name == "openrouter"


def test_an_unfinished_scaffold_is_named_by_its_todo_metadata(tmp_path, monkeypatch):
    scaffold.write(scaffold.plan("gpu_prices", root=tmp_path, recorded_at=RECORDED_AT), root=tmp_path)
    module = load_module(tmp_path / "ingest/sources/gpu_prices.py", "scaffolded_gpu_prices_todo", monkeypatch)
    assert metadata_todos(module.GpuPricesSource()) == ["license", "attribution"]
