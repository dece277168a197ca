-- Memory a model build needs, per context size (DESIGN §7), with the smallest catalogue card
-- that holds it and, where runs report a peak, the estimate's error against the measured peak.
-- Estimates: marts/derived/memory/drv_memory_estimates_computed.sql (constants are dbt vars).
with estimates as (
    select * from {{ ref('drv_memory_estimates_computed') }}
),

builds as (
    select * from {{ ref('drv_memory_builds_shaped') }}
),

cards as (
    -- discrete cards of the catalogue (memory_bytes: a "24 GB" card holds 24 x 2^30 bytes)
    select hardware_id, name, memory_bytes, launch_price_usd
    from {{ ref('dim_hardware') }}
    where kind = 'gpu' and memory_bytes > 0 and is_catalogued
        and coalesce(base_hardware_id, hardware_id) = hardware_id  -- not the Apple GPU-core variants
),

-- per build and context the least memory; among equals the cheapest card with a price, then by id
smallest_cards as (
    {% call keep_first('build_id, context_tokens', 'memory_bytes, launch_price_usd nulls last, hardware_id',
        drop=['launch_price_usd']) -%}
        select
            estimates.build_id,
            estimates.context_tokens,
            cards.hardware_id,
            cards.name,
            cards.memory_bytes,
            cards.launch_price_usd
        from estimates
        inner join cards
            on cards.memory_bytes >= estimates.estimated_bytes
    {%- endcall %}
),

run_peaks as (
    -- a run's peak and the tokens it held (prompt + generated, its largest test)
    select
        build_id,
        source,
        source_run_id,
        max(peak_memory_bytes) as peak_bytes,
        max(coalesce(n_prompt, 0) + coalesce(n_gen, 0)) as tokens_held
    from {{ ref('fct_speed_measurements') }}
    where peak_memory_bytes > 0
        and is_countable
        and not is_duplicate
        and build_id is not null
    group by build_id, source, source_run_id
),

-- each run is compared with the smallest tabulated context that holds its tokens
run_contexts as (
    {% call keep_first('build_id, source, source_run_id', 'context_tokens') -%}
        select run_peaks.*, estimates.context_tokens
        from run_peaks
        inner join estimates
            on estimates.build_id = run_peaks.build_id
            and estimates.context_tokens >= run_peaks.tokens_held
    {%- endcall %}
),

peaks as (
    select
        build_id,
        context_tokens,
        median(peak_bytes) as measured_peak_bytes,
        count(*) as n_measured_peaks
    from run_contexts
    group by build_id, context_tokens
)

select
    estimates.build_id,
    estimates.context_tokens,
    builds.model_id,
    builds.quant,
    builds.file_name,
    builds.packager,
    estimates.weights_bytes,
    estimates.weights_basis,
    estimates.kv_cache_bytes,
    estimates.compute_buffer_bytes,
    estimates.runtime_overhead_bytes,
    estimates.overhead_bytes,
    estimates.estimated_bytes,
    estimates.estimated_bytes / 1e9 as estimated_gb,
    cast({{ var('memory_kv_bytes_per_element') }} as integer) as kv_bytes_per_element,
    estimates.is_default_context,
    estimates.is_beyond_trained_context,
    estimates.is_kv_upper_bound,
    estimates.trained_context_tokens,
    smallest_cards.hardware_id as smallest_card_hardware_id,
    smallest_cards.name as smallest_card_name,
    smallest_cards.memory_bytes as smallest_card_memory_bytes,
    cast(peaks.measured_peak_bytes as bigint) as measured_peak_bytes,
    cast(coalesce(peaks.n_measured_peaks, 0) as integer) as n_measured_peaks,
    cast(estimates.estimated_bytes - peaks.measured_peak_bytes as bigint) as estimate_error_bytes,
    100.0 * (estimates.estimated_bytes - peaks.measured_peak_bytes) / peaks.measured_peak_bytes
        as estimate_error_pct
from estimates
inner join builds on builds.build_id = estimates.build_id
left join smallest_cards
    on smallest_cards.build_id = estimates.build_id
    and smallest_cards.context_tokens = estimates.context_tokens
left join peaks
    on peaks.build_id = estimates.build_id
    and peaks.context_tokens = estimates.context_tokens
