"""Landing: validate parsed payloads with pandera and land them as Parquet; failing rows to quarantine.

  lander    Lander: parse pending payloads, land them one by one or in batches
  lock      the lock on a source's landing folder (whole landing vs one backfill partition)
  ledger    the only reader and writer of landing/<source>/_ledger/ (what became of each payload)
  validate  pandera validation, the quarantine rows and files
  parquet   Parquet writing and reading, pandera dtype -> DuckDB type
  rules     the volume rule and the quarantine share limit
  schema    LandingSchema, the base of every entity's pandera model
"""
from ingest.landing.lander import BATCH_PAYLOADS, BATCH_ROWS, SMALL_LANDING, Lander
from ingest.landing.ledger import Ledger, PayloadOutcome
from ingest.landing.parquet import landed_values_reader, model_column_types, write_parquet
from ingest.landing.rules import QUARANTINE_SHARE_LIMIT, volume_min_share, volume_reference, volume_short
from ingest.landing.schema import LandingSchema
from ingest.landing.validate import QUARANTINE_COLUMNS, SchemaLevelError, validate_frame, validate_pieces

__all__ = [
    "BATCH_PAYLOADS", "BATCH_ROWS", "QUARANTINE_COLUMNS", "QUARANTINE_SHARE_LIMIT", "SMALL_LANDING",
    "LandingSchema", "Lander", "Ledger", "PayloadOutcome", "SchemaLevelError", "landed_values_reader",
    "model_column_types", "validate_frame", "validate_pieces", "volume_min_share", "volume_reference",
    "volume_short", "write_parquet",
]
