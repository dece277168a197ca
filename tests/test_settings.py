"""Bad settings and the same usage mistakes across commands: one named line, exit 2, no work done."""
import pytest

from tests.helpers.pipeline import run_benchwh


def error_line(proc) -> str:
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


BAD_SETTINGS = [("BENCHWH_MAX_RPS", v, "positive number") for v in ("abc", "0", "-1", "nan", "inf")] + [
    ("BENCHWH_DUCKDB_MEMORY_LIMIT", v, "1.5GB") for v in ("abc", "1000000000", "0GB", "-1GB", "150%", "1.5 G B")] + [
    ("BENCHWH_DBT_THREADS", v, "whole number") for v in ("0", "two", "-1", "1.5")]


@pytest.mark.parametrize("env,value,expected", BAD_SETTINGS)
def test_a_bad_setting_is_refused_before_any_work(tmp_path, env, value, expected):
    home = tmp_path / "warehouse"
    proc = run_benchwh(home, "refresh", "--source", "grid", **{env: value})
    assert proc.returncode == 2
    line = error_line(proc)
    assert env in line and expected in line
    assert not home.exists(), "work started before the settings were checked"


@pytest.mark.parametrize("command", [["status"], ["refresh", "--offline"], ["sources", "list"]])
def test_a_home_that_is_a_file_is_named(tmp_path, command):
    home = tmp_path / "warehouse"
    home.write_text("not a folder")
    proc = run_benchwh(home, *command)
    assert proc.returncode == 2
    assert "BENCHWH_HOME" in error_line(proc) and "is a file" in error_line(proc)


@pytest.mark.parametrize("value", ["1GB", "1.5GB", "800MiB", "2 GB", "50%", "512mb"])
def test_duckdb_takes_every_memory_limit_the_setting_accepts(monkeypatch, value):
    import duckdb

    from ingest import config

    monkeypatch.setenv("BENCHWH_DUCKDB_MEMORY_LIMIT", value)
    con = duckdb.connect(config=config.duckdb_config())
    try:
        assert con.execute("select current_setting('memory_limit')").fetchone()[0]
    finally:
        con.close()


def test_a_source_url_that_is_not_http_is_named(tmp_path):
    proc = run_benchwh(tmp_path / "warehouse", "status", BENCHWH_GRID_URL="ftp://example.org/grid.csv")
    assert proc.returncode == 2 and "BENCHWH_GRID_URL" in error_line(proc)


def test_missing_files_are_the_same_mistake_for_runs_add_and_runs_sign(tmp_path):
    home = tmp_path / "warehouse"
    add = run_benchwh(home, "runs", "add", str(tmp_path / "missing.json"))
    sign = run_benchwh(home, "runs", "sign", str(tmp_path / "missing.json"), "--key", str(tmp_path / "k.pem"))
    assert add.returncode == sign.returncode == 2
    assert "missing.json" in error_line(add) and "missing.json" in error_line(sign)


def test_runs_sign_without_a_key_says_how_to_get_one(tmp_path):
    payload = tmp_path / "payload.json"
    payload.write_text("{}")
    proc = run_benchwh(tmp_path / "warehouse", "runs", "sign", str(payload))
    assert proc.returncode == 2
    line = error_line(proc)
    assert "--key" in line and "benchwh keys generate" in line


def test_a_file_that_is_not_a_key_is_described_not_named_by_class(tmp_path):
    payload, key = tmp_path / "payload.json", tmp_path / "k.pem"
    payload.write_text("{}")
    key.write_text("junk\n")
    proc = run_benchwh(tmp_path / "warehouse", "runs", "sign", str(payload), "--key", str(key))
    assert proc.returncode == 2
    line = error_line(proc)
    assert "not an Ed25519 private key" in line and "(Error)" not in line and "PEM" in line


def test_keys_generate_does_not_make_folders_for_an_explicit_out(tmp_path):
    out = tmp_path / "nonexistent" / "dir" / "k.pem"
    proc = run_benchwh(tmp_path / "warehouse", "keys", "generate", "--out", str(out))
    assert proc.returncode == 2 and "does not exist" in error_line(proc)
    assert not (tmp_path / "nonexistent").exists()
