"""The contract every registered source keeps, one parametrized test per source (ids = names).

- its recorded snapshot parses to frames of declared entities that pass the source's models,
  and every entity gets rows from the recording;
- parsing the same payload twice gives identical frames;
- a truncated, garbled or empty payload is rejected, fails, or quarantines rows with a clear
  reason, through the real Lander, instead of crashing (and never lands as if it were whole);
- parse makes no network call (socket connects raise while it runs: a guard, not a mock);
- dbt has a source and a `stg_<source>__*` staging model for each entity, and those staging
  models build with their tests over the landed recording.
"""
from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from ingest.landing import Lander, validate_frame
from ingest.raw_store import RawEntry, RawStore
from ingest.source import PayloadRejected, Source, SourceFailed, load_sources
from tests.helpers.dbt_build import dbt_env
from tests.helpers.landing import land_recording, lay_out

SOURCES = load_sources()
NAMES = sorted(SOURCES)
# payloads per source for the damaged-payload test (a few kinds of page are enough)
DAMAGE_SAMPLE = 4


@pytest.mark.parametrize("name", NAMES)
def test_metadata_is_filled_in(name):
    """License, attribution and URL go into the published manifest: no scaffold TODO may be left."""
    from ingest.source import metadata_todos

    assert metadata_todos(SOURCES[name]) == [], f"{name}: finish the TODO in its metadata"


def recorded(source: Source) -> list[tuple[dict, bytes]]:
    """(index record, body) of each distinct 200 response of the source's recording, in order."""
    folder = Path(source.recording_dir())
    index_path = folder / "index.json"
    assert index_path.is_file(), f"{source.name}: no recorded snapshot at {index_path}"
    seen, out = set(), []
    for rec in sorted(json.loads(index_path.read_text(encoding="utf-8")), key=lambda r: r["fetched_at"]):
        if int(rec.get("status", 200)) != 200 or rec["file"] in seen:
            continue
        seen.add(rec["file"])
        out.append((rec, (folder / rec["file"]).read_bytes()))
    assert out, f"{source.name}: the recording has no 200 response"
    return out


def entry_for(source: Source, rec: dict, body: bytes) -> RawEntry:
    from ingest.raw_store import sha256_hex

    ext = Path(rec["file"]).suffix.lstrip(".") or "bin"
    return RawEntry(source=source.name, url=rec["url"], fetched_at=rec["fetched_at"], status=200,
                    sha256=sha256_hex(body), bytes=len(body), ext=ext, path="-",
                    parser_version=source.parser_version)


def parse_all(source: Source) -> list[dict[str, pd.DataFrame]]:
    return [source.parse(body, entry_for(source, rec, body)) for rec, body in recorded(source)]


@pytest.fixture(params=NAMES)
def source(request) -> Source:
    return SOURCES[request.param]


def test_recording_parses_to_frames_that_pass_the_models(source):
    declared = {e.name for e in source.entities}
    assert declared, f"{source.name} declares no entities"
    valid_rows = dict.fromkeys(declared, 0)
    for frames in parse_all(source):
        assert set(frames) <= declared, f"{source.name} parsed undeclared entities {set(frames) - declared}"
        for name, frame in frames.items():
            if frame is None or frame.empty:
                continue
            valid, _ = validate_frame(frame.reset_index(drop=True), source.entity(name).model)
            valid_rows[name] += len(valid)
    empty = sorted(n for n, rows in valid_rows.items() if rows == 0)
    assert not empty, f"{source.name}: the recording lands no valid rows for {empty}"


def test_parsing_twice_gives_identical_frames(source):
    first, second = parse_all(source), parse_all(source)
    assert len(first) == len(second)
    for a, b in zip(first, second):
        assert set(a) == set(b)
        for name in a:
            pd.testing.assert_frame_equal(a[name], b[name], obj=f"{source.name}.{name}")


def damaged(body: bytes) -> dict[str, bytes]:
    noise = bytearray(body)
    for i in range(0, len(noise), 7):  # invalid UTF-8 and broken syntax throughout
        noise[i] = 0xFF
    return {"truncated": body[: len(body) // 2], "garbled": bytes(noise), "empty": b""}


def test_damaged_payloads_are_rejected_or_quarantined_not_crashing(source, tmp_path):
    store = RawStore(tmp_path / "raw")
    intact_rows = {}
    for rec, body in recorded(source)[:DAMAGE_SAMPLE]:
        entry, _ = store.put(source.name, body, url=rec["url"], fetched_at=rec["fetched_at"])
        intact = Lander(tmp_path / f"intact-{entry.sha256[:8]}", store, log=lambda _: None)
        intact_rows[entry.sha256] = sum(intact.land_payload(source, entry).landed.values())
        for kind, bad in damaged(body).items():
            # each damaged body against an empty landing, as the first payload the source ever saw
            lander = Lander(tmp_path / f"landing-{kind}-{entry.sha256[:8]}", store, log=lambda _: None)
            bad_entry, _ = store.put(source.name, bad, url=rec["url"], fetched_at=rec["fetched_at"])
            where = f"{source.name}: {kind} {rec['file']}"
            try:
                outcome = lander.land_payload(source, bad_entry)
            except SourceFailed as exc:
                assert str(exc).strip(), f"{where}: SourceFailed without a reason"
                continue
            except PayloadRejected as exc:  # pragma: no cover - the Lander catches these
                pytest.fail(f"{where}: PayloadRejected escaped the Lander: {exc}")
            assert outcome.status in ("landed", "rejected", "failed"), where
            if outcome.status != "landed":
                assert outcome.reason and "\n" not in outcome.reason.strip(), f"{where}: no one-line reason"
                continue
            for ent, parsed in outcome.parsed.items():
                assert outcome.landed[ent] + outcome.quarantined[ent] == parsed, where
            assert kind == "truncated", f"{where}: landed as if it were a good payload"
            # half a payload never passes for the whole one
            whole = intact_rows[entry.sha256]
            assert sum(outcome.quarantined.values()) > 0 or sum(outcome.landed.values()) < whole, \
                f"{where}: landed all {whole} rows of the intact payload"


def test_parse_makes_no_network_call(source, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"{source.name}.parse opened a network connection {args[1:]!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    frames = parse_all(source)
    assert any(f is not None and not f.empty for fs in frames for f in fs.values())


# ---- dbt -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def manifest() -> dict:
    from orchestration.manifest import prepare_manifest

    return json.loads(Path(prepare_manifest()).read_text())


def staging_models_of(manifest: dict, source: Source) -> dict[str, str]:
    """entity -> unique_id of the staging model that reads that entity's dbt source."""
    out = {}
    for ent in source.entities:
        uid = f"source.benchwh.{source.name}.{ent.name}"
        for node_id, node in manifest["nodes"].items():
            if (node["resource_type"] == "model" and node["name"].startswith(f"stg_{source.name}__")
                    and uid in node["depends_on"]["nodes"]):
                out[ent.name] = node_id
    return out


def test_dbt_source_and_staging_model_exist_for_each_entity(source, manifest):
    for ent in source.entities:
        uid = f"source.benchwh.{source.name}.{ent.name}"
        assert uid in manifest["sources"], f"no dbt source {source.name}.{ent.name} (models/staging/{source.name}/)"
        node = manifest["sources"][uid]
        # the project-wide pattern (dbt_project.yml) is filled in by dbt-duckdb at build time
        location = node.get("meta", {}).get("external_location", "").format_map(node)
        assert f"landing/{source.name}/{ent.name}/" in location, f"{uid} does not read its landing folder"
    missing = [e.name for e in source.entities if e.name not in staging_models_of(manifest, source)]
    assert not missing, f"no stg_{source.name}__* model selects from source {source.name} entities {missing}"


def selected_sources(session, test_name: str) -> list[Source]:
    """The sources whose `test_name` runs in this session (so `-k gpu_prices` builds only its staging)."""
    names = {item.callspec.params["source"] for item in session.items
             if getattr(item, "originalname", None) == test_name and hasattr(item, "callspec")
             and "source" in item.callspec.params}
    return [SOURCES[n] for n in sorted(names)]


@pytest.fixture(scope="module")
def staging_build(manifest, tmp_path_factory, request) -> dict[str, dict]:
    """Land the recordings into a fresh home, then one dbt build of those sources' staging models."""
    sources = selected_sources(request.session, "test_staging_models_build_over_the_landed_recording")
    root = tmp_path_factory.mktemp("contract-dbt")
    home = root / "warehouse"
    lay_out(home, SOURCES.values())
    for src in sources:
        if (Path(src.recording_dir()) / "index.json").is_file():
            try:
                land_recording(home, src)
            except SourceFailed:
                pass  # the recording tests above name the source; staging still builds on what landed
    models = sorted({m for src in sources for m in staging_models_of(manifest, src).values()})
    names = [manifest["nodes"][m]["name"] for m in models]
    target = root / "target"
    from orchestration.manifest import DBT_PROJECT_DIR
    from orchestration.resources import dbt_executable

    proc = subprocess.run(
        [dbt_executable(), "build", "--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR),
         "--target-path", str(target), "--log-path", str(root / "logs"), "--indirect-selection", "cautious",
         "--select", *names],
        env=dbt_env(home), capture_output=True, text=True, timeout=900, cwd=DBT_PROJECT_DIR,
    )
    results_path = target / "run_results.json"
    assert results_path.exists(), f"dbt build produced no results: {(proc.stdout + proc.stderr)[-2000:]}"
    results = json.loads(results_path.read_text())["results"]
    return {r["unique_id"]: r for r in results}


@pytest.mark.slow
def test_staging_models_build_over_the_landed_recording(source, manifest, staging_build):
    staging = staging_models_of(manifest, source)
    failures = []
    for ent, model_id in staging.items():
        result = staging_build.get(model_id)
        if result is None or result["status"] != "success":
            failures.append(f"{model_id}: {result and result['status']} {result and result.get('message')}")
        # the staging model's own data tests (those that depend on it alone)
        for test_id, r in staging_build.items():
            node = manifest["nodes"].get(test_id, {})
            if node.get("resource_type") == "test" and model_id in node["depends_on"]["nodes"] \
                    and r["status"] not in ("pass", "success", "warn"):
                failures.append(f"{test_id}: {r['status']} {r.get('message')}")
    assert not failures, "\n".join(failures)
