{#-
  unique_key: no two rows of a model share the values of `columns` (a compound key; dbt's own
  `unique` covers a single column). Returns one row per repeated key, with `n_rows`.

    data_tests:
      - unique_key:
          name: unique_key_<model>
          arguments:
            columns: [a, b]
-#}
{% test unique_key(model, columns) %}
    select
        {{ columns | join(', ') }},
        count(*) as n_rows
    from {{ model }}
    group by {{ columns | join(', ') }}
    having count(*) > 1
{% endtest %}
