-- The floor (DESIGN §8): fct_speed_summary computed by one hand-written DuckDB script, straight
-- from the same landing files and seed CSVs the dbt project reads. No views, no tests, no other
-- marts: what the speed summary costs at the least. benchmarks/phases.py fills in {{landing}}
-- and {{seeds}}. Same rules as the dbt models (latest landing per LocalScore run and test, first
-- landing per local run, name resolution, duplicate flags, order-statistic interval, rank ranges);
-- the runner checks the result equals marts.fct_speed_summary.

create macro light_key(x) as
    nullif(trim(regexp_replace(lower(trim(coalesce(cast(x as varchar), ''))), '\s+', ' ', 'g')), '');

create macro hw_key(x) as
    nullif(trim(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
    lower(trim(coalesce(cast(x as varchar), ''))),
    '\(\s*(tm|r)\s*\)|™|®', ' ', 'g'), '\([^)]*\)', ' ', 'g'), ',?\s*compute capability.*$', '', 'g'),
    '@.*$', '', 'g'), '\s+rev\s+[0-9.]+\s*$', '', 'g'), 'with max-q design', 'max-q', 'g'),
    '\s+w(ith|/)\s+radeon.*$', '', 'g'), '\b[0-9]+(st|nd|rd|th) gen\b', ' ', 'g'), '[-_/,]', ' ', 'g'),
    '\b([0-9]+|dual|quad|six|eight|ten|twelve|sixteen) cores?( processor)?\b', ' ', 'g'),
    '\bprocessor\b', ' ', 'g'), '\b[0-9]+p\+[0-9]+e(\+[0-9]+gpu)?\b', ' ', 'g'),
    '\b[0-9]+(\.[0-9]+)?\s*gb\b', ' ', 'g'), '\b(rtx|gtx|rx)([0-9])', '\1 \2', 'g'), '\s+', ' ', 'g'),
    '^\s*(nvidia|amd|intel|apple|ati)\s+', '', 'g'), '^\s*(nvidia|amd|intel|apple|ati)\s+', '', 'g'),
    '\b(geforce|tesla|core|cpu|gpu|graphics|generation|corporation)\b', ' ', 'g'), '\s+', ' ', 'g')), '');

create macro model_key(x) as
    nullif(trim(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
    lower(trim(coalesce(cast(x as varchar), ''))),
    '^.*[/\\]', '', 'g'), ':(free|beta|extended|exacto|thinking|nitro|floor)$', '', 'g'),
    '\.(gguf|bin|safetensors|llamafile)$', '', 'g'), '[-_.]\d{5}-of-\d{5}$', '', 'g'),
    '[-_.](ud[-_])?(i?q[0-9]+_[a-z0-9]+(_[a-z0-9]+)*|f16|bf16|f32|fp16|fp8|mxfp4|mxfp4_moe)$', '', 'g'),
    '^(google|microsoft|meta-llama|qwen|mistralai|ibm-granite|deepseek-ai|openai|huggingfacetb|thudm|zai-org)_', '', 'g'),
    '[-_:]', ' ', 'g'), '\bgguf\b', ' ', 'g'), '\s+(awq|gptq( int[48])?|bnb 4bit|mlx|[48]bit)\s*$', '', 'g'),
    '\s+', ' ', 'g'), '^\s*([a-z]+)\.([a-z])', '\2', 'g'), '^\s*meta (llama)', '\1', 'g'),
    '\b(llama|qwen|gemma|phi|granite|smollm|glm|olmo|mistral|exaone|falcon|codellama)\s+([0-9]+(\.[0-9]+)*)(\s|$)', '\1\2\4', 'g'),
    '\s+', ' ', 'g')), '');

create macro quant_key(x) as
    nullif(upper(regexp_replace(trim(coalesce(cast(x as varchar), '')), '\s+', ' ', 'g')), '');

create macro file_quant_key(x) as
    nullif(upper(regexp_extract(
        regexp_replace(lower(coalesce(cast(x as varchar), '')), '[-_.]\d{5}-of-\d{5}(\.gguf)?$', '.gguf'),
        '[-_.]((ud[-_])?(i?q[0-9]+_[a-z0-9]+(_[a-z0-9]+)*|f16|bf16|f32|mxfp4(_moe)?))\.gguf$', 1)), '');

create macro provisional(key, raw) as
    'unresolved:' || coalesce(
        nullif(trim(regexp_replace(key, '[^a-z0-9.+]+', '-', 'g'), '-'), ''),
        case when nullif(trim(cast(raw as varchar)), '') is null then 'unknown'
             else 'raw-' || substr(md5(cast(raw as varchar)), 1, 10) end);

-- Four statements, each a table (as dbt's layers are): a CTE read twice is held in memory by
-- DuckDB, where a table spills; at scale 10 one statement ran out of the 1 GB limit.
create table samples as
with
ls_runs as (
    select run_id, created_at, accelerator_name, accelerator_memory_gb, model_name, model_quant,
           runtime_name, runtime_version
    from read_parquet('{{landing}}/localscore/runs/*.parquet', union_by_name = true)
    qualify row_number() over (partition by run_id
                               order by _fetched_at desc, _raw_sha256 desc, _record_index desc) = 1
),
ls_tests as (
    select run_id, test_index, test_name, n_prompt, n_gen, gen_tps, prompt_tps, ttft_ms
    from read_parquet('{{landing}}/localscore/tests/*.parquet', union_by_name = true)
    qualify row_number() over (partition by run_id, test_name
                               order by _fetched_at desc, _raw_sha256 desc, _record_index desc) = 1
),
ls as (
    select
        'localscore' as source,
        cast(r.run_id as varchar) as source_run_id,
        cast(row_number() over (partition by r.run_id order by t.test_index, t.test_name) - 1 as integer) as sample_index,
        r.accelerator_name as raw_hardware_name,
        cast(r.accelerator_memory_gb as double) as hardware_memory_gb,
        r.model_name as raw_model_name,
        r.model_quant as raw_quant,
        cast(null as varchar) as model_file_name,
        cast(null as varchar) as model_repo,
        r.runtime_name as engine,
        r.runtime_version as engine_version,
        t.test_name,
        cast(cast(t.n_prompt as integer) as bigint) as n_prompt,
        cast(cast(t.n_gen as integer) as bigint) as n_gen,
        t.gen_tps, t.prompt_tps, t.ttft_ms,
        case when t.ttft_ms is not null and t.gen_tps > 0 and t.n_gen is not null
             then t.ttft_ms + 1000.0 * cast(t.n_gen as integer) / t.gen_tps end as turn_time_ms,
        r.created_at as measured_at,
        'source' as trust,
        false as is_duplicate,
        'source-default' as config_id
    from ls_runs as r
    inner join ls_tests as t on r.run_id = t.run_id
),
lr_runs as (
    select *
    from read_parquet('{{landing}}/runs/runs/*.parquet', union_by_name = true)
    qualify row_number() over (partition by source, source_run_id
                               order by _fetched_at, _raw_sha256, _record_index) = 1
),
lr_joined as (
    select
        r.source, r.source_run_id, s.test_index, s.sample_index as repetition_index,
        r.gpu as raw_hardware_name, r.gpu_memory_gb as hardware_memory_gb, r.model_name as raw_model_name,
        r.model_quant as raw_quant, r.model_file as model_file_name, r.model_repo, r.engine_name as engine,
        r.engine_version, s.test_name, s.n_prompt, s.n_gen, s.gen_tps, s.prompt_tps, s.ttft_ms,
        s.turn_time_ms as measured_turn_time_ms,
        coalesce(s.power_w, r.power_avg_watts) as power_w,
        coalesce(s.measured_at, r.created_at) as measured_at,
        r.trust, s.test_key, r._fetched_at, r._raw_sha256,
        coalesce(r.config_key, 'unreported') as config_id
    from lr_runs as r
    inner join read_parquet('{{landing}}/runs/samples/*.parquet', union_by_name = true) as s
        on s.source = r.source and s.source_run_id = r.source_run_id and s._raw_sha256 = r._raw_sha256
),
lr as (
    select
        source, source_run_id,
        cast(row_number() over (partition by source, source_run_id order by test_index, repetition_index) - 1 as integer) as sample_index,
        raw_hardware_name, hardware_memory_gb, raw_model_name, raw_quant, model_file_name, model_repo, engine,
        engine_version, test_name, n_prompt, n_gen, gen_tps, prompt_tps, ttft_ms,
        coalesce(measured_turn_time_ms,
                 case when ttft_ms is not null and gen_tps > 0 and n_gen is not null
                      then ttft_ms + 1000.0 * n_gen / gen_tps end) as turn_time_ms,
        measured_at, trust,
        case when test_key is null then false
             else row_number() over (partition by test_key, repetition_index
                                     order by (power_w is null), _fetched_at, _raw_sha256, source_run_id) > 1
        end as is_duplicate,
        config_id
    from lr_joined
),
lr_and_ls as (
    select * from ls
    union all
    select * from lr
)
select * from lr_and_ls;

create table one_per_sample as
with
-- name resolution on the distinct names only
hw_catalogue as (
    select hardware_id, name, vendor, kind, cast(memory_gb as double) as memory_gb
    from read_csv('{{seeds}}/hardware_catalogue.csv', header = true, all_varchar = true)
),
hw_candidates as (
    select n.hardware_id, light_key(n.candidate_name) as light_key, hw_key(n.candidate_name) as norm_key,
           c.kind, c.memory_gb
    from (select hardware_id, name as candidate_name from hw_catalogue
          union all
          select hardware_id, alias from read_csv('{{seeds}}/hardware_aliases.csv', header = true, all_varchar = true)) as n
    inner join hw_catalogue as c using (hardware_id)
),
hw_observed as (
    select distinct raw_hardware_name, hardware_memory_gb,
           light_key(raw_hardware_name) as light_key, hw_key(raw_hardware_name) as norm_key
    from samples
),
hw_matched as (
    select
        o.raw_hardware_name, o.hardware_memory_gb, o.norm_key,
        coalesce(
            (select min(c.hardware_id) from hw_candidates as c where c.light_key = o.light_key),
            (select c.hardware_id from (select distinct * from hw_candidates) as c where c.norm_key = o.norm_key
             order by coalesce(abs(c.memory_gb - o.hardware_memory_gb), 0), (c.kind = 'cpu'), c.hardware_id
             limit 1)) as catalogue_id,
        cast(nullif(regexp_extract(o.raw_hardware_name, '\+\s*([0-9]+)\s*GPU\b', 1), '') as integer) as gpu_cores
    from hw_observed as o
),
-- Apple GPU-core bins: '<chip id>-<cores>c' unless the catalogue entry is a bin already
hw as (
    select
        m.raw_hardware_name, m.hardware_memory_gb,
        case
            when m.catalogue_id is null then provisional(m.norm_key, m.raw_hardware_name)
            when c.vendor = 'Apple' and c.kind = 'soc' and not regexp_matches(m.catalogue_id, '-[0-9]+c$')
                 and m.gpu_cores is not null then m.catalogue_id || '-' || m.gpu_cores || 'c'
            else m.catalogue_id
        end as hardware_id
    from hw_matched as m
    left join hw_catalogue as c on c.hardware_id = m.catalogue_id
),
model_catalogue as (
    select * from read_csv('{{seeds}}/model_catalogue.csv', header = true, all_varchar = true)
),
model_candidates as (
    select model_id, priority, light_key(candidate_name) as light_key, model_key(candidate_name) as norm_key
    from (
        select model_id, name as candidate_name, 1 as priority from model_catalogue
        union all select model_id, alias, 2 from read_csv('{{seeds}}/model_aliases.csv', header = true, all_varchar = true)
        union all select model_id, model_id, 3 from model_catalogue
        union all select model_id, hf_base_repo, 4 from model_catalogue where hf_base_repo is not null
        union all select model_id, trim(unnest(string_split(hf_gguf_repos, ';'))), 5 from model_catalogue
                  where hf_gguf_repos is not null
        union all select model_id, openrouter_id, 6 from model_catalogue where openrouter_id is not null
        union all select model_id, ollama_tag, 7 from model_catalogue where ollama_tag is not null
    )
),
model_observed as (
    select distinct raw_model_name, model_file_name from samples
),
catalogue_repos as (
    select model_id, trim(unnest(repos)) as repo, unnest(generate_series(1, len(repos))) as repo_position
    from (select model_id, string_split(hf_gguf_repos, ';') as repos from model_catalogue
          where hf_gguf_repos is not null)
),
listed_files as (
    select distinct r.model_id, lower(f.repo) as repo, f.build_file_name as file_name, r.repo_position
    from read_parquet('{{landing}}/huggingface/files/*.parquet', union_by_name = true) as f
    inner join catalogue_repos as r on lower(f.repo) = lower(r.repo)
),
model_attempts as (
    select raw_model_name, model_file_name, 1 as attempt, raw_model_name as name from model_observed
    union all
    select raw_model_name, model_file_name, 2, model_file_name from model_observed where model_file_name is not null
),
model_matches as (
    select a.raw_model_name, a.model_file_name, a.attempt, 1 as step, c.priority, c.model_id
    from model_attempts as a inner join model_candidates as c on light_key(a.name) = c.light_key
    union all
    select a.raw_model_name, a.model_file_name, a.attempt, 2, c.priority, c.model_id
    from model_attempts as a inner join model_candidates as c on model_key(a.name) = c.norm_key
),
model_best as (
    select raw_model_name, model_file_name, model_id
    from model_matches
    qualify row_number() over (partition by raw_model_name, model_file_name
                               order by attempt, step, priority, model_id) = 1
),
models as (
    select o.raw_model_name, o.model_file_name,
           coalesce(b.model_id, provisional(coalesce(model_key(o.raw_model_name), model_key(o.model_file_name)),
                                            coalesce(o.raw_model_name, o.model_file_name))) as model_id
    from model_observed as o
    left join model_best as b
        on o.raw_model_name is not distinct from b.raw_model_name
        and o.model_file_name is not distinct from b.model_file_name
),
quant_candidates as (
    select distinct quant_key(candidate_name) as key, quant
    from (
        select quant, quant as candidate_name from read_csv('{{seeds}}/quantizations.csv', header = true, all_varchar = true)
        union all
        select quant, llama_cpp_ftype_name from read_csv('{{seeds}}/quantizations.csv', header = true, all_varchar = true)
        where llama_cpp_ftype_name is not null
        union all
        select quant, alias from read_csv('{{seeds}}/quantization_aliases.csv', header = true, all_varchar = true)
    )
),
quants as (
    select o.raw_quant, o.model_file_name,
           coalesce(r.quant, f.quant, quant_key(o.raw_quant), file_quant_key(o.model_file_name), 'UNKNOWN') as quant
    from (select distinct raw_quant, model_file_name from samples) as o
    left join quant_candidates as r on quant_key(o.raw_quant) = r.key
    left join quant_candidates as f on file_quant_key(o.model_file_name) = f.key
),
resolved as (
    select s.*, h.hardware_id, m.model_id, q.quant,
           -- model x quant x file: the reported repository, else the catalogued one listing the file
           case
               when s.model_file_name is null then m.model_id || '@' || q.quant
               when coalesce(lower(s.model_repo), (
                   select l.repo from listed_files as l
                   where l.model_id = m.model_id and l.file_name = s.model_file_name
                   order by l.repo_position, l.repo limit 1)) is not null
                   then m.model_id || '@' || q.quant || '@' || coalesce(lower(s.model_repo), (
                       select l.repo from listed_files as l
                       where l.model_id = m.model_id and l.file_name = s.model_file_name
                       order by l.repo_position, l.repo limit 1)) || '/' || s.model_file_name
               else m.model_id || '@' || q.quant || '@' || s.model_file_name
           end as build_id
    from samples as s
    left join hw as h
        on s.raw_hardware_name is not distinct from h.raw_hardware_name
        and s.hardware_memory_gb is not distinct from h.hardware_memory_gb
    left join models as m
        on s.raw_model_name is not distinct from m.raw_model_name
        and s.model_file_name is not distinct from m.model_file_name
    left join quants as q
        on s.raw_quant is not distinct from q.raw_quant
        and s.model_file_name is not distinct from q.model_file_name
)
select * from resolved
qualify row_number() over (partition by source, source_run_id, sample_index
                               order by measured_at, test_name, gen_tps, prompt_tps, ttft_ms) = 1;

create table measurements as
with
run_prints as (
    select source, source_run_id, min(measured_at) as run_at, any_value(hardware_id) as hardware_id,
           any_value(build_id) as build_id, any_value(engine) as engine,
           any_value(engine_version) as engine_version, any_value(config_id) as config_id,
           -- the mart's fingerprint: a hash per sample, combined in any order (an ordered string_agg
           -- per run is holistic and ran out of 1 GB at scale 10)
           count(*) as n_samples,
           bit_xor(hash(sample_index, test_name, n_prompt, n_gen, gen_tps, prompt_tps, ttft_ms, turn_time_ms))
               as fingerprint
    from one_per_sample
    group by source, source_run_id
),
resubmissions as (
    select source, source_run_id,
           coalesce(run_at - lag(run_at) over (
               partition by hardware_id, build_id, engine, engine_version, config_id, n_samples, fingerprint
               order by run_at, source, source_run_id) <= interval 30 minute, false) as is_resubmission
    from run_prints
)
select s.hardware_id, s.model_id, s.quant, coalesce(s.engine, 'unknown') as engine, s.config_id,
           s.test_name as test_profile, s.build_id, s.source, s.source_run_id,
           s.gen_tps, s.prompt_tps, s.ttft_ms, s.turn_time_ms
    from one_per_sample as s
    inner join resubmissions as r using (source, source_run_id)
    where s.trust in ('signed', 'source') and not (s.is_duplicate or r.is_resubmission);

-- medians and the interval's order statistics from one window sort per figure (spills), as
-- marts.fct_speed_summary; median() per group is holistic and held every group in memory
create table floor_speed_summary as
with
ranked as (
    select *,
           row_number() over (partition by hardware_id, build_id, engine, config_id, test_profile
                              order by gen_tps nulls last) as gen_position,
           count(gen_tps) over (partition by hardware_id, build_id, engine, config_id, test_profile) as n_gen,
           row_number() over (partition by hardware_id, build_id, engine, config_id, test_profile
                              order by prompt_tps nulls last) as prompt_position,
           count(prompt_tps) over (partition by hardware_id, build_id, engine, config_id, test_profile) as n_prompt,
           row_number() over (partition by hardware_id, build_id, engine, config_id, test_profile
                              order by ttft_ms nulls last) as ttft_position,
           count(ttft_ms) over (partition by hardware_id, build_id, engine, config_id, test_profile) as n_ttft,
           row_number() over (partition by hardware_id, build_id, engine, config_id, test_profile
                              order by turn_time_ms nulls last) as turn_position,
           count(turn_time_ms) over (partition by hardware_id, build_id, engine, config_id, test_profile) as n_turn
    from measurements
),
-- k of the order-statistic 95% interval of the median: largest k with P(Bin(n, 1/2) <= k-1) <= 0.025
order_statistic_k as (
    select n, max(case when cdf <= 0.025 then i + 1 end) as k
    from (
        select n, i,
               sum(exp(lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1) - n * ln(2)))
                   over (partition by n order by i rows between unbounded preceding and current row) as cdf
        from (select n, unnest(range(0, n // 2 + 1)) as i
              from (select distinct count(gen_tps) as n from measurements
                    group by hardware_id, build_id, engine, config_id, test_profile having count(gen_tps) >= 1))
    )
    group by n
),
summary as (
    select r.hardware_id, r.model_id, r.quant, r.build_id, r.engine, r.config_id, r.test_profile,
           count(distinct r.source || '|' || r.source_run_id) as n_runs,
           count(*) as n_samples,
           max(r.n_gen) as n_gen_samples,
           max(r.gen_tps) filter (where r.gen_position = (r.n_gen + 1) // 2) as gen_lo,
           max(r.gen_tps) filter (where r.gen_position = r.n_gen // 2 + 1) as gen_hi,
           max(r.prompt_tps) filter (where r.prompt_position = (r.n_prompt + 1) // 2) as prompt_lo,
           max(r.prompt_tps) filter (where r.prompt_position = r.n_prompt // 2 + 1) as prompt_hi,
           max(r.ttft_ms) filter (where r.ttft_position = (r.n_ttft + 1) // 2) as ttft_lo,
           max(r.ttft_ms) filter (where r.ttft_position = r.n_ttft // 2 + 1) as ttft_hi,
           max(r.turn_time_ms) filter (where r.turn_position = (r.n_turn + 1) // 2) as turn_lo,
           max(r.turn_time_ms) filter (where r.turn_position = r.n_turn // 2 + 1) as turn_hi,
           max(r.gen_tps) filter (where r.gen_position = coalesce(k.k, 1)) as gen_tps_ci_low,
           max(r.gen_tps) filter (where r.gen_position = r.n_gen - coalesce(k.k, 1) + 1) as gen_tps_ci_high,
           case when max(r.n_gen) = 0 then null when max(k.k) is null then 'min_max'
                else 'order_statistic' end as interval_method
    from ranked as r
    left join order_statistic_k as k on r.n_gen = k.n
    group by r.hardware_id, r.model_id, r.quant, r.build_id, r.engine, r.config_id, r.test_profile
),
medians as (
    -- lo + 0.5 x (hi - lo): median()'s own interpolation
    select *,
           gen_lo + 0.5 * (gen_hi - gen_lo) as gen_tps_median,
           prompt_lo + 0.5 * (prompt_hi - prompt_lo) as prompt_tps_median,
           ttft_lo + 0.5 * (ttft_hi - ttft_lo) as ttft_ms_median,
           turn_lo + 0.5 * (turn_hi - turn_lo) as turn_time_ms_median
    from summary
),
ranks as (
    select i.hardware_id, i.build_id, i.engine, i.config_id, i.test_profile,
           1 + count(case when j.gen_tps_ci_low > i.gen_tps_ci_high then 1 end) as rank_best,
           1 + count(case when not (j.build_id = i.build_id and j.engine = i.engine and j.config_id = i.config_id)
                           and j.gen_tps_ci_high >= i.gen_tps_ci_low then 1 end) as rank_worst,
           count(*) as rank_of
    from medians as i
    inner join medians as j
        on i.hardware_id = j.hardware_id and i.test_profile = j.test_profile and j.gen_tps_ci_low is not null
    where i.gen_tps_ci_low is not null
    group by all
)
select s.hardware_id, s.model_id, s.quant, s.engine, s.config_id, s.test_profile, s.build_id, s.n_runs, s.n_samples,
       s.n_gen_samples, s.gen_tps_median, s.gen_tps_ci_low, s.gen_tps_ci_high, s.interval_method,
       s.prompt_tps_median, s.ttft_ms_median, s.turn_time_ms_median, r.rank_best, r.rank_worst, r.rank_of
from medians as s
left join ranks as r using (hardware_id, build_id, engine, config_id, test_profile);
