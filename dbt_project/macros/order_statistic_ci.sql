{#-
  DESIGN §7: distribution-free 95% confidence interval of the median by order statistics.
  For each sample size n in `sizes_relation` (a relation or CTE name with an integer column
  `n_column`), returns (n, k) where k is the largest k with P(Binomial(n, 1/2) <= k-1) <= 0.025;
  the interval is [x(k), x(n-k+1)]. k is null when no such k exists (n <= 5): use [min, max].

  Set-based: the binomial pmf C(n,i)/2^n = exp(lgamma(n+1) - lgamma(i+1) - lgamma(n-i+1) - n ln 2)
  for i = 0..floor(n/2) (the 2.5% tail never reaches the middle), cumulated with a window sum.
  The cdf values are dyadic rationals, never equal to 0.025, so float rounding cannot flip a k.
-#}
{% macro order_statistic_ci_k(sizes_relation, n_column='n') -%}
    {{ return(adapter.dispatch('order_statistic_ci_k')(sizes_relation, n_column)) }}
{%- endmacro %}

{% macro default__order_statistic_ci_k(sizes_relation, n_column) -%}
    select
        n,
        max(case when cdf <= 0.025 then i + 1 end) as k
    from (
        select
            n,
            i,
            sum(exp(lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1) - n * ln(2)))
                over (partition by n order by i rows between unbounded preceding and current row) as cdf
        from (
            select n, unnest(range(0, n // 2 + 1)) as i
            from (select distinct cast({{ n_column }} as bigint) as n from {{ sizes_relation }} where {{ n_column }} >= 1)
        )
    )
    group by n
{%- endmacro %}


{#- Spark has no lgamma: ln(m!) is the sum of ln(1..m) (same dyadic cdf, other rounding). -#}
{% macro spark__order_statistic_ci_k(sizes_relation, n_column) -%}
    select
        n,
        max(case when cdf <= 0.025 then i + 1 end) as k
    from (
        select
            n,
            i,
            sum(exp(
                aggregate(sequence(1, greatest(n, 1)), 0D, (acc, j) -> acc + ln(j))
                - aggregate(sequence(1, greatest(i, 1)), 0D, (acc, j) -> acc + ln(j))
                - aggregate(sequence(1, greatest(n - i, 1)), 0D, (acc, j) -> acc + ln(j))
                - n * ln(2)
            )) over (partition by n order by i rows between unbounded preceding and current row) as cdf
        from (
            select n, explode(sequence(0, n div 2)) as i
            from (select distinct cast({{ n_column }} as bigint) as n from {{ sizes_relation }} where {{ n_column }} >= 1)
        )
    )
    group by n
{%- endmacro %}
