"""`benchwh runs add`: lands what is new, refuses replays, counts duplicates once."""
from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import duckdb
import pytest

from cli.main import main
from ingest.sources.runs import dsse
from ingest.sources.runs.add import add_paths
from ingest.sources.runs.errors import RunIntakeError
from ingest.sources.runs.payload import payload_bytes
from tests.helpers.hostile import good_payload, lb_record
from tests.helpers.keys import trust


@pytest.fixture
def key(tmp_path):
    dsse.write_private_key(tmp_path / "k.pem")
    return dsse.load_private_key(tmp_path / "k.pem")


def write_signed(path, key, **over):
    doc = good_payload(**over)
    path.write_text(json.dumps(dsse.sign_payload(payload_bytes(doc), key)))
    return doc


def landed(home, entity):
    glob = home / "landing" / "runs" / entity / "[0-9a-f]*.parquet"
    return duckdb.sql(f"select * from read_parquet('{glob}', union_by_name=true)").fetchdf()


def test_signed_run_of_ten_repetitions_lands_ten_samples(home, key, tmp_path):
    trust(home, key)
    samples = [{"prompt_tokens": 512, "gen_tokens": 1024, "ttft_ms": 50.0 + i, "gen_tps": 100.0 + i,
                "prompt_tps": 5000.0, "turn_time_ms": 10300.0 + i} for i in range(10)]
    doc = write_signed(tmp_path / "run.json", key, samples=samples, **{"protocol.repetitions": 10},
                       power={"method": "sensor", "avg_watts": 350.0, "energy_j": 36000.0},
                       memory={"peak_bytes": 6_100_000_000},
                       context_recall=[{"context_tokens": 2048, "recalled": True}],
                       capabilities=[{"name": "json_mode", "passed": False}])
    res = add_paths([tmp_path / "run.json"], home)
    assert [r.status for r in res] == ["accepted"]
    runs, got = landed(home, "runs"), landed(home, "samples")
    assert len(runs) == 1 and len(got) == 10
    run = runs.iloc[0]
    assert (run["source"], run["source_run_id"], run["trust"], run["contributor"]) == \
        ("runfile", doc["submission_id"], "signed", "alice")
    assert (run["power_avg_watts"], run["power_energy_j"], run["memory_peak_bytes"]) == (350.0, 36000.0, 6_100_000_000)
    assert sorted(got["gen_tps"]) == [100.0 + i for i in range(10)]
    assert set(got["test_name"]) == {"gen-1k"}
    assert len(landed(home, "context_recall")) == 1 and len(landed(home, "capabilities")) == 1


def test_duplicate_replay_and_unknown_key(home, key, tmp_path, capsys):
    trust(home, key)
    doc = write_signed(tmp_path / "a.json", key)
    (tmp_path / "copy.json").write_bytes((tmp_path / "a.json").read_bytes())
    # same submission_id, other bytes (a changed sample, re-signed): a replay
    write_signed(tmp_path / "replay.json", key, submission_id=doc["submission_id"], **{"samples.0.gen_tps": 999.0})
    # a valid signature by a key nobody trusts: accepted as unverified
    dsse.write_private_key(tmp_path / "stranger.pem")
    write_signed(tmp_path / "stranger.json", dsse.load_private_key(tmp_path / "stranger.pem"))

    code = main(["runs", "add", "--no-publish", str(tmp_path / "a.json"), str(tmp_path / "copy.json"),
                 str(tmp_path / "replay.json"), str(tmp_path / "stranger.json")])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0] == "a.json: accepted as signed (key of alice), 1 run, 3 samples landed"
    assert out[1].startswith("copy.json: duplicate")
    assert out[2].startswith("replay.json: rejected: replay: submission_id " + doc["submission_id"])
    assert out[3].startswith("stranger.json: accepted as unverified (no trusted signature: kept in marts, "
                             "left out of summaries and site tables)")
    assert out[4] == "2 accepted (2 runs), 1 duplicate, 1 rejected"
    runs = landed(home, "runs").set_index("file_name")
    assert runs.loc["a.json", "trust"] == "signed" and runs.loc["stranger.json", "trust"] == "unverified"
    assert len(runs) == 2

    # the same file again: a duplicate, exit 0, no new rows
    assert main(["runs", "add", "--no-publish", str(tmp_path / "a.json")]) == 0
    assert len(landed(home, "runs")) == 2


def test_trust_is_decided_when_the_file_is_added(home, key, tmp_path):
    write_signed(tmp_path / "early.json", key)
    assert add_paths([tmp_path / "early.json"], home)[0].status == "accepted"
    trust(home, key)
    write_signed(tmp_path / "late.json", key)
    assert add_paths([tmp_path / "late.json"], home)[0].status == "accepted"
    runs = landed(home, "runs").set_index("file_name")
    assert runs.loc["early.json", "trust"] == "unverified" and runs.loc["late.json", "trust"] == "signed"


def test_folders_archives_and_sidecars(home, key, tmp_path):
    trust(home, key)
    folder = tmp_path / "drop"
    (folder / "sub").mkdir(parents=True)
    write_signed(folder / "sub" / "run.json", key)
    (folder / "bench.json").write_text(json.dumps([lb_record(gpu_info=None)]))
    (folder / "bench.json.meta.json").write_text(json.dumps({"gpu": "RTX 4090", "country": "NL"}))

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("x/lb.jsonl", json.dumps(lb_record(n_prompt=0, n_gen=128, avg_ts=150.0,
                                                                samples_ts=[149.0, 151.0], avg_ns=853000000))),
                           ("x/lb.jsonl.meta.json", json.dumps({"gpu": "RTX 3090"}))):
            info = tarfile.TarInfo(name)
            info.size = len(data.encode())
            tf.addfile(info, io.BytesIO(data.encode()))
    (tmp_path / "more.tar.gz").write_bytes(buf.getvalue())
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as zf:
        zf.writestr("ollama.json", json.dumps({"model": "qwen2.5:7b", "created_at": "2026-01-15T10:00:00Z",
                                               "done": True, "eval_count": 100, "eval_duration": 2_000_000_000,
                                               "total_duration": 2_500_000_000}))
    (tmp_path / "o.zip").write_bytes(zbuf.getvalue())

    res = add_paths([folder, tmp_path / "more.tar.gz", tmp_path / "o.zip"], home, {"country": "SE"})
    assert [(r.name, r.status) for r in res] == [
        ("drop/bench.json", "accepted"), ("drop/sub/run.json", "accepted"),
        ("more.tar.gz!x/lb.jsonl", "accepted"), ("o.zip!ollama.json", "rejected")]
    assert res[3].check == "missing_gpu"
    runs = landed(home, "runs").set_index("file_name")
    # sidecar facts, with the CLI flag winning over the sidecar
    assert (runs.loc["drop/bench.json", "gpu"], runs.loc["drop/bench.json", "country"]) == ("RTX 4090", "SE")
    assert runs.loc["more.tar.gz!x/lb.jsonl", "gpu"] == "RTX 3090"
    assert runs.loc["drop/sub/run.json", "country"] == "DE"  # a signed payload is not overridden


def test_known_runs_cache_catches_up_and_rebuilds(home, key, tmp_path):
    """The duplicate check reads a derived cache; deleting it or landing elsewhere changes nothing."""
    trust(home, key)
    write_signed(tmp_path / "a.json", key)
    assert add_paths([tmp_path / "a.json"], home)[0].status == "accepted"
    index = home / "landing" / "runs" / "_known.jsonl"
    add_paths([tmp_path / "a.json"], home)  # loads and catches up the cache
    assert index.exists() and len(index.read_text().splitlines()) == 1
    index.unlink()
    (tmp_path / "b.json").write_bytes((tmp_path / "a.json").read_bytes())
    assert add_paths([tmp_path / "b.json"], home)[0].status == "duplicate"
    assert len(index.read_text().splitlines()) == 1


def test_a_backlog_lands_in_a_batch_and_stays_known(home, key, tmp_path):
    trust(home, key)
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(20):
        write_signed(folder / f"r{i:02d}.json", key)
    res = add_paths([folder], home)
    assert [r.status for r in res] == ["accepted"] * 20
    batch_files = list((home / "landing" / "runs" / "runs").glob("*-*.parquet"))
    assert len(batch_files) == 1  # one validation and one file for the backlog
    assert len(landed(home, "runs")) == 20 and len(landed(home, "samples")) == 60
    (home / "landing" / "runs" / "_known.jsonl").unlink(missing_ok=True)
    (tmp_path / "again.json").write_bytes((folder / "r07.json").read_bytes())
    assert add_paths([tmp_path / "again.json"], home)[0].status == "duplicate"


def test_unusable_trusted_keys_stop_the_intake_with_one_line(home, key, tmp_path, capsys):
    write_signed(tmp_path / "run.json", key)
    (home / "trusted_keys.json").write_text('{"keys": [')
    with pytest.raises(RunIntakeError, match="trusted_keys.json") as caught:
        add_paths([tmp_path / "run.json"], home)
    assert main(["runs", "add", str(tmp_path / "run.json"), "--no-publish"]) == 1
    err = capsys.readouterr().err
    assert err == f"benchwh: {caught.value}\n" and "\n" not in str(caught.value)
    manifest = home / "raw" / "runs" / "manifest.jsonl"
    assert not manifest.exists() or not manifest.read_text().strip()  # nothing received


def test_add_flags_complete_a_tool_output_and_date_it(home, tmp_path, capsys):
    """A vLLM console block names neither GPU nor time: one rejection lists every missing field
    and the command that completes it; --measured-at dates the run, --engine names the server
    behind the client (here llama.cpp behind `vllm bench serve`)."""
    real = Path(__file__).parent / "data" / "real" / "vllm" / "lhl_vllm_bench_serve_console_against_llamacpp_q4km_c1.txt"
    path = tmp_path / "serve.txt"
    path.write_bytes(real.read_bytes())
    assert main(["runs", "add", "--no-publish", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("serve.txt: rejected: lacks the GPU name (or CPU only): add it with "
                      "`benchwh runs add FILE --gpu 'NAME'` or a FILE.meta.json sidecar")
    code = main(["runs", "add", "--no-publish", str(path), "--gpu", "Radeon 8060S Graphics", "--engine", "llama.cpp",
                 "--measured-at", "2025-09-20T08:00:00Z"])
    assert code == 0, capsys.readouterr().out
    runs = landed(home, "runs")
    row = runs[runs["file_name"] == "serve.txt"].iloc[0]
    assert (row["engine_name"], row["client_api"], row["concurrency"]) == ("llama.cpp", "vllm", 1)
    assert str(row["measured_at"]) == "2025-09-20 08:00:00"
    assert row["received_at"] > row["measured_at"]


def test_a_gpu_named_by_a_sibling_file_completes_an_output_that_names_none(home, tmp_path, capsys):
    """An Ollama response beside the llama-server log of the same machine takes the GPU the log
    names (`using device MTL0 (Apple M5 Max)`); two GPUs named in one folder complete nothing."""
    real = Path(__file__).parent / "data" / "real"
    folder = tmp_path / "m5"
    folder.mkdir()
    for name in ("llama-server/ours_server_log_metal.log", "ollama/ours_api_chat_cold_start.json"):
        (folder / Path(name).name).write_bytes((real / name).read_bytes())
    assert main(["runs", "add", "--no-publish", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "m5/ours_api_chat_cold_start.json: accepted" in out
    assert "(GPU 'Apple M5 Max' from m5/ours_server_log_metal.log beside it)" in out
    runs = landed(home, "runs").set_index("file_name")
    assert runs.loc["m5/ours_api_chat_cold_start.json", "gpu"] == "Apple M5 Max"

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for name in ("llama-server/ours_server_log_metal.log", "llama-bench/ours_wrapper_cmd_rows.json",
                 "ollama/attogram_generate_json_qwen2.5vl-7b.txt"):
        (mixed / Path(name).name).write_bytes((real / name).read_bytes())
    results = add_paths([mixed], home)
    assert {r.name: r.check for r in results}["mixed/attogram_generate_json_qwen2.5vl-7b.txt"] == "missing_gpu"
