{#-
  One project, two engines (issue 18): every piece of SQL that DuckDB and Spark spell differently
  goes through adapter.dispatch here, default__ (DuckDB) and spark__. Engine-neutral SQL stays in
  the models (group by all, filter (where ...), is not distinct from, median, bool_or, ilike,
  `string` as the text type: DuckDB reads it as VARCHAR). On Spark the profile sets
  spark.sql.parser.escapedStringLiterals (regexes keep their backslashes), TIMESTAMP_NTZ as the
  timestamp type and a UTC session, so the literals and timestamps mean what they mean in DuckDB.
  BENCHWH_BREAK_MACRO=<name> swaps one macro for a wrong one (tests/test_spark_parity.py).
-#}

{% macro _broken(name) -%}
    {{- return(env_var('BENCHWH_BREAK_MACRO', '') == name) -}}
{%- endmacro %}

{#- regexp_replace of every match; replacement groups written \1 (RE2 style). -#}
{% macro regexp_replace_all(expr, pattern, replacement) -%}
    {{ return(adapter.dispatch('regexp_replace_all')(expr, pattern, replacement)) }}
{%- endmacro %}
{% macro default__regexp_replace_all(expr, pattern, replacement) -%}
    regexp_replace({{ expr }}, '{{ pattern }}', '{{ replacement }}', 'g')
{%- endmacro %}
{% macro spark__regexp_replace_all(expr, pattern, replacement) -%}
    {#- Java regexes name groups $1 in replacements; a literal $ is \$ -#}
    {%- set ns = namespace(java=replacement | replace('$', '\\$')) -%}
    {%- for i in range(1, 10) -%}{%- set ns.java = ns.java | replace('\\' ~ i, '$' ~ i) -%}{%- endfor -%}
    regexp_replace({{ expr }}, '{{ pattern }}', '{{ ns.java }}')
{%- endmacro %}

{#- true when the regex matches anywhere in expr -#}
{% macro regexp_matches(expr, pattern) -%}
    {{ return(adapter.dispatch('regexp_matches')(expr, pattern)) }}
{%- endmacro %}
{% macro default__regexp_matches(expr, pattern) -%}
    regexp_matches({{ expr }}, '{{ pattern }}')
{%- endmacro %}
{% macro spark__regexp_matches(expr, pattern) -%}
    ({{ expr }} rlike '{{ pattern }}')
{%- endmacro %}

{#- the value of expr on the row where by is largest (aggregate); rows where by is null are left
    out, and a tie goes to the largest expr: both engines pick any tied row otherwise, so two
    builds of the same data could differ -#}
{% macro arg_max(expr, by) -%}
    {{ return(adapter.dispatch('arg_max')(expr, by)) }}
{%- endmacro %}
{% macro default__arg_max(expr, by) -%}
    arg_max({{ expr }}, case when ({{ by }}) is not null then {'by': {{ by }}, 'tie': {{ expr }}} end)
{%- endmacro %}
{% macro spark__arg_max(expr, by) -%}
    {%- set ordering -%}
        case when ({{ by }}) is not null then named_struct('by', {{ by }}, 'tie', {{ expr }}) end
    {%- endset -%}
    {%- if _broken('arg_max') -%}min_by({{ expr }}, {{ ordering }})
    {%- else -%}max_by({{ expr }}, {{ ordering }}){%- endif -%}
{%- endmacro %}

{#- the first value of expr in the order of order_by (aggregate) -#}
{% macro first_by(expr, order_by) -%}
    {{ return(adapter.dispatch('first_by')(expr, order_by)) }}
{%- endmacro %}
{% macro default__first_by(expr, order_by) -%}
    (list({{ expr }} order by {{ order_by | join(', ') }}))[1]
{%- endmacro %}
{#- Spark: sort the group's (keys, value) structs with a comparator that honours each key's
    direction, nulls last as DuckDB orders them (min_by over a struct read "x desc" as a field
    named desc and sorted it ascending) -#}
{% macro spark__first_by(expr, order_by) -%}
    {%- set fields = [] -%}
    {%- set cases = [] -%}
    {%- for key in order_by -%}
        {%- set k = key | trim -%}
        {%- set desc = (k | lower).endswith(' desc') -%}
        {%- set col = k[:-5] if desc else (k[:-4] if (k | lower).endswith(' asc') else k) -%}
        {%- set a, b = 'l.k' ~ loop.index0, 'r.k' ~ loop.index0 -%}
        {%- do fields.append("'k" ~ loop.index0 ~ "', " ~ (col | trim)) -%}
        {%- do cases.append('when ' ~ a ~ ' is null and ' ~ b ~ ' is not null then 1 when ' ~ a
            ~ ' is not null and ' ~ b ~ ' is null then -1 when ' ~ a ~ (' > ' if desc else ' < ') ~ b
            ~ ' then -1 when ' ~ a ~ (' < ' if desc else ' > ') ~ b ~ ' then 1') -%}
    {%- endfor -%}
    element_at(
        array_sort(
            collect_list(named_struct({{ fields | join(', ') }}, 'v', {{ expr }})),
            (l, r) -> case {{ cases | join(' ') }} else 0 end
        ),
        1
    ).v
{%- endmacro %}

{#- the distinct non-null values of expr, sorted, joined by sep; null when there are none -#}
{% macro string_agg_distinct(expr, sep) -%}
    {{ return(adapter.dispatch('string_agg_distinct')(expr, sep)) }}
{%- endmacro %}
{% macro default__string_agg_distinct(expr, sep) -%}
    {%- if _broken('string_agg_distinct') -%}
        string_agg(distinct {{ expr }}, '{{ sep }}' order by {{ expr }} desc)
    {%- else -%}
        {#- the same text as string_agg(distinct ... order by ...), which sorts per group and cost more -#}
        case when count({{ expr }}) > 0 then array_to_string(list_sort(list_distinct(list({{ expr }}))), '{{ sep }}') end
    {%- endif -%}
{%- endmacro %}
{% macro spark__string_agg_distinct(expr, sep) -%}
    case when count({{ expr }}) > 0 then array_join(array_sort(collect_set({{ expr }})), '{{ sep }}') end
{%- endmacro %}

{#- the non-null values of expr as a sorted list (aggregate) -#}
{% macro sorted_list(expr) -%}
    {{ return(adapter.dispatch('sorted_list')(expr)) }}
{%- endmacro %}
{% macro default__sorted_list(expr) -%}
    list({{ expr }} order by {{ expr }}) filter (where {{ expr }} is not null)
{%- endmacro %}
{% macro spark__sorted_list(expr) -%}
    case when count({{ expr }}) > 0 then array_sort(collect_list({{ expr }})) end
{%- endmacro %}

{#- element of a list, 1-based; null out of range -#}
{% macro list_at(list_expr, index_expr) -%}
    {{ return(adapter.dispatch('list_at')(list_expr, index_expr)) }}
{%- endmacro %}
{% macro default__list_at(list_expr, index_expr) -%}
    {{ list_expr }}[{{ index_expr }}]
{%- endmacro %}
{% macro spark__list_at(list_expr, index_expr) -%}
    try_element_at({{ list_expr }}, cast({{ index_expr }} as int))
{%- endmacro %}

{#- integer division (rounds toward minus infinity for the non-negative operands used here) -#}
{% macro int_div(a, b) -%}
    {{ return(adapter.dispatch('int_div')(a, b)) }}
{%- endmacro %}
{% macro default__int_div(a, b) -%}
    ({{ a }}) // ({{ b }})
{%- endmacro %}
{% macro spark__int_div(a, b) -%}
    (({{ a }}) div ({{ b }}))
{%- endmacro %}

{#- split a string on a literal separator into a list -#}
{% macro string_split(expr, sep) -%}
    {{ return(adapter.dispatch('string_split')(expr, sep)) }}
{%- endmacro %}
{% macro default__string_split(expr, sep) -%}
    string_split({{ expr }}, '{{ sep }}')
{%- endmacro %}
{% macro spark__string_split(expr, sep) -%}
    split({{ expr }}, '\Q{{ sep }}\E')
{%- endmacro %}

{% macro list_contains(list_expr, value_expr) -%}
    {{ return(adapter.dispatch('list_contains')(list_expr, value_expr)) }}
{%- endmacro %}
{% macro default__list_contains(list_expr, value_expr) -%}
    list_contains({{ list_expr }}, {{ value_expr }})
{%- endmacro %}
{% macro spark__list_contains(list_expr, value_expr) -%}
    array_contains({{ list_expr }}, {{ value_expr }})
{%- endmacro %}

{#- After `from <relation> as <alias>`: one row per element of a separated string column, as
    _split.<value_name>, with its position _split.<position_name> (read it through split_position:
    1-based). -#}
{% macro lateral_split(alias, column, sep, value_name, position_name) -%}
    {{ return(adapter.dispatch('lateral_split')(alias, column, sep, value_name, position_name)) }}
{%- endmacro %}
{% macro default__lateral_split(alias, column, sep, value_name, position_name) -%}
    cross join lateral (
        select unnest(string_split({{ alias }}.{{ column }}, '{{ sep }}')) as {{ value_name }},
            unnest(generate_series(1, len(string_split({{ alias }}.{{ column }}, '{{ sep }}')))) as {{ position_name }}
    ) as _split
{%- endmacro %}
{% macro spark__lateral_split(alias, column, sep, value_name, position_name) -%}
    lateral view posexplode({{ string_split(alias ~ '.' ~ column, sep) }}) _split as {{ position_name }}, {{ value_name }}
{%- endmacro %}
{% macro split_position(position_name) -%}
    {{ return(adapter.dispatch('split_position')(position_name)) }}
{%- endmacro %}
{% macro default__split_position(position_name) -%}
    {{ position_name }}
{%- endmacro %}
{#- posexplode counts from 0 -#}
{% macro spark__split_position(position_name) -%}
    ({{ position_name }} + 1)
{%- endmacro %}

{#- `select {{ star_except([...]) }}`: every column but these -#}
{% macro star_except(columns, prefix='') -%}
    {{ return(adapter.dispatch('star_except')(columns, prefix)) }}
{%- endmacro %}
{% macro default__star_except(columns, prefix) -%}
    {{ prefix }}* exclude ({{ columns | join(', ') }})
{%- endmacro %}
{% macro spark__star_except(columns, prefix) -%}
    {{ prefix }}* except ({{ columns | join(', ') }})
{%- endmacro %}

{#- count of distinct values over a window -#}
{% macro count_distinct_over(expr, partition_by) -%}
    {{ return(adapter.dispatch('count_distinct_over')(expr, partition_by)) }}
{%- endmacro %}
{% macro default__count_distinct_over(expr, partition_by) -%}
    count(distinct {{ expr }}) over (partition by {{ partition_by }})
{%- endmacro %}
{% macro spark__count_distinct_over(expr, partition_by) -%}
    size(collect_set({{ expr }}) over (partition by {{ partition_by }}))
{%- endmacro %}

{#- sum in a fixed order (floating point sums are order dependent; Spark has no ordered sum) -#}
{% macro ordered_sum(expr, order_by) -%}
    {{ return(adapter.dispatch('ordered_sum')(expr, order_by)) }}
{%- endmacro %}
{% macro default__ordered_sum(expr, order_by) -%}
    sum({{ expr }} order by {{ order_by }})
{%- endmacro %}
{% macro spark__ordered_sum(expr, order_by) -%}
    sum({{ expr }})
{%- endmacro %}

{#- an ISO 8601 text with an offset ('...Z') as a naive UTC timestamp -#}
{% macro utc_timestamp_from_text(expr) -%}
    {{ return(adapter.dispatch('utc_timestamp_from_text')(expr)) }}
{%- endmacro %}
{% macro default__utc_timestamp_from_text(expr) -%}
    timezone('UTC', cast({{ expr }} as timestamptz))
{%- endmacro %}
{% macro spark__utc_timestamp_from_text(expr) -%}
    cast(cast({{ expr }} as timestamp_ltz) as timestamp_ntz)
{%- endmacro %}

{#- similarity of two strings in [0, 1] (audit's closest catalogue entry) -#}
{% macro name_similarity(a, b) -%}
    {{ return(adapter.dispatch('name_similarity')(a, b)) }}
{%- endmacro %}
{% macro default__name_similarity(a, b) -%}
    jaro_winkler_similarity({{ a }}, {{ b }})
{%- endmacro %}
{% macro spark__name_similarity(a, b) -%}
    {#- Spark has no Jaro-Winkler: normalised Levenshtein (audit only; not in the parity set) -#}
    (1.0 - levenshtein({{ a }}, {{ b }}) / greatest(length({{ a }}), length({{ b }}), 1))
{%- endmacro %}

{#- md5 hex digest of a text -#}
{% macro md5_hex(expr) -%}
    {{ return(adapter.dispatch('md5_hex')(expr)) }}
{%- endmacro %}
{% macro default__md5_hex(expr) -%}
    md5({{ expr }})
{%- endmacro %}
{% macro spark__md5_hex(expr) -%}
    {%- if _broken('md5_hex') -%}sha1({{ expr }}){%- else -%}md5({{ expr }}){%- endif -%}
{%- endmacro %}

{#- strip these characters from both ends -#}
{% macro trim_chars(expr, chars) -%}
    {{ return(adapter.dispatch('trim_chars')(expr, chars)) }}
{%- endmacro %}
{% macro default__trim_chars(expr, chars) -%}
    trim({{ expr }}, '{{ chars }}')
{%- endmacro %}
{% macro spark__trim_chars(expr, chars) -%}
    btrim({{ expr }}, '{{ chars }}')
{%- endmacro %}

{#- The rows of the query in the call block that come first in each partition (DuckDB's
    `qualify row_number() over (...) = 1`; Spark has no qualify). partition_by and order_by name
    the query's output columns; `drop` lists columns only the ordering needed. Ascending keys get
    an explicit `nulls last` (DuckDB's default; Spark's is nulls first). -#}
{% macro keep_first(partition_by, order_by, drop=[]) -%}
    {%- set keys = [] -%}
    {%- for key in order_by.split(',') -%}
        {%- set key = key | trim -%}
        {%- if 'nulls ' in (key | lower) or (key | lower).endswith(' desc') -%}{%- do keys.append(key) -%}
        {%- else -%}{%- do keys.append(key ~ ' nulls last') -%}{%- endif -%}
    {%- endfor -%}
    select {{ star_except(['_keep_rank'] + drop) }}
    from (
        select
            *,
            row_number() over (partition by {{ partition_by }} order by {{ keys | join(', ') }}) as _keep_rank
        from (
            {{ caller() }}
        ) as _ranked
    ) as _kept
    where _keep_rank = 1
{%- endmacro %}

{#- the first non-null value of expr in the order of order_by (aggregate) -#}
{% macro any_value_ordered(expr, order_by) -%}
    {{ return(adapter.dispatch('any_value_ordered')(expr, order_by)) }}
{%- endmacro %}
{#- DuckDB's arg_min skips rows whose value is null, as any_value(expr order by ...) does, but keeps
    one value per group where the ordered aggregate buffers and sorts every group (fct_speed_runs:
    8.0 s instead of 10.3 at scale 10, the same rows) -#}
{% macro default__any_value_ordered(expr, order_by) -%}
    arg_min({{ expr }}, {{ order_by }})
{%- endmacro %}
{% macro spark__any_value_ordered(expr, order_by) -%}
    min_by({{ expr }}, {{ order_by }}) filter (where {{ expr }} is not null)
{%- endmacro %}

{#- `name as {{ not_materialized() }} (...)`: a CTE read twice that DuckDB must compute where it is
    read. DuckDB materializes a CTE referenced more than once, in memory: over the 10M samples of
    scale 10 that ran out of a 1 GB limit (docs/benchmarks.md); Spark inlines CTEs anyway. -#}
{% macro not_materialized() -%}
    {{ return(adapter.dispatch('not_materialized')()) }}
{%- endmacro %}
{% macro default__not_materialized() -%}
    not materialized
{%- endmacro %}
{% macro spark__not_materialized() -%}
{%- endmacro %}

{#- An aggregate: the median of value_expr within a group whose rows carry position_expr, the
    value's 1-based place in a window sort (`row_number() over (... order by value nulls last)`),
    and count_expr, the group's non-null count. lo + 0.5 x (hi - lo) of the middle one or two is
    median()'s own interpolation, so the figures are bit-identical to median(); unlike median(), a
    holistic aggregate that holds every group's values in memory, the window sort spills to disk
    (docs/dbt.md, memory at scale). -#}
{% macro median_of_sorted(value_expr, position_expr, count_expr) -%}
    {%- set low -%}
        max({{ value_expr }}) filter (where {{ position_expr }} = {{ int_div(count_expr ~ ' + 1', 2) }})
    {%- endset -%}
    {%- set high -%}
        max({{ value_expr }}) filter (where {{ position_expr }} = {{ int_div(count_expr, 2) }} + 1)
    {%- endset -%}
    ({{ low }} + 0.5 * ({{ high }} - {{ low }}))
{%- endmacro %}
