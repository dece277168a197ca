{#- Numbers as the reference pages print them, for the few sentences the site tables carry
    (DESIGN §5: every sentence a page shows is a column). -#}

{#- 1193 -> '1,193' -#}
{% macro thousands(expr) -%}
    {{ return(adapter.dispatch('thousands')(expr)) }}
{%- endmacro %}
{% macro default__thousands(expr) -%}
    format('{:,}', cast({{ expr }} as bigint))
{%- endmacro %}
{% macro spark__thousands(expr) -%}
    format_number(cast({{ expr }} as bigint), 0)
{%- endmacro %}

{#- token counts: 4096 -> '4K', 131072 -> '128K', 1193 -> '1,193' -#}
{% macro tokens_short(expr) -%}
    case
        when {{ expr }} >= 1024 and {{ expr }} % 1024 = 0
            then cast(cast({{ expr }} / 1024 as bigint) as string) || 'K'
        else {{ thousands(expr) }}
    end
{%- endmacro %}
