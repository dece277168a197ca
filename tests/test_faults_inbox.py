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


def swap_in_a_loop(inbox, names, outside, stop, swaps):
    """What a dropper can do at any moment: put each folder aside and a link to `outside` in its
    place, then back, as fast as it can (each folder is a link about half the time)."""
    n = 0
    while not stop.is_set():
        for name in names:
            n += 1
            real, aside = inbox / name, inbox / f".aside-{n}"
            try:
                os.rename(real, aside)
                os.symlink(outside, real)
            except OSError:
                continue  # not made yet, or the inbox made it again meanwhile
            swaps.append(name)
            try:
                os.unlink(real)
            except OSError:
                pass  # the inbox put a folder of its own in the link's place meanwhile
            try:
                os.rename(aside, real)
            except OSError:
                pass  # the inbox made a new one meanwhile: the old stays aside, in the home


def test_folders_swapped_for_links_while_the_inbox_runs_get_nothing_outside_the_home(home, outside, tmp_path):
    import threading
    import time

    from ingest.sources.runs import dsse
    from orchestration.sensors import process_inbox

    dsse.write_private_key(tmp_path / "k.pem")
    key = dsse.load_private_key(tmp_path / "k.pem")
    inbox = home / "inbox"
    inbox.mkdir()
    before = files_outside(home)
    stop, swaps, log = threading.Event(), [], []
    swapper = threading.Thread(target=swap_in_a_loop,
                               args=(inbox, ["rejected", "processed", ".reports-pending"], outside, stop, swaps))
    swapper.start()
    rounds = 0
    try:
        ends = time.monotonic() + 6  # a bound on the test, not an assertion
        while time.monotonic() < ends or rounds < 2:
            for i in range(3):
                (inbox / f"junk-{rounds}-{i}.json").write_text("not a run file")
                (inbox / f"junk-{rounds}-{i}.json.meta.json").write_text("{}")
            _doc, body = signed_ten(key)
            (inbox / f"run-{rounds}.json").write_bytes(body)  # accepted: a report and a pending marker
            process_inbox(None, log=log.append)
            rounds += 1
    finally:
        stop.set()
        swapper.join()
    assert len(swaps) > 100, len(swaps)  # the folders really were links while the inbox ran
    assert list(outside.iterdir()) == []
    assert files_outside(home) == before
    moved = [p.name for p in inbox.glob("*/*")] + [p.name for p in inbox.glob(".aside-*/*")]
    # every file went to a real folder (maybe one put aside), or stayed in the inbox with a line saying why
    for r in range(rounds):
        for name in [f"junk-{r}-{i}.json" for i in range(3)] + [f"run-{r}.json"]:
            assert name in moved or (inbox / name).exists() or any(name in line for line in log), name


def test_folders_made_by_the_warehouse_are_private_and_others_refused(home):
    from ingest.sources.runs.inbox import Inbox, InboxUnsafe

    with Inbox.open(home) as box:
        for name in ("processed", "rejected", ".reports-pending"):
            box.folder(name)
            assert os.stat(home / "inbox" / name).st_mode & 0o777 == 0o750
    if os.geteuid() == 0:  # a folder another user made is not the warehouse's
        (home / "inbox" / "theirs").mkdir()
        os.chown(home / "inbox" / "theirs", 65534, 65534)
        with Inbox.open(home) as box, pytest.raises(InboxUnsafe, match="belongs to uid 65534"):
            box.folder("theirs")


def test_control_characters_in_names_are_escaped_in_log_and_reason(home):
    from orchestration.sensors import process_inbox

    inbox = home / "inbox"
    inbox.mkdir()
    name = "evil\x1b[2J\rinbox: all good\u202e.json"
    (inbox / name).write_text("not a run file")
    log = []
    process_inbox(None, log=log.append)
    moved = inbox / "rejected" / name
    assert moved.exists()
    reason = (inbox / "rejected" / (name + ".reason")).read_text()
    assert reason.count("\n") == 1 and "\x1b" not in reason and "\r" not in reason and "\u202e" not in reason
    assert reason.startswith("evil\\x1b[2J\\rinbox: all good\\u202e.json: ")
    assert all(line.isprintable() for line in log), log


def test_the_inbox_waits_for_a_refresh_and_lands_after_it(home, tmp_path):
    """Issue 53 item 2: while a refresh holds the home, the sensor lands nothing (a refresh never
    builds half a batch) and never blocks its tick; the file stays and lands on the next tick."""
    from ingest.sources.runs import dsse
    from tests.helpers.locks import lock_held_elsewhere

    dsse.write_private_key(tmp_path / "k.pem")
    inbox = home / "inbox"
    inbox.mkdir()
    _doc, body = signed_ten(dsse.load_private_key(tmp_path / "k.pem"))
    (inbox / "run.json").write_bytes(body)
    with lock_held_elsewhere(home, "refresh"):
        result, cursor = evaluate()
        assert isinstance(result, dg.SkipReason)
        assert (inbox / "run.json").exists() and not (home / "raw" / "runs").exists()
    result, _ = evaluate(cursor)
    assert isinstance(result, dg.RunRequest)
    assert not (inbox / "run.json").exists()
