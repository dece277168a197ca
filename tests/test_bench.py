"""`benchwh bench` end to end against a real streaming HTTP server on 127.0.0.1."""
from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from ingest.sources.runs import dsse
from ingest.sources.runs.payload import validate_payload
from cli.bench import main
from tests.helpers.loopback import LoopbackServer, Reply
from tests.helpers.openai_server import OpenAIServer, OpenAIServerConfig

FIRST_TOKEN_S = 0.3  # above LATE_S: a rate over the whole turn (first token included) is off the mark
PER_TOKEN_S = 0.005
GEN_TOKENS = 100
LATE_S = 0.1  # how late the client may read a token the server wrote (a busy machine)


@pytest.fixture
def key(tmp_path) -> Path:
    path = tmp_path / "keys" / "bench.key"
    dsse.write_private_key(path)
    return path


def trusted(key: Path) -> list[dsse.TrustedKey]:
    raw = dsse.public_key_of(dsse.load_private_key(key))
    return [dsse.TrustedKey(dsse.keyid_for(raw), raw, "tester")]


def bench(url: str, key: Path, out: Path, *extra: str) -> int:
    return main(["--endpoint", url, "--model", "test-model", "--key", str(key), "--out", str(out),
                 "--warmup", "1", "--repetitions", "3", "--max-tokens", str(GEN_TOKENS), *extra])


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ---- the measurement -----------------------------------------------------------------------
def test_measures_what_the_server_was_told_and_writes_a_signed_valid_file(tmp_path, key, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvidia-smi: no power section
    out = tmp_path / "run.json"
    cfg = OpenAIServerConfig(first_token_s=FIRST_TOKEN_S, per_token_s=PER_TOKEN_S)
    with OpenAIServer(cfg) as srv:
        assert bench(srv.url, key, out, "--country", "de") == 0
    printed = capsys.readouterr().out
    assert printed.count("rep ") == 3 and "warm-up 1/1" in printed and "median" in printed

    verified = dsse.verify_envelope(out.read_bytes(), trusted(key))
    assert verified.trust == "signed"
    payload = validate_payload(verified.payload_bytes)
    assert payload["submission_id"] in printed
    samples = payload["samples"]
    assert len(samples) == 3 == payload["protocol"]["repetitions"]
    assert all(s["gen_tokens"] == GEN_TOKENS for s in samples)

    # Each measured answer against what the server did (its clock is the client's): a sample is
    # never shorter than the server's own timeline; it may be longer by the time the client took to
    # send and to get the CPU back to read, allowed up to LATE_S in two of the three repetitions (on
    # a busy machine the client was once ~10 ms late in two of three, against a 10% tolerance).
    chats = [r for r in srv.server.requests if r.path == "/v1/chat/completions"][1:]  # after the warm-up
    assert len(chats) == len(samples) == 3
    on_time = 0
    for s, r in zip(samples, chats):
        first_s, last_s = r.chunks_sent_at[1] - r.at, r.chunks_sent_at[GEN_TOKENS] - r.at  # [0]: the role
        assert first_s >= FIRST_TOKEN_S and last_s >= FIRST_TOKEN_S + (GEN_TOKENS - 1) * PER_TOKEN_S
        assert s["ttft_ms"] >= first_s * 1000 - 0.001 and s["turn_time_ms"] >= last_s * 1000 - 0.001
        span_s = last_s - first_s
        on_time += (s["ttft_ms"] <= (first_s + LATE_S) * 1000 and s["turn_time_ms"] <= (last_s + LATE_S) * 1000
                    and (GEN_TOKENS - 1) / (span_s + LATE_S) <= s["gen_tps"] <= (GEN_TOKENS - 1) / (span_s - LATE_S))
    assert on_time >= 2, samples

    # the server's own token counts (usage), the request's protocol, the machine and engine
    prompt_words = len(srv.chat_requests[0]["messages"][0]["content"].split())
    assert all(s["prompt_tokens"] == prompt_words for s in samples)
    req = srv.chat_requests[-1]
    assert req["stream"] is True and req["stream_options"] == {"include_usage": True}
    assert (req["temperature"], req["seed"], req["max_tokens"]) == (0.0, 42, GEN_TOKENS)
    assert len(srv.chat_requests) == 4  # 1 warm-up + 3 measured
    # custom counts are not gen-1k: the name says what was run, so summaries keep them apart
    assert payload["protocol"]["name"] == f"gen-1k/tg{GEN_TOKENS}/r3"
    assert payload["machine"]["gpu"] == "CPU only" and payload["machine"]["country"] == "DE"
    assert payload["engine"] == {"name": "llama.cpp", "version": "b4567-1a2b3c4", "backend": None}
    assert payload["model"]["name"] == "test-model"
    assert (payload["model"]["file"], payload["model"]["quant"]) == ("Test-Model-7B-Q4_K_M.gguf", "Q4_K_M")
    assert payload["power"] is None and payload["context_recall"] == []


def test_without_usage_tokens_are_counted_from_the_stream(tmp_path, key):
    from ingest.measure.runner import BenchOptions, run_bench
    cfg = OpenAIServerConfig(first_token_s=0.01, per_token_s=0.001, usage=False, n_tokens=25)
    with OpenAIServer(cfg) as srv:
        result = run_bench(BenchOptions(endpoint=srv.url + "/v1", model="test-model", key=key,
                                        out=tmp_path / "r.json", warmup=0, repetitions=2, gen_tokens=40),
                           log=lambda line: None)
    assert [s.token_counts for s in result.samples] == ["stream", "stream"]
    assert [s.gen_tokens for s in result.samples] == [25, 25]
    # the signed file marks the counts as counted from the stream
    assert [s["token_counts"] for s in result.payload["samples"]] == ["stream", "stream"]


def test_tokens_timed_by_read_span_not_over_a_near_zero_interval():
    from ingest.measure.client import StreamResult
    from ingest.measure.measure import MIN_DECODE_S, to_sample

    def result(arrivals, usage=None):
        return StreamResult(text="", sent_at=0.0, first_token_at=arrivals[0], last_token_at=arrivals[-1],
                            stream_tokens=len(arrivals), token_arrivals=list(arrivals), usage=usage)

    # one token a millisecond after a 10 ms first token: 24 timed tokens over 24 ms
    steady = to_sample(result([0.010 + i * 0.001 for i in range(25)]), prompt_words=10)
    assert (steady.gen_tps, steady.timed_over) == (pytest.approx(1000.0), "span")
    # two chunks in the first read: only the 23 later ones are timed
    first_read_pair = to_sample(result([0.010, 0.010] + [0.010 + i * 0.001 for i in range(1, 24)]), 10)
    assert first_read_pair.gen_tps == pytest.approx(1000.0)
    # usage counts of 50 over 25 chunks: two tokens a chunk
    batched = to_sample(result([0.010 + i * 0.001 for i in range(25)],
                               usage={"prompt_tokens": 10, "completion_tokens": 50}), 10)
    assert batched.gen_tps == pytest.approx(2000.0)
    # the whole answer in one burst 40 us long (a busy server catching up): over the turn instead
    burst = to_sample(result([0.040 + i * 0.000_001_6 for i in range(25)]), 10)
    assert burst.timed_over == "turn"
    assert burst.gen_tps == pytest.approx(25 / 0.0400384)
    assert to_sample(result([0.040] * 25), 10).gen_tps == pytest.approx(25 / 0.040)
    # a span just under the floor is a burst too
    assert to_sample(result([0.040, 0.040 + MIN_DECODE_S * 0.99]), 10).timed_over == "turn"


def test_an_answer_sent_in_one_burst_gives_a_valid_run_file(tmp_path, key):
    from ingest.measure.measure import MIN_DECODE_S
    from ingest.measure.runner import BenchOptions, run_bench
    # every token written at once, 20 ms after the request: nothing between tokens to time
    for usage in (False, True):
        cfg = OpenAIServerConfig(first_token_s=0.02, per_token_s=0.0, usage=usage, n_tokens=60)
        with OpenAIServer(cfg) as srv:
            result = run_bench(BenchOptions(endpoint=srv.url, model="test-model", key=key,
                                            out=tmp_path / f"r{usage}.json", warmup=0, repetitions=3,
                                            gen_tokens=60), log=lambda line: None)
        validate_payload(dsse.verify_envelope((tmp_path / f"r{usage}.json").read_bytes(),
                                              trusted(key)).payload_bytes)
        for s in result.samples:
            assert s.gen_tokens == 60
            assert s.gen_tps <= 60 / MIN_DECODE_S  # never a count over a near-zero interval


def test_optional_fields_a_strict_server_refuses_are_dropped(tmp_path, key):
    from ingest.measure.runner import BenchOptions, run_bench
    cfg = OpenAIServerConfig(first_token_s=0.01, per_token_s=0.001, refuse_fields=("stream_options", "ignore_eos"))
    with OpenAIServer(cfg) as srv:
        result = run_bench(BenchOptions(endpoint=srv.url, model="test-model", key=key, out=tmp_path / "r.json",
                                        warmup=1, repetitions=2, gen_tokens=20), log=lambda line: None)
        later = srv.chat_requests[-3:]  # the warm-up as finally sent, and both measured
    assert all("stream_options" not in r and "ignore_eos" not in r for r in later)
    assert [s.token_counts for s in result.samples] == ["stream", "stream"]
    assert [s.gen_tokens for s in result.samples] == [20, 20]


def test_default_out_is_named_by_submission_id(tmp_path, key, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = OpenAIServerConfig(first_token_s=0.01, per_token_s=0.001)
    with OpenAIServer(cfg) as srv:
        rc = main(["--endpoint", srv.url, "--model", "test-model", "--key", str(key),
                   "--warmup", "0", "--repetitions", "1", "--max-tokens", "10"])
    assert rc == 0
    [written] = list(tmp_path.glob("run-*.json"))
    payload = validate_payload(dsse.verify_envelope(written.read_bytes(), trusted(key)).payload_bytes)
    assert written.name == f"run-{payload['submission_id']}.json"


def test_power_is_sampled_where_nvidia_smi_exists(tmp_path, key, monkeypatch):
    # No GPU here: a stand-in nvidia-smi printing real-format answers for the two queries we make.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "nvidia-smi"
    tool.write_text("#!/bin/sh\ncase \"$*\" in\n"
                    "  *power.draw,memory.used*) printf '150.00, 20000\\n150.00, 10000\\n' ;;\n"
                    "  *name,memory.total*) printf 'NVIDIA GeForce RTX 4090, 24564\\nNVIDIA GeForce RTX 4090, 24564\\n' ;;\n"
                    "  *) exit 1 ;;\nesac\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "run.json"
    with OpenAIServer(OpenAIServerConfig(first_token_s=0.05, per_token_s=0.005)) as srv:
        assert bench(srv.url, key, out) == 0
    payload = validate_payload(dsse.verify_envelope(out.read_bytes(), trusted(key)).payload_bytes)
    assert payload["power"]["method"] == "sensor"
    assert payload["power"]["avg_watts"] == 300.0  # two GPUs at 150 W
    measured_s = sum(s["turn_time_ms"] for s in payload["samples"]) / 1000
    assert payload["power"]["energy_j"] >= 300.0 * measured_s * 0.9
    assert payload["memory"] == {"peak_bytes": 30000 * 1024 * 1024}  # both GPUs' memory.used
    assert payload["machine"]["gpu"] == "NVIDIA GeForce RTX 4090"
    assert (payload["machine"]["gpu_count"], payload["machine"]["gpu_memory_gb"]) == (2, 23.99)


# ---- failures: one line, exit 1, no file ---------------------------------------------------
def test_stream_cut_once_is_retried(tmp_path, key, capsys):
    out = tmp_path / "run.json"
    cfg = OpenAIServerConfig(first_token_s=0.01, per_token_s=0.001, cut_after=5, cut_requests=(0,))
    with OpenAIServer(cfg) as srv:
        assert bench(srv.url, key, out) == 0
        assert len(srv.chat_requests) == 5  # the cut warm-up, its retry, 3 measured
    assert "retrying once" in capsys.readouterr().out
    assert out.exists()


def test_stream_cut_twice_fails_without_a_file(tmp_path, key, capsys):
    out = tmp_path / "run.json"
    cfg = OpenAIServerConfig(first_token_s=0.01, per_token_s=0.001, cut_after=5, cut_requests=(0, 1))
    with OpenAIServer(cfg) as srv:
        assert bench(srv.url, key, out) == 1
    assert "stream cut mid-answer" in one_error_line(capsys)
    assert not out.exists() and list(tmp_path.glob("*.json")) == []


def test_stream_cut_in_a_measured_repetition_fails_without_a_file(tmp_path, key, capsys):
    out = tmp_path / "run.json"
    # warm-up and the first measured repetition fine, the second cut, and cut again on its retry
    cfg = OpenAIServerConfig(first_token_s=0.01, per_token_s=0.001, cut_after=3, cut_requests=(2, 3))
    with OpenAIServer(cfg) as srv:
        assert bench(srv.url, key, out) == 1
        assert len(srv.chat_requests) == 4
    assert "stream cut mid-answer" in one_error_line(capsys)
    assert not out.exists()


def test_model_not_served(tmp_path, key, capsys):
    out = tmp_path / "run.json"
    with OpenAIServer(OpenAIServerConfig(model_404=True)) as srv:
        assert bench(srv.url, key, out) == 1
    line = one_error_line(capsys)
    assert "model not served" in line and "test-model" in line
    assert not out.exists()


def test_server_that_never_answers(tmp_path, key, capsys):
    out = tmp_path / "run.json"
    with OpenAIServer(OpenAIServerConfig(hang_s=3)) as srv:
        assert bench(srv.url, key, out, "--timeout", "0.3") == 1
    assert "did not answer" in one_error_line(capsys)
    assert not out.exists()


def test_unreachable_server(tmp_path, key, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "run.json"
    assert bench(f"http://127.0.0.1:{port}", key, out, "--connect-timeout", "1") == 1
    assert "server unreachable" in one_error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("reply", [
    Reply(404, b"<html>Not Found</html>", headers={"Content-Type": "text/html"}),
    Reply(200, b"<html>hello</html>", headers={"Content-Type": "text/html"}),
    Reply(200, b'{"choices": []}', headers={"Content-Type": "application/json"}),
    Reply(200, b"event: ping\n\nsomething else\n", headers={"Content-Type": "text/event-stream"}),
])
def test_not_openai_compatible(tmp_path, key, capsys, reply):
    out = tmp_path / "run.json"
    with LoopbackServer() as srv:
        srv.route("/v1/chat/completions", reply)
        assert bench(srv.url, key, out, "--connect-timeout", "1", "--timeout", "2") == 1
    assert "not OpenAI-compatible" in one_error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("args,expected", [
    (["--country", "Germany"], "--country"),
    (["--protocol", "gen-9k"], "unknown protocol"),
])
def test_user_mistakes_are_one_line(tmp_path, key, capsys, args, expected):
    assert bench("http://127.0.0.1:9", key, tmp_path / "r.json", *args) == 2
    assert expected in one_error_line(capsys)


def test_missing_key_is_one_line(tmp_path, capsys):
    assert bench("http://127.0.0.1:9", tmp_path / "nope.key", tmp_path / "r.json") == 2
    assert "--key" in one_error_line(capsys)


# ---- context recall ------------------------------------------------------------------------
RECALL_FAST = dict(first_token_s=0.005, per_token_s=0.001)


def test_recall_walk_records_recalled_up_to_16k_and_not_beyond(tmp_path, key, capsys):
    out = tmp_path / "run.json"
    cfg = OpenAIServerConfig(n_ctx=40_000, recall_up_to=16_384, **RECALL_FAST)
    with OpenAIServer(cfg) as srv:
        assert bench(srv.url, key, out, "--recall", "--repetitions", "1", "--max-tokens", "20") == 0
    payload = validate_payload(dsse.verify_envelope(out.read_bytes(), trusted(key)).payload_bytes)
    assert payload["context_recall"] == [
        {"context_tokens": 4096, "recalled": True},
        {"context_tokens": 8192, "recalled": True},
        {"context_tokens": 16384, "recalled": True},
        {"context_tokens": 32768, "recalled": False},
    ]
    # the walk ended because the model lost the needle at 32K, not because the server stopped it
    assert payload["context_recall_stopped"] == {"reason": "forgot", "at_tokens": 32768}
    printed = capsys.readouterr().out
    assert "64K: not tried, the server's context is 40000 tokens" in printed
    assert "largest recalled 16384" in printed


def test_recall_walk_stops_where_the_server_refuses_and_says_why(tmp_path, key, capsys):
    out = tmp_path / "run.json"
    # the server does not publish its context size; it refuses the 16K prompt
    cfg = OpenAIServerConfig(n_ctx=10_000, expose_props=False, **RECALL_FAST)
    with OpenAIServer(cfg) as srv:
        assert bench(srv.url, key, out, "--recall", "--repetitions", "1", "--max-tokens", "20") == 0
    payload = validate_payload(dsse.verify_envelope(out.read_bytes(), trusted(key)).payload_bytes)
    assert payload["context_recall"] == [{"context_tokens": 4096, "recalled": True},
                                         {"context_tokens": 8192, "recalled": True}]
    assert payload["context_recall_stopped"] == {"reason": "could_not_hold", "at_tokens": 16384}
    printed = capsys.readouterr().out
    assert "16K: the server could not hold it" in printed and "exceeds the available context size" in printed
    assert "stopped at 16384" in printed
