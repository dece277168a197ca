{#-
  not_null_columns: the not-null data test of a whole model, one per model instead of one
  not_null per column (issue 17: each test is a dbt node and a Dagster asset check, so 93 of them
  cost more than the scans). Every listed column is counted in ONE scan of the model.

    data_tests:
      - not_null_columns:
          name: not_null_columns_<model>
          arguments:
            columns: [a, b, {name: c, where: "c_applies"}]

  columns: names, or {name, where} for a column that must be set only where the condition holds
  (what a per-column test's `config: {where: ...}` did). It fails with one row per column that holds
  nulls: column_name and null_rows (so `--store-failures` and benchwh's failure line, through
  macros/log_failing_rows.sql, name the column). The explicit name keeps the Dagster asset check
  named after the model when its column list changes. Plain SQL for both engines (DuckDB and
  Spark): count(*) filter, a cross join with the column positions, no unpivot or stack. No
  {% set %} and no whitespace control below: sqlfluff's templater misreads both inside {% test %}.
-#}
{% test not_null_columns(model, columns) %}
    select
        column_name,
        null_rows
    from (
        select
            case _column.position
                {% for column in columns %}
                    when {{ loop.index }} then '{{ column.name if column is mapping else column }}'
                {% endfor %}
            end as column_name,
            case _column.position
                {% for _ in columns %}
                    when {{ loop.index }} then _counts.null_rows_{{ loop.index }}
                {% endfor %}
            end as null_rows
        from (
            select
                {% for column in columns %}
                    {% if column is mapping %}
                        count(*) filter (where {{ column.name }} is null and ({{ column.where }}))
                    {% else %}
                        count(*) filter (where {{ column }} is null)
                    {% endif %}
                    as null_rows_{{ loop.index }}{{ ',' if not loop.last }}
                {% endfor %}
            from {{ model }}
        ) as _counts
        cross join (
            {% for _ in columns %}
                select {{ loop.index }} as position{{ ' union all' if not loop.last }}
            {% endfor %}
        ) as _column
    ) as _nulls
    where null_rows > 0
{% endtest %}
