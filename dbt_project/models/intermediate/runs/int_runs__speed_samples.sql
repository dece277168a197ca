-- A table inside the build file (not published): the union and nine data
-- tests read it, so the join and dedup windows run once, not ten times.
{{ config(materialized="table") }}

-- Local runs in the shape of the speed facts contract (docs/architecture.md): one row per
-- repetition-level sample. Only the samples of the payload each run was kept from are used.
-- is_duplicate marks a sample whose measurement (test_key) is already present in another
-- run, e.g. a bare llama-bench output and a wrapper around the same output with power
-- readings, or a bare output and the same output vouched for (runs add --key): a countable
-- (signed) copy first, then the copy with power data, else the first landed, stays the original.

with runs as (
    select * from {{ ref('int_runs_deduplicated') }}
),

samples as (
    select * from {{ ref('stg_runs__samples') }}
),

-- an Ollama moving tag (deepseek-r1:8b) names the model it meant when the run was measured
-- (else when its file was received): seeds/ollama_tag_meanings.csv, ranges [valid_from, valid_to)
tag_meanings as (
    select
        lower(tag) as tag,
        model_id,
        cast(valid_from as timestamp) as valid_from,
        cast(valid_to as timestamp) as valid_to
    from {{ ref('ollama_tag_meanings') }}
),

tagged_runs as (
    select
        runs.*,
        tag_meanings.model_id as tag_model_id
    from runs
    left join tag_meanings
        on lower(trim(runs.raw_model_name)) = tag_meanings.tag
        and coalesce(runs.measured_at, runs.received_at) >= tag_meanings.valid_from
        and (
            tag_meanings.valid_to is null
            or coalesce(runs.measured_at, runs.received_at) < tag_meanings.valid_to
        )
),

joined as (
    select
        runs.source,
        runs.source_run_id,
        samples.test_index,
        samples.repetition_index,
        -- a CPU-only run ('CPU only' is what benchwh bench writes) is the CPU, with the machine's
        -- RAM as its memory; a run naming no CPU either lands under the explicit 'Unknown CPU'
        case
            when
                {{ is_cpu_only('runs.raw_hardware_name') }}
                then coalesce(nullif(trim(runs.raw_cpu_name), ''), 'Unknown CPU')
            else runs.raw_hardware_name
        end as raw_hardware_name,
        case
            when {{ is_cpu_only('runs.raw_hardware_name') }} then runs.ram_gb
            else runs.gpu_memory_gb
        end as hardware_memory_gb,
        -- a moving tag is replaced by the model id it meant then (resolved exactly as an id)
        coalesce(runs.tag_model_id, runs.raw_model_name) as raw_model_name,
        runs.raw_quant,
        runs.model_file_name,
        runs.engine,
        runs.engine_version,
        samples.test_name,
        samples.n_prompt,
        samples.n_gen,
        samples.gen_tps,
        samples.prompt_tps,
        samples.ttft_ms,
        samples.turn_time_ms as measured_turn_time_ms,
        coalesce(samples.power_w, runs.power_avg_w) as power_w,
        -- a run's energy is shared evenly by its samples when no test has its own
        coalesce(samples.energy_j, runs.energy_j / nullif(runs.n_samples, 0)) as energy_j,
        case when coalesce(samples.power_w, runs.power_avg_w, samples.energy_j, runs.energy_j) is not null
                then coalesce(runs.power_method, 'sensor')
        end as power_method,
        coalesce(samples.peak_memory_bytes, runs.peak_memory_bytes) as peak_memory_bytes,
        runs.country,
        -- the test's own time, else the run's; null when the file gave none (never the add time)
        coalesce(samples.measured_at, runs.measured_at) as measured_at,
        runs.received_at,
        runs.trust,
        runs.is_countable,
        samples.test_key,
        runs.model_repo,
        runs.model_file_size_bytes,
        runs.model_sha256,
        runs.gpu_count,
        runs.raw_cpu_name as cpu_name,
        runs.ram_gb,
        runs.os,
        runs.keyid,
        runs.contributor,
        runs.protocol_sampling,
        runs.protocol_repetitions,
        runs.config_id,
        runs.is_cpu_fallback,
        runs.is_partial_offload,
        runs.landed_from_fetched_at,
        runs.raw_sha256
    from tagged_runs as runs
    inner join samples
        on samples.source = runs.source
        and samples.source_run_id = runs.source_run_id
        and samples.raw_sha256 = runs.raw_sha256
),

flagged as (
    select
        joined.*,
        case
            when joined.test_key is null then false
            else row_number() over (
                    partition by joined.test_key, joined.repetition_index
                    order by
                        (not joined.is_countable), (joined.power_w is null), joined.landed_from_fetched_at,
                        joined.raw_sha256,
                        joined.source_run_id
                ) > 1
        end as is_duplicate,
        row_number() over (
            partition by joined.source, joined.source_run_id
            order by joined.test_index, joined.repetition_index
        ) - 1 as sample_index
    from joined
),

final as (
    select
        source,
        source_run_id,
        cast(sample_index as integer) as sample_index,
        raw_hardware_name,
        hardware_memory_gb,
        raw_model_name,
        raw_quant,
        model_file_name,
        engine,
        engine_version,
        test_name,
        n_prompt,
        n_gen,
        gen_tps,
        prompt_tps,
        ttft_ms,
        -- DESIGN §7: where a source lacks the turn time, derive ttft + 1000 * n_gen / gen_tps
        coalesce(
            measured_turn_time_ms,
            case when ttft_ms is not null and gen_tps > 0 and n_gen is not null
                    then ttft_ms + 1000.0 * n_gen / gen_tps
            end
        ) as turn_time_ms,
        (measured_turn_time_ms is null and ttft_ms is not null and gen_tps > 0 and n_gen is not null)
            as is_turn_time_derived,
        power_w,
        energy_j,
        power_method,
        peak_memory_bytes,
        country,
        measured_at,
        received_at,
        trust,
        is_countable,
        is_duplicate,
        model_repo,
        model_file_size_bytes,
        model_sha256,
        gpu_count,
        cpu_name,
        ram_gb,
        os,
        -- only a trusted signature names its contributor
        case when trust = 'signed' then keyid end as keyid,
        case when trust = 'signed' then contributor end as contributor,
        protocol_sampling,
        protocol_repetitions,
        config_id,
        is_cpu_fallback,
        is_partial_offload
    from flagged
)

select * from final
