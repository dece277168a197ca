-- Reference page "memory per quantization" (model-page-llama-3.2-1b.txt): per build, at the
-- default context, file size, estimated need and the smallest catalogue card that holds it; and
-- the measured peak wherever runs report one, whatever context it was measured at (the context
-- nearest the default among those with the most peaks), with the estimate's error against it
-- at that same context. Sizes in bytes; estimated_gb is 1e9 bytes.
with memory as (
    select * from {{ ref('fct_memory_requirements') }}
),

peaks as (
    {% call keep_first('build_id', 'n_measured_peaks desc, abs(measured_peak_context_tokens - '
        ~ var('default_context_tokens') ~ '), measured_peak_context_tokens asc') -%}
        select
            build_id,
            context_tokens as measured_peak_context_tokens,
            measured_peak_bytes,
            n_measured_peaks,
            estimated_bytes as estimated_at_peak_context_bytes,
            estimate_error_pct
        from memory
        where n_measured_peaks > 0
    {%- endcall %}
)

select
    memory.build_id,
    memory.model_id,
    model.name as model_name,
    memory.quant,
    build.bits_per_weight,
    memory.file_name,
    memory.packager,
    case when memory.weights_basis = 'file' then memory.weights_bytes end as file_size_bytes,
    memory.weights_bytes,
    memory.weights_basis,
    memory.context_tokens,
    memory.kv_cache_bytes,
    memory.overhead_bytes,
    memory.estimated_bytes,
    memory.estimated_gb,
    memory.is_kv_upper_bound,
    memory.smallest_card_hardware_id,
    memory.smallest_card_name,
    memory.smallest_card_memory_bytes,
    -- the class a reader shops in (site.hardware.machine_class of a card): "8 GB cards"
    cast(cast(round(memory.smallest_card_memory_bytes / 1073741824.0) as bigint) as string) || ' GB cards'
        as smallest_machine_class,
    peaks.measured_peak_bytes,
    peaks.measured_peak_context_tokens,
    peaks.estimated_at_peak_context_bytes,
    peaks.estimate_error_pct,
    cast(coalesce(peaks.n_measured_peaks, 0) as integer) as n_measured_peaks
from memory
left join peaks on peaks.build_id = memory.build_id
left join {{ ref('dim_model') }} as model on model.model_id = memory.model_id
left join {{ ref('dim_model_build') }} as build on build.build_id = memory.build_id
where memory.is_default_context
