-- Reference page head (model-page-llama-3.2-3b.txt, lines 1-5): one row per model the warehouse
-- knows a build of (marts.dim_model_build: measured, or a GGUF file its Hub repositories list),
-- with the key facts and the headline. Signed and source runs only, duplicates left out.
-- Headline: the model's row of marts.fct_cost_per_mtok (hardware x build x engine, preferred
-- configuration) with a computable local cost first, then the most runs, then the faster median,
-- then hardware_id, build_id and engine; its machine is the one with the most runs of that row.
with models as (
    select * from {{ ref('dim_model') }}
),

builds as (
    select * from {{ ref('dim_model_build') }}
),

measurements as (
    select * from {{ ref('fct_speed_measurements') }}
    where is_countable and not is_duplicate and build_id is not null
),

speed_runs as (
    select * from {{ ref('fct_speed_runs') }}
    where not is_duplicate
),

recall as (
    select * from {{ ref('fct_context_recall') }}
    where is_countable and not is_duplicate and build_id is not null
),

costs as (
    select * from {{ ref('fct_cost_per_mtok') }}
),

machines as (
    select * from {{ ref('dim_machine') }}
),

hardware as (
    select * from {{ ref('dim_hardware') }}
),

measured_builds as (
    select distinct build_id from measurements
),

build_counts as (
    select
        builds.model_id,
        count(*) as n_listed_builds,
        count(measured_builds.build_id) as n_builds
    from builds
    left join measured_builds on measured_builds.build_id = builds.build_id
    group by builds.model_id
),

run_counts as (
    select
        model_id,
        count(*) filter (where trust = 'signed') as n_signed_runs,
        count(*) filter (where is_countable) as n_runs
    from speed_runs
    group by model_id
),

derivatives as (
    select base_model_id as model_id, count(*) as n_derivatives
    from models
    where base_model_id is not null and base_model_id != model_id
    group by base_model_id
),

-- the best median of a build over its (machine, engine) pairs, as site.model_builds.best_gen_tps
pair_speeds as (
    select
        model_id,
        build_id,
        machine_id,
        hardware_id,
        coalesce(engine, 'unknown') as engine,
        median(gen_tps) as gen_tps_median
    from measurements
    where gen_tps > 0
    group by model_id, build_id, machine_id, hardware_id, coalesce(engine, 'unknown')
),

peaks as (
    select
        model_id,
        max(gen_tps_median) as peak_gen_tps,
        {{ first_by('build_id', ['gen_tps_median desc', 'build_id']) }} as peak_by_build_id
    from pair_speeds
    group by model_id
),

build_proofs as (
    select model_id, build_id, max(largest_context_recalled) as context_proved_tokens
    from recall
    where largest_context_recalled > 0
    group by model_id, build_id
),

proofs as (
    select
        model_id,
        max(context_proved_tokens) as proved_context_tokens,
        {{ first_by('build_id', ['context_proved_tokens desc', 'build_id']) }} as proved_by_build_id
    from build_proofs
    group by model_id
),

headline_rows as (
    {% call keep_first('model_id',
        'has_local_cost desc, n_runs desc, gen_tps_median desc, hardware_id, build_id, engine') -%}
        select
            model_id,
            hardware_id,
            build_id,
            engine,
            n_runs,
            gen_tps_median,
            local_usd_per_mtok,
            api_usd_per_mtok,
            openrouter_id,
            local_usd_per_mtok is not null as has_local_cost
        from costs
        where model_id is not null
    {%- endcall %}
),

-- the machine of the headline row: the one with the most runs of its hardware, build and engine
headline_machine_runs as (
    select
        measurements.hardware_id,
        measurements.build_id,
        coalesce(measurements.engine, 'unknown') as engine,
        measurements.machine_id,
        count(distinct measurements.source || '|' || measurements.source_run_id) as n_runs
    from measurements
    where measurements.is_preferred_config and measurements.gen_tps > 0 and measurements.machine_id is not null
    group by
        measurements.hardware_id, measurements.build_id, coalesce(measurements.engine, 'unknown'),
        measurements.machine_id
),

headline_machines as (
    {% call keep_first('hardware_id, build_id, engine', 'n_runs desc, machine_id') -%}
        select hardware_id, build_id, engine, machine_id, n_runs from headline_machine_runs
    {%- endcall %}
),

headlines as (
    select
        headline_rows.model_id,
        headline_rows.hardware_id,
        headline_rows.build_id,
        headline_rows.engine,
        headline_rows.n_runs,
        headline_rows.gen_tps_median,
        headline_rows.local_usd_per_mtok,
        headline_rows.api_usd_per_mtok,
        headline_rows.openrouter_id,
        headline_machines.machine_id,
        coalesce(nullif(machines.headline_label, ''), hardware.name) as machine_label,
        case
            when headline_rows.local_usd_per_mtok > 0 and headline_rows.api_usd_per_mtok > 0
                then headline_rows.local_usd_per_mtok < headline_rows.api_usd_per_mtok
        end as is_local_cheaper
    from headline_rows
    left join headline_machines
        on headline_machines.hardware_id = headline_rows.hardware_id
        and headline_machines.build_id = headline_rows.build_id
        and headline_machines.engine = headline_rows.engine
    left join machines on machines.machine_id = headline_machines.machine_id
    left join hardware on hardware.hardware_id = headline_rows.hardware_id
),

-- the page's first sentence: "At Q4_K_M, it needs about 1.6 GB": the Q4_K_M build that needs
-- least at the default context, else the build that needs least
lead_builds as (
    {% call keep_first('model_id', "is_q4_k_m desc, estimated_bytes, build_id") -%}
        select
            model_id, build_id, quant, estimated_bytes, context_tokens,
            case when quant = 'Q4_K_M' then 1 else 0 end as is_q4_k_m
        from {{ ref('fct_memory_requirements') }}
        where is_default_context and estimated_bytes > 0
    {%- endcall %}
),

known as (
    select model_id from builds
    union
    select model_id from measurements
    union
    select model_id from recall
)

select
    models.model_id,
    models.name as display_name,
    models.family,
    models.family_display,
    models.params_b,
    models.license as licence,
    models.hf_gguf_repos as gguf_repos,
    cast(models.trained_context_tokens as bigint) as trained_context_tokens,
    cast(proofs.proved_context_tokens as bigint) as proved_context_tokens,
    proofs.proved_by_build_id,
    peaks.peak_gen_tps,
    peaks.peak_by_build_id,
    models.base_model_id,
    cast(coalesce(build_counts.n_builds, 0) as bigint) as n_builds,
    cast(coalesce(run_counts.n_signed_runs, 0) as bigint) as n_signed_runs,
    cast(coalesce(derivatives.n_derivatives, 0) as bigint) as n_derivatives,
    headlines.machine_label as headline_machine_label,
    headlines.build_id as headline_build_id,
    headlines.gen_tps_median as headline_gen_tps,
    headlines.local_usd_per_mtok,
    headlines.api_usd_per_mtok,
    case when headlines.api_usd_per_mtok is not null then 'OpenRouter' end as api_name,
    case
        when headlines.is_local_cheaper then 'local'
        when not headlines.is_local_cheaper then 'api'
    end as cheaper_side,
    case
        when headlines.is_local_cheaper then headlines.api_usd_per_mtok / headlines.local_usd_per_mtok
        when not headlines.is_local_cheaper then headlines.local_usd_per_mtok / headlines.api_usd_per_mtok
    end as cheaper_ratio,
    headlines.hardware_id as headline_hardware_id,
    headlines.machine_id as headline_machine_id,
    headlines.engine as headline_engine,
    cast(headlines.n_runs as bigint) as headline_n_runs,
    headlines.openrouter_id as api_openrouter_id,
    cast(coalesce(build_counts.n_listed_builds, 0) as bigint) as n_listed_builds,
    cast(coalesce(run_counts.n_runs, 0) as bigint) as n_runs,
    coalesce(models.is_catalogued, false) as is_catalogued,
    -- builds as the head of the page names them: "by bartowski Q4_K_M"
    coalesce(proved_build.quantizer || ' ', '') || proved_build.quant as proved_by_build_label,
    coalesce(peak_build.quantizer || ' ', '') || peak_build.quant as peak_by_build_label,
    coalesce(headline_build.quantizer || ' ', '') || headline_build.quant as headline_build_label,
    lead_builds.quant as lead_quant,
    cast(lead_builds.estimated_bytes as bigint) as lead_needed_bytes,
    cast(lead_builds.context_tokens as bigint) as lead_context_tokens
from models
inner join known on known.model_id = models.model_id
left join build_counts on build_counts.model_id = models.model_id
left join run_counts on run_counts.model_id = models.model_id
left join derivatives on derivatives.model_id = models.model_id
left join peaks on peaks.model_id = models.model_id
left join proofs on proofs.model_id = models.model_id
left join headlines on headlines.model_id = models.model_id
left join builds as proved_build on proved_build.build_id = proofs.proved_by_build_id
left join builds as peak_build on peak_build.build_id = peaks.peak_by_build_id
left join builds as headline_build on headline_build.build_id = headlines.build_id
left join lead_builds on lead_builds.model_id = models.model_id
