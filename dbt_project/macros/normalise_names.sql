{#-
  Name normalisation for entity resolution (DuckDB's RE2 and Spark's Java regular expressions: the
  patterns keep to their common subset; macros/cross_engine.sql).
  Both the raw names from sources and the catalogue names/aliases pass through the same macro,
  so a match is an equality of normalised keys. Each step is one regexp_replace, applied in order.
-#}

{% macro _apply_regex_steps(expr, steps) -%}
    {%- set ns = namespace(sql="lower(trim(coalesce(cast(" ~ expr ~ " as string), '')))") -%}
    {%- for pattern, replacement in steps -%}
        {%- set ns.sql = regexp_replace_all(ns.sql, pattern, replacement) -%}
    {%- endfor -%}
    {{- "nullif(trim(" ~ ns.sql ~ "), '')" -}}
{%- endmacro %}


{#- Light key: case and whitespace only. Used for exact alias matches (e.g. Apple core configs). -#}
{% macro light_name_key(expr) -%}
    {{ _apply_regex_steps(expr, [["\\s+", " "]]) }}
{%- endmacro %}


{#-
  Hardware: "NVIDIA GeForce RTX 4060 Ti" / "nvidia  geforce rtx 4060 ti 16GB" -> "rtx 4060 ti".
  Drops (TM)/(R), parentheticals such as "(znver3)", clock speeds after "@", "rev 1.1",
  "with Radeon Graphics" tails, "11th Gen", "N-Core Processor", Apple core configs "8P+2E+16GPU",
  memory sizes ("80GB"), leading vendor names and filler words (GeForce, Tesla, Core, CPU, GPU,
  Graphics, Generation). Memory is not in the key: it disambiguates variants separately.
-#}
{% macro normalise_hardware_name(expr) -%}
    {{ _apply_regex_steps(expr, [
        ["\\(\\s*(tm|r)\\s*\\)|™|®", " "],
        ["\\([^)]*\\)", " "],
        [",?\\s*compute capability.*$", ""],
        ["@.*$", ""],
        ["\\s+rev\\s+[0-9.]+\\s*$", ""],
        ["with max-q design", "max-q"],
        ["\\s+w(ith|/)\\s+radeon.*$", ""],
        ["\\b[0-9]+(st|nd|rd|th) gen\\b", " "],
        ["[-_/,]", " "],
        ["\\b([0-9]+|dual|quad|six|eight|ten|twelve|sixteen) cores?( processor)?\\b", " "],
        ["\\bprocessor\\b", " "],
        ["\\b[0-9]+p\\+[0-9]+e(\\+[0-9]+gpu)?\\b", " "],
        ["\\b[0-9]+(\\.[0-9]+)?\\s*gb\\b", " "],
        ["\\b(rtx|gtx|rx)([0-9])", "\\1 \\2"],
        ["\\s+", " "],
        ["^\\s*(nvidia|amd|intel|apple|ati)\\s+", ""],
        ["^\\s*(nvidia|amd|intel|apple|ati)\\s+", ""],
        ["\\b(geforce|tesla|core|cpu|gpu|graphics|generation|corporation)\\b", " "],
        ["\\s+", " "]
    ]) }}
{%- endmacro %}


{#-
  Models: "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "meta-llama/llama-3.1-8b-instruct",
  "Meta Llama 3.1 8B Instruct" -> "llama3.1 8b instruct"; "llama3.2:1b" -> "llama3.2 1b".
  Drops folders/orgs, the file extension, split suffixes, the quant suffix, "-GGUF", packaging
  words (AWQ, bnb 4bit), "org." prefixes; glues a family word to its version number
  ("qwen 2.5" -> "qwen2.5") so Ollama, OpenRouter and GGUF spellings meet.
-#}
{% macro normalise_model_name(expr) -%}
    {{ _apply_regex_steps(expr, [
        ["^.*[/\\\\]", ""],
        [":(free|beta|extended|exacto|thinking|nitro|floor)$", ""],
        ["\\.(gguf|bin|safetensors|llamafile)$", ""],
        ["[-_.]\\d{5}-of-\\d{5}$", ""],
        ["[-_.](ud[-_])?(i?q[0-9]+_[a-z0-9]+(_[a-z0-9]+)*|f16|bf16|f32|fp16|fp8|mxfp4|mxfp4_moe)$", ""],
        ["^(google|microsoft|meta-llama|qwen|mistralai|ibm-granite|deepseek-ai|openai|huggingfacetb|thudm|zai-org)_", ""],
        ["[-_:]", " "],
        ["\\bgguf\\b", " "],
        ["\\s+(awq|gptq( int[48])?|bnb 4bit|mlx|[48]bit)\\s*$", ""],
        ["\\s+", " "],
        ["^\\s*([a-z]+)\\.([a-z])", "\\2"],
        ["^\\s*meta (llama)", "\\1"],
        ["\\b(llama|qwen|gemma|phi|granite|smollm|glm|olmo|mistral|exaone|falcon|codellama)\\s+([0-9]+(\\.[0-9]+)*)(\\s|$)", "\\1\\2\\4"],
        ["\\s+", " "]
    ]) }}
{%- endmacro %}


{#- Quant names: "Q4_K - Medium", "q4_k_m", "Q4_K_M" -> "Q4_K_M"-comparable key (upper, no spaces). -#}
{% macro normalise_quant_name(expr) -%}
    nullif(upper({{ regexp_replace_all("trim(coalesce(cast(" ~ expr ~ " as string), ''))", '\\s+', ' ') }}), '')
{%- endmacro %}


{#- The quant named in a GGUF file name ("...-Q4_K_M.gguf", "...-UD-Q4_K_XL-00001-of-00002.gguf"). -#}
{% macro quant_from_file_name(expr) -%}
    nullif(upper(regexp_extract(
        regexp_replace(lower(coalesce(cast({{ expr }} as string), '')), '[-_.]\d{5}-of-\d{5}(\.gguf)?$', '.gguf'),
        '[-_.]((ud[-_])?(i?q[0-9]+_[a-z0-9]+(_[a-z0-9]+)*|f16|bf16|f32|mxfp4(_moe)?))\.gguf$', 1)), '')
{%- endmacro %}


{#- A provisional id for a name no catalogue entry matches: "unresolved:<slug of the key>". -#}
{% macro provisional_id(normalised_expr, raw_expr) -%}
    'unresolved:' || coalesce(
        nullif({{ trim_chars(regexp_replace_all(normalised_expr, '[^a-z0-9.+]+', '-'), '-') }}, ''),
        case when nullif(trim(cast({{ raw_expr }} as string)), '') is null then 'unknown'
             else 'raw-' || substr({{ md5_hex('cast(' ~ raw_expr ~ ' as string)') }}, 1, 10) end)
{%- endmacro %}


{#- A run measured on the CPU alone: no GPU name, or what tools write instead of one
    ('CPU only' from benchwh bench). -#}
{% macro is_cpu_only(expr) -%}
    coalesce(lower(trim({{ expr }})) in ('cpu only', 'cpu', 'none', ''), true)
{%- endmacro %}
