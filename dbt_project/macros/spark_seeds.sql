{#-
  Seeds on Spark: dbt-spark's session cursor pastes bindings into the SQL without escaping
  quotes ("the check's name" breaks the insert), so the values are written as literals here.
  Strings: a quote becomes chr(39); backslashes stay literal (escapedStringLiterals, profiles.yml).
-#}
{% macro spark__load_csv_rows(model, agate_table) %}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
        {%- set sql -%}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                ({%- for col_name in agate_table.column_names -%}
                    {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
                    {%- set value = row[loop.index0] -%}
                    {%- if value is none -%}cast(null as {{ type }})
                    {%- elif value is sameas true or value is sameas false -%}cast({{ value | lower }} as {{ type }})
                    {%- elif value is number -%}cast({{ value }} as {{ type }})
                    {%- else -%}cast('{{ (value | string) | replace("'", "' || chr(39) || '") }}' as {{ type }})
                    {%- endif -%}
                    {%- if not loop.last %}, {% endif -%}
                {%- endfor -%})
                {%- if not loop.last %},{% endif %}
            {% endfor %}
        {%- endset -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- if loop.index0 == 0 -%}{%- do statements.append(sql) -%}{%- endif -%}
    {%- endfor -%}
    {{ return(statements[0]) }}
{% endmacro %}
