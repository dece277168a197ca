-- One row per (raw hardware name, reported memory) seen in the speed samples, with the
-- catalogue id it resolves to. Order of evidence:
--   1. an exact alias or catalogue name, ignoring case and repeated spaces ("light" key);
--   2. equal normalised keys (macros/normalise_names.sql) on catalogue names and aliases; when
--      several variants share a key (RTX 4060 Ti 8/16GB, A100 40/80GB) the one whose memory is
--      nearest the reported memory wins (23.59 GB reads as the 24 GB card), GPUs/SoCs before
--      their CPU-only entries;
--   3. otherwise a provisional id 'unresolved:<normalised name>' (listed in audit.unresolved_names).
-- Apple chips come in GPU-core bins that run at different speeds (M4 Pro 16- or 20-core GPU):
-- a name that states its cores ("Apple M4 Pro 10P+4E+20GPU") resolved to a catalogue chip without
-- a bin of its own gets the variant id '<chip id>-<cores>c' (apple-m4-pro-20c); dim_hardware
-- gives it the chip's specs. Memory configurations are told apart in marts.dim_machine.
with observed as (
    select raw_hardware_name, hardware_memory_gb, count(distinct source || '|' || source_run_id) as n_runs
    from {{ ref('int_speed_samples_unioned') }}
    group by all
),

keyed as (
    select
        raw_hardware_name,
        hardware_memory_gb,
        n_runs,
        {{ light_name_key('raw_hardware_name') }} as light_key,
        {{ normalise_hardware_name('raw_hardware_name') }} as normalised_key
    from observed
),

catalogue as (
    select hardware_id, name, vendor, kind, memory_gb from {{ ref('hardware_catalogue') }}
),

candidate_names as (
    select hardware_id, name as candidate_name from catalogue
    union all
    select hardware_id, alias as candidate_name from {{ ref('hardware_aliases') }}
),

candidates as (
    select
        n.hardware_id,
        {{ light_name_key('n.candidate_name') }} as light_key,
        {{ normalise_hardware_name('n.candidate_name') }} as normalised_key,
        c.kind,
        c.memory_gb
    from candidate_names as n
    inner join catalogue as c using (hardware_id)
),

light_matches as (
    select k.raw_hardware_name, k.hardware_memory_gb, min(c.hardware_id) as hardware_id
    from keyed as k
    inner join candidates as c on k.light_key = c.light_key
    group by all
),

normalised_matches as (
    select raw_hardware_name, hardware_memory_gb, hardware_id
    from (
        select
            k.raw_hardware_name,
            k.hardware_memory_gb,
            c.hardware_id,
            row_number() over (
                partition by k.raw_hardware_name, k.hardware_memory_gb
                order by
                    coalesce(abs(c.memory_gb - k.hardware_memory_gb), 0),
                    (c.kind = 'cpu'),
                    c.hardware_id
            ) as preference
        from keyed as k
        inner join (select distinct * from candidates) as c on k.normalised_key = c.normalised_key
    ) as ranked
    where preference = 1
),

resolved as (
    select
        k.raw_hardware_name,
        k.hardware_memory_gb,
        k.normalised_key,
        k.n_runs,
        coalesce(l.hardware_id, n.hardware_id) as catalogue_hardware_id,
        case
            when l.hardware_id is not null then 'exact'
            when n.hardware_id is not null then 'normalised'
            else 'unresolved'
        end as match_method
    from keyed as k
    left join light_matches as l
        on k.raw_hardware_name is not distinct from l.raw_hardware_name
        and k.hardware_memory_gb is not distinct from l.hardware_memory_gb
    left join normalised_matches as n
        on k.raw_hardware_name is not distinct from n.raw_hardware_name
        and k.hardware_memory_gb is not distinct from n.hardware_memory_gb
),

binned as (
    select
        resolved.*,
        cast(nullif(regexp_extract(resolved.raw_hardware_name, '\+\s*([0-9]+)\s*GPU\b', 1), '') as integer)
            as gpu_cores,
        catalogue.vendor = 'Apple' and catalogue.kind = 'soc'
        and not {{ regexp_matches("resolved.catalogue_hardware_id", "-[0-9]+c$") }} as is_unbinned_apple_chip
    from resolved
    left join catalogue on catalogue.hardware_id = resolved.catalogue_hardware_id
)

select
    raw_hardware_name,
    hardware_memory_gb,
    normalised_key,
    case
        when catalogue_hardware_id is null then {{ provisional_id('normalised_key', 'raw_hardware_name') }}
        when is_unbinned_apple_chip and gpu_cores is not null then catalogue_hardware_id || '-' || gpu_cores || 'c'
        else catalogue_hardware_id
    end as hardware_id,
    catalogue_hardware_id as base_hardware_id,
    gpu_cores,
    catalogue_hardware_id is not null as is_catalogued,
    match_method,
    n_runs
from binned
