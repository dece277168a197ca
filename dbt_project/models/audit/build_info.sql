-- Build identity comes from the orchestration (dbt vars); a bare `dbt build` gets a dev identity.
select
    cast('{{ var("build_version", "dev") }}' as string) as version,
    cast('{{ var("build_id", "dev") }}' as string) as build_id,
    cast('{{ var("build_started_at", "1970-01-01 00:00:00") }}' as timestamp) as build_started_at,
    cast('{{ var("code_revision", "unknown") }}' as string) as code_revision,
    cast({{ var("default_context_tokens") }} as integer) as default_context_tokens
