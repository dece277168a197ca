{#- One value naming the build (audit.build_info): the orchestration passes it in the environment
    (BENCHWH_BUILD_VERSION, ...), a hand-run build may pass `--vars`, else the default. The
    environment is read only when executing: a value that changes every build must not enter
    dbt's partial-parse state (cli vars and env_var() at parse time do, so each build re-parsed). -#}
{% macro build_value(name, default) %}
    {%- if execute -%}
        {{ return(env_var('BENCHWH_' ~ (name | upper), var(name, default))) }}
    {%- endif -%}
    {{ return(var(name, default)) }}
{% endmacro %}
