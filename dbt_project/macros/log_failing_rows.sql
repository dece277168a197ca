{#-
  dbt's message for a failed data test says how many rows it returned, not which. At the end of a
  build this logs the first rows of each failed test into dbt's log as one line,
  `failing rows of <test unique_id>: col=value, ...; ...` (for not_null_columns: the column and
  its null-row count), which benchwh's failure line quotes (orchestration/dbt_assets.py
  first_dbt_failure). It runs before drop_build_only_schemas, so a staging model's test can still
  be read, and costs nothing when every test passed.
-#}
{% macro log_failing_rows(limit=5) %}
    {%- if execute -%}
        {%- for result in results if result.status == 'fail' and result.node.resource_type == 'test' -%}
            {%- set query = 'select * from (' ~ result.node.compiled_code ~ ') as _failing limit ' ~ limit -%}
            {%- set table = run_query(query) -%}
            {%- set rows = [] -%}
            {%- for row in table.rows -%}
                {%- set cells = [] -%}
                {%- for name in table.column_names -%}{%- do cells.append(name ~ '=' ~ row[name]) -%}{%- endfor -%}
                {%- do rows.append(cells | join(', ')) -%}
            {%- endfor -%}
            {%- do log('failing rows of ' ~ result.node.unique_id ~ ': ' ~ (rows | join('; ')), info=True) -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
