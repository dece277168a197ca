-- One row per (raw quant, model file name) seen in the speed samples, with the canonical quant:
-- the reported quant matched on canonical names, llama.cpp file-type names (`Q4_K - Medium`) and
-- aliases; else the quant named in the GGUF file name; else the reported quant upper-cased
-- (not catalogued, listed in audit.unresolved_names); else 'UNKNOWN'.
with observed as (
    select raw_quant, model_file_name, count(distinct source || '|' || source_run_id) as n_runs
    from {{ ref('int_speed_samples_unioned') }}
    group by all
),

candidate_names as (
    select quant, quant as candidate_name from {{ ref('quantizations') }}
    union all
    select quant, llama_cpp_ftype_name from {{ ref('quantizations') }}
    where llama_cpp_ftype_name is not null
    union all
    select quant, alias from {{ ref('quantization_aliases') }}
),

candidates as (
    select distinct {{ normalise_quant_name('candidate_name') }} as quant_key, quant
    from candidate_names
),

keyed as (
    select
        raw_quant,
        model_file_name,
        n_runs,
        {{ normalise_quant_name('raw_quant') }} as reported_key,
        {{ quant_from_file_name('model_file_name') }} as file_key
    from observed
)

select
    k.raw_quant,
    k.model_file_name,
    coalesce(r.quant, f.quant, k.reported_key, k.file_key, 'UNKNOWN') as quant,
    coalesce(r.quant, f.quant) is not null as is_catalogued,
    k.n_runs
from keyed as k
left join candidates as r on k.reported_key = r.quant_key
left join candidates as f on k.file_key = f.quant_key
