"""Issue #12 items 2 and 13: the inbox never writes outside BENCHWH_HOME (symbolic links for its
folders and files are refused) and a broken trusted_keys.json is reported, never SystemExit."""
from __future__ import annotations

import os

import dagster as dg
import pytest

from tests.helpers.faults import files_outside
from tests.helpers.runs import evaluate, signed_ten


@pytest.fixture
def outside(tmp_path):
    """A folder beside the home that an attacker would like the sensor to write into."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    return target


@pytest.mark.parametrize("linked", ["rejected", "processed"])
def test_symlinked_inbox_folder_is_refused(home, outside, linked):

    inbox = home / "inbox"
    inbox.mkdir()
    os.symlink(outside, inbox / linked)
    (inbox / "junk.json").write_text("not a run file")
    (inbox / "run.json").write_bytes(b'{"hello": 1}')
    before = files_outside(home)
    result, _cursor = evaluate()
    assert isinstance(result, dg.SkipReason)
    assert list(outside.iterdir()) == []
    assert files_outside(home) == before
    assert (inbox / "junk.json").exists() and (inbox / "run.json").exists()  # left for a person to see


def test_symlinked_inbox_itself_is_refused(home, outside):
    os.symlink(outside, home / "inbox")
    (outside / "dropped.json").write_text("not a run file")
    before = files_outside(home)
    result, _ = evaluate()
    assert isinstance(result, dg.SkipReason)
    assert sorted(p.name for p in outside.iterdir()) == ["dropped.json"]
    assert files_outside(home) == before


def test_symlinked_file_is_rejected_without_reading_its_target(home, outside):
    secret = outside / "secret.json"
    secret.write_text('{"not": "yours"}')
    inbox = home / "inbox"
    inbox.mkdir()
    os.symlink(secret, inbox / "link.json")
    before = files_outside(home)
    result, _ = evaluate()
    assert isinstance(result, dg.SkipReason)
    moved = inbox / "rejected" / "link.json"
    assert os.path.islink(moved) and "symbolic link" in (inbox / "rejected" / "link.json.reason").read_text()
    assert secret.read_text() == '{"not": "yours"}'
    assert files_outside(home) == before


def test_planted_reason_link_is_not_written_through(home, outside):
    inbox = home / "inbox"
    (inbox / "rejected").mkdir(parents=True)
    victim = outside / "victim.txt"
    victim.write_text("keep me")
    # a .reason link waiting for junk.json: the sensor picks another name, never writes through it
    os.symlink(victim, inbox / "rejected" / "junk.json.reason")
    (inbox / "junk.json").write_text("not a run file")
    evaluate()
    assert victim.read_text() == "keep me"
    assert (inbox / "rejected" / "junk.1.json.reason").exists()


def test_broken_trusted_keys_is_reported_not_systemexit(home, tmp_path):
    from ingest.sources.runs import dsse

    dsse.write_private_key(tmp_path / "k.pem")
    key = dsse.load_private_key(tmp_path / "k.pem")
    inbox = home / "inbox"
    inbox.mkdir()
    _doc, body = signed_ten(key)
    (inbox / "run.json").write_bytes(body)
    (home / "trusted_keys.json").write_text('{"keys": [')
    result, cursor = evaluate()
    assert isinstance(result, dg.SkipReason)
    assert (inbox / "run.json").exists()  # kept until the keys file is fixed
    (home / "trusted_keys.json").write_text('{"keys": []}')
    result, _ = evaluate(cursor)
    assert isinstance(result, dg.RunRequest)  # then it lands (unverified: the key is not trusted)
