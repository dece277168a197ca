select *
from {{ ref('stg_quarantine__records') }}
order by source, raw_sha256, record_index nulls first, column_name, check_name
