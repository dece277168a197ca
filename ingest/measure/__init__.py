"""`benchwh bench`: measure a model served on this machine and produce a signed run file.

client.py     streaming OpenAI-compatible client with client-side timing and one-line errors
protocols.py  named protocols (gen-1k)
measure.py    one repetition -> one sample (retried once when the stream is cut)
recall.py     the context-recall walk (4K..128K tokens)
machine.py    GPU / CPU / RAM / OS / engine probes
power.py      nvidia-smi power sampling during the measured repetitions
stats.py      median and DESIGN §7 interval for the printed summary
runner.py     the whole run: measure, describe, validate, sign, write
See docs/bench.md for the definitions and choices. Named `measure` (the command stays `benchwh bench`)
so it is not taken for the scale benchmark in `benchmarks/`.
"""
