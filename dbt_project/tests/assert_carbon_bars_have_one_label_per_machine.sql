-- The carbon section draws a bar per machine (its lowest build) under machine_label: two machines
-- under one label would stack into one bar and read as one machine's figure.
select model_id, machine_label, count(*) as n_bars
from {{ ref('model_carbon') }}
where is_lowest_on_machine
group by model_id, machine_label
having count(*) > 1
