{% macro drop_build_only_schemas() %}
    {% if execute and flags.WHICH in ('build', 'run') and not var('keep_build_schemas', false) %}
        {{ return(adapter.dispatch('drop_build_only_schemas')(['staging', 'intermediate', 'derived', 'seeds'])) }}
    {% endif %}
{% endmacro %}

{% macro default__drop_build_only_schemas(schemas) %}
    {% for schema in schemas %}
        drop schema if exists {{ schema }} cascade;
    {% endfor %}
{% endmacro %}

{#- Spark runs one statement per call -#}
{% macro spark__drop_build_only_schemas(schemas) %}
    {% for schema in schemas %}
        {% do run_query('drop schema if exists ' ~ schema ~ ' cascade') %}
    {% endfor %}
{% endmacro %}
