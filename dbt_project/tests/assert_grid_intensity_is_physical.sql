-- No grid emits more than ~1,300 gCO2/kWh (lignite); anything above 2,000 is a unit or parsing error.
select area, year, gco2_per_kwh
from {{ ref('fct_grid_intensity') }}
where gco2_per_kwh < 0 or gco2_per_kwh > 2000
