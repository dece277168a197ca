{#-
  unique_key: no two rows of a model share the values of `columns` (a published table's primary
  key). One row per repeated key, with `n_rows`.

    data_tests:
      - unique_key:
          name: unique_key_<model>
          arguments:
            columns: [a, b]

  On DuckDB a table whose enforced primary key is exactly these columns refused every duplicate
  while it was written (macros/contract_primary_key.sql adds it after the insert, and adding it
  fails on a duplicate): the test then reads only the catalogue instead of grouping the table
  again (~0.35 s on the build's longest path for fct_speed_measurements' 1M rows at scale 1).
  Without that key, and on Spark (contracts not enforced there), it groups the rows
  (macros/unique_key.sql).
-#}
{% test unique_key(model, columns) %}
    {{ return(adapter.dispatch('test_unique_key')(model, columns)) }}
{% endtest %}
