"""Scale benchmark (DESIGN §8): a seeded generator of raw inputs and a runner timing the pipeline.

    python -m benchmarks.run --scale 0.02 [--out bench.json]

Scale 1 is the DESIGN §8 scale: 100,000 LocalScore runs x 9 tests, 100,000 signed run-file
samples, 400 OpenRouter models x 730 daily snapshots.
"""
