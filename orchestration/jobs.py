import dagster as dg

from orchestration.tags import OFFLINE_TAG, SERIAL_REFRESH, SERIAL_TAG

# Never two refreshes at once: the run queue limits this tag to 1 (see dagster.yaml written by
# orchestration.instance), and publish holds a lock file in the warehouse home as well.
refresh_job = dg.define_asset_job(
    name="refresh",
    selection=dg.AssetSelection.all(),
    description="All sources, then dbt build and tests, then atomic publish.",
    tags={SERIAL_TAG: SERIAL_REFRESH},
)

# The same job on the bundled recordings, no network: the UI's launch choice for a demo build
# (what `benchwh refresh --offline` and `make refresh` run). "Materialize all" in the asset graph
# and the `refresh` job fetch live.
refresh_offline_job = dg.define_asset_job(
    name="refresh_offline",
    selection=dg.AssetSelection.all(),
    description="Like refresh, but every source replays its bundled recording (demo data, no network).",
    tags={SERIAL_TAG: SERIAL_REFRESH, OFFLINE_TAG: "1"},
)
