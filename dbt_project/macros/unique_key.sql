{#- The rows of `model` whose `columns` repeat, one per key (tests/generic/unique_key.sql). With
    `key_is_held` there are none to look for: DuckDB plans `where false` as an empty result. -#}
{% macro default__test_unique_key(model, columns, key_is_held=false) -%}
    select
        {{ columns | join(', ') }},
        count(*) as n_rows
    from {{ model }}
    {%- if key_is_held %}
        where false
    {%- endif %}
    group by {{ columns | join(', ') }}
    having count(*) > 1
{%- endmacro %}

{#- DuckDB refused each duplicate while it wrote a table whose primary key is these columns -#}
{% macro duckdb__test_unique_key(model, columns) -%}
    {{ default__test_unique_key(model, columns, execute and primary_key_is(model, columns)) }}
{%- endmacro %}

{#- Does the DuckDB relation hold a primary key on exactly `columns` (in any order)? -#}
{% macro primary_key_is(relation, columns) -%}
    {%- set quoted = [] -%}
    {%- for column in columns -%}
        {%- do quoted.append("'" ~ (column | lower) ~ "'") -%}
    {%- endfor -%}
    {%- set found = run_query(
        "select list_sort(constraint_column_names) = list_sort([" ~ quoted | join(', ') ~ "])"
        ~ " from duckdb_constraints() where constraint_type = 'PRIMARY KEY'"
        ~ " and database_name = '" ~ relation.database ~ "' and schema_name = '" ~ relation.schema ~ "'"
        ~ " and table_name = '" ~ relation.identifier ~ "'") -%}
    {{ return(found.rows | length == 1 and found.rows[0][0]) }}
{%- endmacro %}
