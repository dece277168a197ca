{% macro drop_build_only_schemas() %}
    {% if execute and flags.WHICH in ('build', 'run') and not var('keep_build_schemas', false) %}
        {% for schema in ['staging', 'intermediate', 'derived', 'seeds'] %}
            drop schema if exists {{ schema }} cascade;
        {% endfor %}
    {% endif %}
{% endmacro %}
