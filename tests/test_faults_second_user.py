"""Issue 53 items 2, 3 and 7 against a real second local user (acceptance: "a second local user
where the machine allows `useradd`").

The warehouse runs as root here, the way a nightly job or a sensor may; a second user, made with
`useradd` for this session and removed with `userdel -r` after it, runs its own programs through
`setpriv --reuid --regid --clear-groups` (the system `python3`, standard library only). What it
tries is what a local user who may drop files in a shared inbox, or write in a shared folder such
as /tmp, can do:

- the inbox race (item 3): it owns the drop folder, so it may rename `processed/`, `rejected/` and
  `.reports-pending/` aside at any moment and put a link to a folder outside the home, or a folder
  of its own, in their place, in a loop while the inbox is processed as root. Nothing is written
  outside the home and nothing of ours lands in a folder of theirs;
- the folders the warehouse makes below the inbox (0750, root's) cannot be written, listed or
  changed by the other user;
- squatting (items 2 and 7): the home lock is ours alone (0640: the other user can neither open it
  to hold it nor replace it), a link the other user plants at a lock path in a folder it may write
  is never followed, and `runs sign` / `keys generate` in a shared sticky folder never write
  through, over or into what the other user planted (temporaries are O_EXCL | O_NOFOLLOW), and
  what they create is root's;
- a new private key in a folder others may write: the other user swaps it for a link to another
  file of root's in a loop; the key's mode is set on its descriptor, so that file's mode never
  changes (`os.chmod` by path after the create changed it, about 1 key in 100).

Every program of the other user is started here and killed here (by its pid) before the user is
removed. Skipped, with the reason, when not root or without useradd/setpriv/python3.
"""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.faults import files_outside

PROBE_PYTHON = "/usr/bin/python3"  # the system's: the other user cannot reach the project's interpreter


@dataclass
class Probe:
    """The second local user and the programs it runs (each in its own session, killed at the end)."""

    name: str
    uid: int
    gid: int
    procs: list = field(default_factory=list)

    def start(self, script: str, *args: str) -> subprocess.Popen:
        cmd = [shutil.which("setpriv"), f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--",
               PROBE_PYTHON, "-I", "-c", script, *args]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd="/", env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def run(self, script: str, *args: str) -> dict:
        """Run `script` as the other user; it prints one JSON object, returned here."""
        proc = self.start(script, *args)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        return json.loads(out)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        self.procs.clear()


@pytest.fixture(scope="session")
def probe():
    if os.geteuid() != 0:
        pytest.skip("needs root: the second local user is made with useradd for the test")
    for tool in ("useradd", "userdel", "setpriv"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: no second local user on this machine")
    if not os.access(PROBE_PYTHON, os.X_OK):
        pytest.skip(f"{PROBE_PYTHON} is absent: the second user has no interpreter to run")
    name = f"benchwh-probe-{os.getpid()}"
    made = subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"useradd {name} failed: {made.stderr.strip() or made.returncode}")
    entry = pwd.getpwnam(name)
    user = Probe(name, entry.pw_uid, entry.pw_gid)
    try:
        yield user
    finally:
        user.stop_all()
        subprocess.run(["userdel", "-r", name], capture_output=True)


@pytest.fixture
def probe_procs(probe):
    """The other user's programs end with the test that started them."""
    yield probe
    probe.stop_all()


@pytest.fixture
def base(probe_procs):
    """A folder both users can reach (pytest's own temporary folders are root's alone, 0700);
    removed after the other user's programs have ended."""
    folder = Path(tempfile.mkdtemp(prefix="benchwh-probe-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def shared_home(home, base, monkeypatch) -> Path:
    """A warehouse home of root's (0755, as a home is made) that the other user can reach."""
    wh = base / "warehouse"
    wh.mkdir(mode=0o755)
    monkeypatch.setenv("BENCHWH_HOME", str(wh))
    return wh


@pytest.fixture
def outside(base) -> Path:
    """Root's folder beside the home: the other user cannot write in it, but root could be tricked into it."""
    folder = base / "elsewhere"
    folder.mkdir(mode=0o755)
    return folder


@pytest.fixture
def victim(outside) -> Path:
    target = outside / "victim.txt"
    target.write_text("keep me")
    target.chmod(0o644)
    return target


@pytest.fixture
def shared(base) -> Path:
    """A folder every user may write in, sticky like /tmp."""
    folder = base / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


@pytest.fixture
def signing_key(tmp_path):
    from ingest.sources.runs import dsse

    dsse.write_private_key(tmp_path / "k.pem")  # root's private temporary folder
    return tmp_path / "k.pem"


def owned_by(path: Path, uid: int) -> bool:
    return os.lstat(path).st_uid == uid


# What the other user tries. Each prints one JSON object: {what: "ok" | errno name}.
TRY = r'''
import errno, json, os, sys
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
def create(path):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
'''


# ---------------------------------------------------------------------------------------------
# item 3: the inbox, raced by the user who owns the drop folder
# ---------------------------------------------------------------------------------------------

SWAPPER = r'''
import os, sys, time
inbox, outside, stop = sys.argv[1:4]
names = ["rejected", "processed", ".reports-pending"]
n = swaps = 0
print("ready", flush=True)
while not os.path.exists(stop):
    for name in names:
        n += 1
        real, aside = os.path.join(inbox, name), os.path.join(inbox, ".aside-%d" % n)
        try:
            os.rename(real, aside)  # root's folder, put aside (it stays in the inbox)
        except OSError:
            continue  # not made yet
        ours = n % 2 == 0
        try:
            if ours:
                os.mkdir(real, 0o777)  # a folder of the other user's in its place
            else:
                os.symlink(outside, real)  # a link out of the home in its place
        except OSError:
            continue  # root made a new one meanwhile: the old one stays aside
        swaps += 1
        if swaps % 25 == 0:
            print(swaps, flush=True)
        time.sleep(0.002)  # swapped for a moment
        try:
            if ours:
                os.rmdir(real)
            else:
                os.unlink(real)
        except OSError:
            continue  # something was put in the folder of ours: left for the test to find
        try:
            os.rename(aside, real)
        except OSError:
            pass
print("swaps", swaps, flush=True)
'''


def test_the_other_user_swapping_inbox_folders_gets_nothing_written_outside_the_home(
        probe_procs, shared_home, outside, base, signing_key):
    from ingest.sources.runs import dsse
    from orchestration.sensors import process_inbox
    from tests.helpers.runs import signed_ten

    probe = probe_procs
    key = dsse.load_private_key(signing_key)
    inbox = shared_home / "inbox"
    inbox.mkdir()
    os.chown(inbox, probe.uid, probe.gid)  # the drop folder is the other user's
    before = files_outside(shared_home)
    stop = base / "stop"
    swapper = probe.start(SWAPPER, str(inbox), str(outside), str(stop))
    assert swapper.stdout.readline().strip() == "ready", swapper.stderr.read()
    progress = {"swaps": 0, "final": None}

    def follow() -> None:
        for line in swapper.stdout:
            word = line.split()
            if word[0] == "swaps":
                progress["final"] = int(word[1])
            else:
                progress["swaps"] = int(word[0])

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    log: list[str] = []
    dropped: list[str] = []
    rounds = 0
    try:
        # until the folders were swapped a few hundred times while the inbox ran (bounded in rounds)
        while rounds < 10 or ((progress["swaps"] < 300 or sum(not (inbox / n).exists() for n in dropped) < 3)
                             and rounds < 300):
            for i in range(2):
                name = f"junk-{rounds}-{i}.json"
                (inbox / name).write_text("not a run file")
                dropped.append(name)
            _doc, body = signed_ten(key)
            (inbox / f"run-{rounds}.json").write_bytes(body)  # accepted: a report and a pending marker
            dropped.append(f"run-{rounds}.json")
            process_inbox(None, log=log.append)
            rounds += 1
    finally:
        stop.touch()
        swapper.wait(timeout=60)
        reader.join(timeout=60)
    assert swapper.returncode == 0, swapper.stderr.read()
    assert progress["final"] is not None and progress["final"] >= 300, progress  # the race really ran

    assert list(outside.iterdir()) == []
    assert files_outside(shared_home) == before | {str(stop)}
    # nothing of root's went into a folder of the other user's (it is refused when opened)
    for folder, dirs, files in os.walk(inbox):
        if owned_by(Path(folder), probe.uid) and Path(folder) != inbox:
            assert dirs + files == [], (folder, dirs + files)
    # every dropped file went to one of root's folders (maybe one put aside: still in the inbox),
    # or stayed in the inbox, maybe with a line saying why
    moved = {name: Path(folder) for folder, _dirs, files in os.walk(inbox) if Path(folder) != inbox
             for name in files}
    for name in dropped:
        if name in moved:
            assert owned_by(moved[name], 0), moved[name]
        else:
            assert (inbox / name).exists(), (name, [line for line in log if name in line])
    assert sum(name in moved for name in dropped) >= 3  # the inbox did its work while raced


@pytest.mark.parametrize("folder", ["processed", "rejected", ".reports-pending"])
def test_a_folder_the_other_user_puts_in_place_of_ours_is_refused(probe_procs, shared_home, victim, signing_key,
                                                                  folder):
    from ingest.sources.runs import dsse
    from ingest.sources.runs.inbox import Inbox
    from orchestration.sensors import process_inbox
    from tests.helpers.runs import signed_ten

    probe = probe_procs
    inbox = shared_home / "inbox"
    inbox.mkdir()
    os.chown(inbox, probe.uid, probe.gid)
    with Inbox.open(shared_home) as box:  # the warehouse's folders, made as the sensor makes them
        for name in ("processed", "rejected", ".reports-pending"):
            box.folder(name)
    # the other user puts ours aside and a folder of its own in its place, with links in it
    # where the sensor would write
    planted = probe.run(TRY + r'''
inbox, folder, victim = sys.argv[1:4]
os.rename(os.path.join(inbox, folder), os.path.join(inbox, "ours-aside"))
os.mkdir(os.path.join(inbox, folder))
os.chmod(os.path.join(inbox, folder), 0o777)
for name in ("junk.json.reason", "run.json.report", "run.json.json"):
    os.symlink(victim, os.path.join(inbox, folder, name))
print(json.dumps(sorted(os.listdir(os.path.join(inbox, folder)))))
''', str(inbox), folder, str(victim))
    (inbox / "junk.json").write_text("not a run file")
    _doc, body = signed_ten(dsse.load_private_key(signing_key))
    (inbox / "run.json").write_bytes(body)
    log: list[str] = []
    process_inbox(None, log=log.append)
    theirs = inbox / folder
    assert owned_by(theirs, probe.uid) and sorted(os.listdir(theirs)) == planted
    assert all(owned_by(theirs / name, probe.uid) for name in planted)
    assert victim.read_text() == "keep me"
    assert any(f"{theirs} belongs to uid {probe.uid}" in line for line in log), log
    if folder == ".reports-pending":  # the run moved, its report written; only its pending marker refused
        assert sorted(os.listdir(inbox / "processed")) == ["run.json", "run.json.report"]
    else:  # nothing moved: the files wait in the inbox for a person to see
        assert (inbox / "junk.json").exists() and (inbox / "run.json").exists()


def test_the_other_user_cannot_write_list_or_change_the_inbox_folders_the_warehouse_made(
        probe_procs, shared_home, signing_key):
    from ingest.sources.runs import dsse
    from orchestration.sensors import process_inbox
    from tests.helpers.runs import signed_ten

    probe = probe_procs
    inbox = shared_home / "inbox"
    inbox.mkdir()
    os.chown(inbox, probe.uid, probe.gid)
    # the other user drops a file that is rejected and one that lands
    _doc, body = signed_ten(dsse.load_private_key(signing_key))
    dropped = probe.run(TRY + r'''
inbox, body = sys.argv[1], sys.argv[2]
with open(os.path.join(inbox, "junk.json"), "w") as fh:
    fh.write("not a run file")
with open(os.path.join(inbox, "run.json"), "w") as fh:
    fh.write(body)
print(json.dumps({"ok": True}))
''', str(inbox), body.decode())
    assert dropped == {"ok": True}
    log: list[str] = []
    process_inbox(None, log=log.append)
    folders = ("processed", "rejected", ".reports-pending")
    for name in folders:
        st = os.lstat(inbox / name)
        assert (st.st_uid, st.st_mode & 0o777) == (0, 0o750), name
    assert (inbox / "rejected" / "junk.json.reason").exists() and (inbox / "processed" / "run.json.report").exists()

    tried = probe.run(TRY + r'''
inbox = sys.argv[1]
out = {}
for name in ("processed", "rejected", ".reports-pending"):
    folder = os.path.join(inbox, name)
    out[name + ": create"] = attempt(lambda: create(os.path.join(folder, "planted.reason")))
    out[name + ": list"] = attempt(lambda: os.listdir(folder))
    out[name + ": chmod"] = attempt(lambda: os.chmod(folder, 0o777))
    out[name + ": chown"] = attempt(lambda: os.chown(folder, os.getuid(), os.getgid()))
out["rejected: take the file back"] = attempt(
    lambda: os.rename(os.path.join(inbox, "rejected", "junk.json"), os.path.join(inbox, "junk.json")))
out["rejected: remove the reason"] = attempt(lambda: os.unlink(os.path.join(inbox, "rejected", "junk.json.reason")))
out["processed: rewrite the report"] = attempt(
    lambda: open(os.path.join(inbox, "processed", "run.json.report"), "a").close())
out["processed: move it out of the inbox"] = attempt(
    lambda: os.rename(os.path.join(inbox, "processed"), os.path.join(inbox, "..", "processed")))
print(json.dumps(out))
''', str(inbox))
    allowed = {what: result for what, result in tried.items() if result not in ("EACCES", "EPERM")}
    assert allowed == {}, tried
    assert sorted(os.listdir(inbox / "rejected")) == ["junk.json", "junk.json.reason"]


# ---------------------------------------------------------------------------------------------
# items 2 and 7: what the warehouse creates stays its own
# ---------------------------------------------------------------------------------------------

def test_the_home_lock_cannot_be_opened_held_or_replaced_by_the_other_user(probe_procs, shared_home):
    from ingest.locks import home_lock

    probe = probe_procs
    old = os.umask(0o022)
    try:
        with home_lock("refresh", home=shared_home, wait_s=0):
            lock = shared_home / ".refresh.lock"
            st = os.lstat(lock)
            assert st.st_uid == 0 and st.st_mode & 0o007 == 0  # nothing for other users
            tried = probe.run(TRY + r'''
home = sys.argv[1]
lock = os.path.join(home, ".refresh.lock")
print(json.dumps({
    "open to hold it": attempt(lambda: os.close(os.open(lock, os.O_RDONLY))),
    "open to write it": attempt(lambda: os.close(os.open(lock, os.O_WRONLY))),
    "replace it": attempt(lambda: os.rename(lock, lock + ".gone")),
    "remove it": attempt(lambda: os.unlink(lock)),
    "plant the publish lock": attempt(lambda: create(os.path.join(home, ".publish.lock"))),
    "plant a link for the build lock": attempt(lambda: os.symlink("/etc/passwd", os.path.join(home, ".build.lock"))),
}))
''', str(shared_home))
    finally:
        os.umask(old)
    allowed = {what: result for what, result in tried.items() if result not in ("EACCES", "EPERM")}
    assert allowed == {}, tried
    with home_lock("refresh", home=shared_home, wait_s=0):  # nobody else holds it
        pass
    assert sorted(p.name for p in shared_home.iterdir()) == [".refresh.lock"]


@pytest.mark.parametrize("mode", [0o1777, 0o777], ids=["sticky", "not-sticky"])
def test_a_link_the_other_user_plants_at_a_lock_path_in_a_shared_folder_is_not_followed(
        probe_procs, shared, outside, victim, mode):
    import errno

    from ingest.locks import home_lock, lock_held

    probe = probe_procs
    shared.chmod(mode)
    fresh = outside / "made-by-root"
    planted = probe.run(TRY + r'''
shared, victim, fresh = sys.argv[1:4]
print(json.dumps({
    "refresh": attempt(lambda: os.symlink(victim, os.path.join(shared, ".refresh.lock"))),
    "publish": attempt(lambda: os.symlink(fresh, os.path.join(shared, ".publish.lock"))),
}))
''', str(shared), str(victim), str(fresh))
    assert planted == {"refresh": "ok", "publish": "ok"}
    for name in ("refresh", "publish"):
        # refused by the open (O_NOFOLLOW: ELOOP; in a sticky folder the kernel may answer EACCES first)
        with pytest.raises(OSError) as refused:
            with home_lock(name, home=shared, wait_s=0):
                pass
        assert refused.value.errno in (errno.ELOOP, errno.EACCES), refused.value
        with pytest.raises(OSError) as refused:
            lock_held(name, home=shared)
        assert refused.value.errno == errno.ELOOP, refused.value
    assert victim.read_text() == "keep me" and os.lstat(victim).st_uid == 0
    assert not fresh.exists() and not fresh.is_symlink()
    for name in (".refresh.lock", ".publish.lock"):
        assert (shared / name).is_symlink() and owned_by(shared / name, probe.uid)


def test_runs_sign_and_keys_generate_in_a_shared_folder_never_use_what_the_other_user_planted(
        probe_procs, shared_home, shared, outside, victim, signing_key, capsys):
    from cli.main import main
    from ingest.files import tmp_name
    from ingest.sources.runs import dsse
    from ingest.sources.runs.payload import payload_bytes
    from tests.helpers.hostile import good_payload

    probe = probe_procs
    body = payload_bytes(good_payload())
    for name in ("linked", "theirs", "dangling", "occupied"):
        (shared / f"{name}.json").write_bytes(body)
    fresh = outside / "made-by-root"
    pid = os.getpid()  # `runs sign` runs in this process: the temporary's usual name is predictable
    planted = probe.run(TRY + r'''
shared, victim, fresh, pid = sys.argv[1:5]
def own_file(path):
    with open(path, "w") as fh:
        fh.write("theirs")
    os.chmod(path, 0o666)
print(json.dumps({
    # the usual temporary names of two signatures: a link to root's file, and a file of theirs
    "tmp link": attempt(lambda: os.symlink(victim, os.path.join(shared, ".linked.dsse.json.tmp" + pid))),
    "tmp file": attempt(lambda: own_file(os.path.join(shared, ".theirs.dsse.json.tmp" + pid))),
    # the output itself: a link to a file that does not exist yet, and a link to root's file
    "out dangling": attempt(lambda: os.symlink(fresh, os.path.join(shared, "dangling.dsse.json"))),
    "out link": attempt(lambda: os.symlink(victim, os.path.join(shared, "occupied.dsse.json"))),
    # where a new private key would go
    "key dangling": attempt(lambda: os.symlink(fresh, os.path.join(shared, "new.pem"))),
}))
''', str(shared), str(victim), str(fresh), str(pid))
    assert set(planted.values()) == {"ok"}, planted
    assert tmp_name(shared / "linked.dsse.json").is_symlink()

    old = os.umask(0o022)
    try:
        for name in ("linked", "theirs", "dangling"):
            assert main(["runs", "sign", str(shared / f"{name}.json"), "--key", str(signing_key)]) == 0, \
                capsys.readouterr().err
        assert main(["runs", "sign", str(shared / "occupied.json"), "--key", str(signing_key)]) == 2
        assert "already exists" in capsys.readouterr().err
        assert main(["runs", "sign", str(shared / "occupied.json"), "--key", str(signing_key), "--force"]) == 0
        assert main(["keys", "generate", "--out", str(shared / "new.pem")]) == 2
        assert "cannot write" in capsys.readouterr().err
    finally:
        os.umask(old)

    assert victim.read_text() == "keep me" and not fresh.exists() and not fresh.is_symlink()
    assert (shared / f".theirs.dsse.json.tmp{pid}").read_text() == "theirs"
    raw = dsse.public_key_of(dsse.load_private_key(signing_key))
    trusted = [dsse.TrustedKey(dsse.keyid_for(raw), raw, "root")]
    signed = [shared / f"{name}.dsse.json" for name in ("linked", "theirs", "dangling", "occupied")]
    for out in signed:
        assert not out.is_symlink() and owned_by(out, 0) and os.lstat(out).st_mode & 0o022 == 0, out
        verified = dsse.verify_envelope(out.read_bytes(), trusted)
        assert (verified.trust, verified.payload_bytes) == ("signed", body), out
    # the planted names are left as they were, and no temporary of ours is left beside them
    assert sorted(p.name for p in shared.iterdir() if p.name.startswith(".")) == sorted(
        [f".linked.dsse.json.tmp{pid}", f".theirs.dsse.json.tmp{pid}"])
    assert (shared / "new.pem").is_symlink()

    # and what root made there stays root's: the other user cannot change, replace or remove it
    tried = probe.run(TRY + r'''
paths = sys.argv[1:]
out = {}
for path in paths:
    out[path + ": write"] = attempt(lambda: open(path, "a").close())
    out[path + ": replace"] = attempt(lambda: os.rename(path, path + ".gone"))
    out[path + ": remove"] = attempt(lambda: os.unlink(path))
print(json.dumps(out))
''', *map(str, signed))
    allowed = {what: result for what, result in tried.items() if result not in ("EACCES", "EPERM")}
    assert allowed == {}, tried


KEY_SWAPPER = r'''
import os, sys
shared, victim, stop = sys.argv[1:4]
key = os.path.join(shared, "new.pem")
n = swaps = 0
while not os.path.exists(stop):
    n += 1
    try:
        os.rename(key, os.path.join(shared, "aside-%d" % n))  # root's new key, put aside
        os.symlink(victim, key)  # and a link to root's other file in its place
    except OSError:
        continue
    swaps += 1
print(swaps, flush=True)
'''


def test_a_new_key_in_a_folder_the_other_user_may_write_never_changes_another_file(probe_procs, base, victim):
    """`keys generate --out` in a folder others may write: the key's mode is set on its descriptor,
    so a link swapped in under its name right after it is made never gets a chmod."""
    from ingest.sources.runs import dsse

    probe = probe_procs
    shared = base / "group-drop"
    shared.mkdir()
    shared.chmod(0o777)  # writable by all, not sticky: others may rename what is in it
    key = shared / "new.pem"
    stop = base / "stop"
    swapper = probe.start(KEY_SWAPPER, str(shared), str(victim), str(stop))
    made = 0
    try:
        for _ in range(1500):
            with contextlib.suppress(FileNotFoundError):
                key.unlink()  # the other user's link, or our last key
            try:
                dsse.write_private_key(key)
                made += 1
            except FileExistsError:
                pass  # the other user's link was there first: refused (O_EXCL)
            assert stat.S_IMODE(os.stat(victim).st_mode) == 0o644 and victim.read_text() == "keep me"
    finally:
        stop.touch()
        out, err = swapper.communicate(timeout=60)
    assert swapper.returncode == 0, err
    assert made > 100 and int(out) > 100, (made, out)  # keys were made and swapped away under us
    keys = [p for p in shared.iterdir() if not p.is_symlink()]
    assert keys and all(owned_by(p, 0) and stat.S_IMODE(p.stat().st_mode) == 0o600 for p in keys)
