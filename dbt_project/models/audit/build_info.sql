-- Build identity comes from the orchestration (macros/build_value.sql); a bare `dbt build` gets a dev identity.
select
    cast('{{ build_value("build_version", "dev") }}' as string) as version,
    cast('{{ build_value("build_id", "dev") }}' as string) as build_id,
    cast('{{ build_value("build_started_at", "1970-01-01 00:00:00") }}' as timestamp) as build_started_at,
    cast('{{ build_value("code_revision", "unknown") }}' as string) as code_revision,
    cast({{ var("default_context_tokens") }} as integer) as default_context_tokens
