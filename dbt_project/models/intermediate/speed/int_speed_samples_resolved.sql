-- A view on DuckDB like the rest of intermediate: fct_speed_measurements and a data test read it,
-- and running the name resolution joins again costs them less than a table of 1M wide rows costs
-- to write (~2 s at scale 1). A table on Spark, as the folder sets.

-- The unioned speed samples with catalogue (or provisional) ids for hardware, model and quant.
-- Null-safe joins (is not distinct from): a sample without a name still resolves (to a provisional id).
with samples as (
    select * from {{ ref('int_speed_samples_unioned') }}
),

hardware as (
    select raw_hardware_name, hardware_memory_gb, hardware_id
    from {{ ref('int_hardware_names_resolved') }}
),

models as (
    select raw_model_name, model_file_name, model_id
    from {{ ref('int_model_names_resolved') }}
),

quants as (
    select raw_quant, model_file_name, quant
    from {{ ref('int_quant_names_resolved') }}
),

builds as (
    select raw_model_name, model_file_name, raw_quant, model_repo, build_id
    from {{ ref('int_build_files_resolved') }}
)

select
    s.*,
    h.hardware_id,
    m.model_id,
    q.quant,
    b.build_id,
    {{ machine_id('h.hardware_id', 's') }} as machine_id
from samples as s
left join hardware as h
    on s.raw_hardware_name is not distinct from h.raw_hardware_name
    and s.hardware_memory_gb is not distinct from h.hardware_memory_gb
left join models as m
    on s.raw_model_name is not distinct from m.raw_model_name
    and s.model_file_name is not distinct from m.model_file_name
left join quants as q
    on s.raw_quant is not distinct from q.raw_quant
    and s.model_file_name is not distinct from q.model_file_name
left join builds as b
    on s.raw_model_name is not distinct from b.raw_model_name
    and s.model_file_name is not distinct from b.model_file_name
    and s.raw_quant is not distinct from b.raw_quant
    and s.model_repo is not distinct from b.model_repo
