{#-
  Seeds on Spark: dbt-spark's session cursor pastes bindings into the SQL without escaping
  quotes ("the check's name" breaks the insert), so the values are written as literals here.
  Strings: a quote becomes chr(39); backslashes stay literal (escapedStringLiterals, profiles.yml).
-#}
{% macro spark__load_csv_rows(model, agate_table) -%}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set types = [] -%}
    {%- for col_name in agate_table.column_names -%}
        {%- do types.append(column_override.get(col_name, adapter.convert_type(agate_table, loop.index0))) -%}
    {%- endfor -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
        {%- set rows = [] -%}
        {%- for row in chunk -%}
            {%- set values = [] -%}
            {%- for value in row -%}
                {%- set type = types[loop.index0] -%}
                {%- if value is none -%}
                    {%- do values.append('cast(null as ' ~ type ~ ')') -%}
                {%- elif value is sameas true or value is sameas false -%}
                    {%- do values.append('cast(' ~ (value | string | lower) ~ ' as ' ~ type ~ ')') -%}
                {%- else -%}
                    {%- set text = (value | string) | replace("'", "' || chr(39) || '") -%}
                    {%- do values.append("cast('" ~ text ~ "' as " ~ type ~ ")") -%}
                {%- endif -%}
            {%- endfor -%}
            {%- do rows.append('(' ~ (values | join(', ')) ~ ')') -%}
        {%- endfor -%}
        {%- set sql = 'insert into ' ~ this.render() ~ ' values\n' ~ (rows | join(',\n')) -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- if loop.index0 == 0 -%}{%- do statements.append(sql) -%}{%- endif -%}
    {%- endfor -%}
    {{ return(statements[0]) }}
{%- endmacro %}
