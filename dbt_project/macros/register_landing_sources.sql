{#-
  The landing Parquet files are the sources on both engines. DuckDB reads them through each
  source's meta.external_location (read_parquet). Spark gets, before the build, one view per
  source over parquet.`<BENCHWH_HOME>/landing/<source>/<entity>/*.parquet` (schemas merged:
  spark.sql.parquet.mergeSchema), so {{ source() }} renders as <source>.<entity> there.
  A source whose files may be absent (Spark skips the _schema.parquet placeholder, so it cannot
  infer from it) or that is not Parquet gives meta.spark_format / spark_path / spark_columns.
  A landing entity with no data file yet is declared with the columns of its placeholder, which
  the build's caller passes in BENCHWH_SPARK_EMPTY_SOURCES (publish/spark_build.py).
-#}
{% macro register_landing_sources() -%}
    {{ return(adapter.dispatch('register_landing_sources')()) }}
{%- endmacro %}

{% macro default__register_landing_sources() -%}
{%- endmacro %}

{% macro spark__register_landing_sources() -%}
    {%- if execute -%}
        {%- set home = env_var('BENCHWH_HOME', 'warehouse') -%}
        {%- set empty_sources = fromjson(env_var('BENCHWH_SPARK_EMPTY_SOURCES', '{}')) -%}
        {%- for node in graph.sources.values() if node.package_name == project_name -%}
            {%- set meta = {} -%}
            {%- do meta.update(node.source_meta or {}) -%}
            {%- do meta.update(node.meta or {}) -%}
            {%- set relation = node.schema ~ '.' ~ node.identifier -%}
            {%- do run_query('create schema if not exists ' ~ node.schema) -%}
            {#- a view or an external table from an earlier build: dropped by its kind -#}
            {%- set existing = adapter.get_relation(database=none, schema=node.schema, identifier=node.identifier) -%}
            {%- if existing is not none -%}{%- do adapter.drop_relation(existing) -%}{%- endif -%}
            {%- if meta.get('spark_columns') -%}
                {%- set path = home ~ '/' ~ meta['spark_path'] -%}
                {%- set options = meta.get('spark_options') -%}
                {%- do run_query(
                    'create table ' ~ relation ~ ' (' ~ meta['spark_columns'] ~ ') using '
                    ~ meta.get('spark_format', 'parquet') ~ " options (path '" ~ path ~ "'"
                    ~ (', ' ~ options if options else '') ~ ')') -%}
            {%- elif relation in empty_sources -%}
                {%- do run_query(
                    'create table ' ~ relation ~ ' (' ~ empty_sources[relation] ~ ") using parquet options (path '"
                    ~ home ~ '/landing/' ~ node.schema ~ '/' ~ node.identifier ~ "')") -%}
            {%- else -%}
                {%- do run_query(
                    'create view ' ~ relation ~ ' as select * from parquet.`'
                    ~ home ~ '/landing/' ~ node.schema ~ '/' ~ node.identifier ~ '/*.parquet`') -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}
