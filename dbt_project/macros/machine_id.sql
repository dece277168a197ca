{#- One machine: the same resolved hardware with the same reported configuration. The id of the
    machine a sample or run was measured on (int_speed_samples_resolved, marts.dim_machine): the
    columns of `relation` (gpu_count, hardware_memory_gb, os, cpu_name, ram_gb, country) and the
    resolved `hardware_id`. -#}
{% macro machine_id(hardware_id, relation) -%}
    'machine:' || left(md5(concat_ws(
        '|', {{ hardware_id }}, coalesce({{ relation }}.gpu_count, 1), {{ relation }}.hardware_memory_gb,
        lower(trim({{ relation }}.os)), lower(trim({{ relation }}.cpu_name)), {{ relation }}.ram_gb,
        upper({{ relation }}.country)
    )), 16)
{%- endmacro %}
