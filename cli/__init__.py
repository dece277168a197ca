"""`benchwh`, the command line: argparse tree in main.py, one module per command group (no Dagster wiring here)."""
