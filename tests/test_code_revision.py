"""The code revision recorded in audit.build_info and the manifest, in a clone and in a worktree."""
from ingest import config
from orchestration import dbt_assets

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_clone_with_packed_ref(tmp_path, monkeypatch):
    git = tmp_path / ".git"
    git.mkdir()
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text(f"# pack-refs\n{SHA} refs/heads/main\n")
    monkeypatch.setattr(config, "project_root", lambda: tmp_path)
    assert dbt_assets.code_revision() == SHA[:12]


def test_worktree_reads_head_and_common_refs(tmp_path, monkeypatch):
    common = tmp_path / "main" / ".git"
    (common / "refs" / "heads").mkdir(parents=True)
    (common / "refs" / "heads" / "feature").write_text(SHA + "\n")
    wt_git = common / "worktrees" / "wt"
    wt_git.mkdir(parents=True)
    (wt_git / "HEAD").write_text("ref: refs/heads/feature\n")
    (wt_git / "commondir").write_text("../..\n")
    work = tmp_path / "wt"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {wt_git}\n")
    monkeypatch.setattr(config, "project_root", lambda: work)
    assert dbt_assets.code_revision() == SHA[:12]


def test_no_git_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "project_root", lambda: tmp_path)
    assert dbt_assets.code_revision() == "unknown"
