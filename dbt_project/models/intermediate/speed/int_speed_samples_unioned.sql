-- A view on DuckDB (the project's intermediate rule): its readers take distinct names or read it
-- once, so writing ~1M rows again cost more than scanning the two source tables. A table on Spark.

-- Every speed source in the one contract (docs/architecture.md "Speed facts contract").
-- Add a source here when its int_<source>__speed_samples model exists.
{%- set speed_sources = ['int_localscore__speed_samples', 'int_runs__speed_samples'] %}
{%- set columns = [
    'source', 'source_run_id', 'sample_index', 'raw_hardware_name', 'hardware_memory_gb',
    'raw_model_name', 'raw_quant', 'model_file_name', 'engine', 'engine_version', 'test_name',
    'n_prompt', 'n_gen', 'gen_tps', 'prompt_tps', 'ttft_ms', 'turn_time_ms',
    'is_turn_time_derived', 'power_w', 'energy_j', 'power_method', 'peak_memory_bytes',
    'country', 'measured_at', 'received_at', 'trust', 'is_countable', 'is_duplicate',
    'model_repo', 'model_file_size_bytes', 'model_sha256', 'gpu_count', 'cpu_name', 'ram_gb', 'os',
    'keyid', 'contributor', 'protocol_sampling', 'protocol_repetitions',
    'config_id', 'is_cpu_fallback', 'is_partial_offload'] %}
{%- set types = {
    'source': 'string', 'source_run_id': 'string', 'sample_index': 'integer',
    'raw_hardware_name': 'string', 'hardware_memory_gb': 'double', 'raw_model_name': 'string',
    'raw_quant': 'string', 'model_file_name': 'string', 'engine': 'string',
    'engine_version': 'string', 'test_name': 'string', 'n_prompt': 'bigint', 'n_gen': 'bigint',
    'gen_tps': 'double', 'prompt_tps': 'double', 'ttft_ms': 'double', 'turn_time_ms': 'double',
    'is_turn_time_derived': 'boolean', 'power_w': 'double', 'energy_j': 'double',
    'power_method': 'string', 'peak_memory_bytes': 'bigint', 'country': 'string',
    'measured_at': 'timestamp', 'received_at': 'timestamp', 'trust': 'string', 'is_countable': 'boolean', 'is_duplicate': 'boolean',
    'model_repo': 'string', 'model_file_size_bytes': 'bigint', 'model_sha256': 'string',
    'gpu_count': 'integer', 'cpu_name': 'string', 'ram_gb': 'double', 'os': 'string',
    'keyid': 'string', 'contributor': 'string', 'protocol_sampling': 'string',
    'protocol_repetitions': 'integer', 'config_id': 'string', 'is_cpu_fallback': 'boolean',
    'is_partial_offload': 'boolean'} %}

{% for model_name in speed_sources %}
    select
    {%- for column in columns %}
            cast({{ column }} as {{ types[column] }}) as {{ column }}{{ "," if not loop.last }}
    {%- endfor %}
    from {{ ref(model_name) }}
    {% if not loop.last %}union all{% endif %}
{% endfor %}
