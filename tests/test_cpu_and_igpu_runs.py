"""CPU-only run files and the real Strix Halo llama-bench outputs resolve to catalogue hardware (issue #15).

`benchwh bench` writes gpu "CPU only" on a machine without a GPU: the run is the CPU's (machine.cpu),
with the machine's RAM as its memory, or the explicit 'Unknown CPU' when no CPU is named. The real
llama-bench files of ../shared/data/local_runs (skipped when absent) name Strix Halo's GPU
"Radeon 8060S Graphics" or just "AMD Radeon Graphics". One real dbt build reads them all.
"""
from __future__ import annotations

import json

import pytest

from ingest.landing import Lander
from ingest.measure.machine import CPU_ONLY
from ingest.raw_store import RawStore
from ingest.source import load_sources
from ingest.sources.runs import dsse
from ingest.sources.runs.add import add_paths
from ingest.sources.runs.payload import payload_bytes
from tests.helpers.dbt_build import dbt_build, query
from tests.helpers.hostile import good_payload
from tests.helpers.keys import trust
from tests.helpers.paths import SHARED_DATA
from tests.helpers.resolution import SPEED_SELECT

STRIX_HALO = ["llamabench_json_reserialized__orion-zhen__8060s_rocm-7.12_gpt-oss.json",
              "llamabench_jsonl__lhl_strix-halo__llama-2-7b.Q4_0.raw_runs.head40.jsonl"]


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    work = tmp_path_factory.mktemp("cpu-runs")
    home = work / "warehouse"
    home.mkdir()
    dsse.write_private_key(work / "k.pem")
    key = dsse.load_private_key(work / "k.pem")
    trust(home, key, "alice")
    files = []
    # models the catalogue does not know yet still get a display family
    for name, cpu, model in (("named-cpu.json", "AMD Ryzen 9 7950X 16-Core Processor", "Granite 4.2 Micro"),
                             ("nameless-cpu.json", None, "Bonsai 8B")):
        machine = {"gpu": CPU_ONLY, "ram_gb": 64, "country": "DE"}  # as benchwh bench writes it
        if cpu:
            machine["cpu"] = cpu
        doc = good_payload(machine=machine, model={"name": model, "file": model.replace(" ", "-") + "-Q4_K_M.gguf",
                                                   "quant": "Q4_K_M"})
        path = work / name
        path.write_text(json.dumps(dsse.sign_payload(payload_bytes(doc), key)))
        files.append(path)
    # a fine-tune of a catalogued model, beside a run of the model itself, on one GPU
    for name, model in (("base.json", "Llama 3.2 3B Instruct"), ("abliterated.json", "Llama-3.2-3B-Instruct-abliterated")):
        doc = good_payload(model={"name": model, "file": model.replace(" ", "-") + "-Q4_K_M.gguf", "quant": "Q4_K_M"},
                           **{f"samples.{i}.gen_tps": (50.0 if name == "base.json" else 500.0) for i in range(3)})
        path = work / name
        path.write_text(json.dumps(dsse.sign_payload(payload_bytes(doc), key)))
        files.append(path)
    real = [SHARED_DATA / "local_runs" / n for n in STRIX_HALO if (SHARED_DATA / "local_runs" / n).is_file()]
    lander = Lander(home / "landing", RawStore(home / "raw"), log=lambda m: None)
    for source in load_sources().values():  # every source's empty typed files: the project reads them all
        lander.ensure_layout(source)
    results = add_paths(files + real, home)
    assert [r.status for r in results] == ["accepted"] * len(results), [r.line() for r in results]
    return len(real), dbt_build(home, work, SPEED_SELECT, "--indirect-selection", "cautious")


def hardware_of(db, source: str) -> dict[str, tuple]:
    """raw hardware name -> (hardware_id, catalogued, memory GiB reported) for one source."""
    return {r[0]: r[1:] for r in query(db, f"""
        select m.raw_hardware_name, any_value(m.hardware_id), bool_and(h.is_catalogued), any_value(m.hardware_memory_gib)
        from marts.fct_speed_measurements as m join marts.dim_hardware as h using (hardware_id)
        where m.source = '{source}' group by 1""")}


def test_cpu_only_run_files_resolve_to_the_cpu_with_the_machines_ram(build):
    _, db = build
    got = hardware_of(db, "runfile")
    assert got["AMD Ryzen 9 7950X 16-Core Processor"] == ("amd-ryzen-9-7950x", True, 64)
    assert got["Unknown CPU"] == ("cpu-unknown", True, 64)
    assert not any(hid.startswith("unresolved:") for hid, *_ in got.values())
    listed = query(db, "select raw_name from audit.unresolved_names where kind = 'hardware' and source = 'runfile'")
    assert listed == []


def test_real_strix_halo_outputs_resolve(build):
    n_real, db = build
    if n_real == 0:
        pytest.skip("../shared/data/local_runs is absent")
    got = hardware_of(db, "llama-bench")
    assert got["Radeon 8060S Graphics"][:2] == ("amd-ryzen-ai-max-plus-395", True)
    assert got["AMD Radeon Graphics"][:2] == ("amd-radeon-graphics", True)
    assert not any(hid.startswith("unresolved:") for hid, *_ in got.values())


def test_models_not_catalogued_yet_get_a_display_family(build):
    _, db = build
    got = dict(query(db, """
        select d.name, d.family_display from marts.dim_model as d
        where not d.is_catalogued and d.model_id in (select model_id from marts.fct_speed_measurements where source = 'runfile')"""))
    assert got == {"Granite 4.2 Micro": "Granite", "Bonsai 8B": "Bonsai", "Llama-3.2-3B-Instruct-abliterated": "Llama"}


def test_a_fine_tune_keeps_its_own_model_and_links_its_base(build):
    _, db = build
    [(model_id, base_model_id, catalogued)] = query(db, """
        select model_id, base_model_id, is_catalogued from marts.dim_model where name = 'Llama-3.2-3B-Instruct-abliterated'""")
    assert model_id != "llama-3.2-3b-instruct" and not catalogued
    assert base_model_id == "llama-3.2-3b-instruct"
    assert query(db, "select base_model_id from marts.dim_model where model_id = 'llama-3.2-3b-instruct'") == [(None,)]
    # the base model's rows hold the base run only (50 tok/s), never the fine-tune's (500 tok/s)
    base = query(db, """
        select n_runs, gen_tps_median from marts.fct_speed_summary where model_id = 'llama-3.2-3b-instruct'""")
    assert base == [(1, 50.0)]
    assert query(db, f"select count(*) from marts.fct_speed_summary where model_id = '{model_id}'")[0][0] == 1
