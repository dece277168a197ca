"""Named measuring protocols. A protocol fixes the prompt, the answer length, the sampling and
the repetitions, so runs on different machines measure the same thing."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ingest.measure import text

# Context sizes (tokens) the recall walk tries, smallest first (`benchwh bench --recall`).
RECALL_SIZES = (4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class Protocol:
    name: str
    prompt_tokens: int  # nominal size of the prompt; the server's own count goes into each sample
    gen_tokens: int  # max_tokens asked for
    temperature: float
    seed: int
    warmup: int
    repetitions: int  # measured repetitions
    prompt_seed: int  # fixes the filler text: the same prompt on every machine

    @property
    def sampling(self) -> dict:
        return {"temperature": self.temperature, "seed": self.seed}

    def messages(self) -> list[dict]:
        intro = ("Below are notes from a village diary. Read them, then continue the diary with a "
                 "long and detailed account of the next day. Write at least 600 words and do not "
                 "stop early.\n\n")
        n_words = text.words_for_tokens(self.prompt_tokens, text.DEFAULT_TOKENS_PER_WORD) \
            - text.word_count(intro)
        body = " ".join(text.filler(n_words, self.prompt_seed))
        return [{"role": "user", "content": intro + body}]

    def with_counts(self, warmup: int | None = None, repetitions: int | None = None,
                    gen_tokens: int | None = None) -> "Protocol":
        """The protocol with overridden counts, named for what is actually run.

        A run with other counts measures something else (a 20-token answer, a cold first
        repetition, three samples), so it must not share the named protocol's test profile:
        `gen-1k` run with --max-tokens 20 --repetitions 3 --warmup 0 is `gen-1k/tg20/r3/w0`.
        """
        changed = replace(self,
                          warmup=self.warmup if warmup is None else warmup,
                          repetitions=self.repetitions if repetitions is None else repetitions,
                          gen_tokens=self.gen_tokens if gen_tokens is None else gen_tokens)
        return replace(changed, name=custom_name(self, changed))


PROTOCOLS = {
    "gen-1k": Protocol(name="gen-1k", prompt_tokens=1000, gen_tokens=200, temperature=0.0, seed=42,
                       warmup=1, repetitions=10, prompt_seed=1000),
}


def custom_name(standard: Protocol, run: Protocol) -> str:
    """`standard.name`, plus one `/<field><value>` part per count that differs from it."""
    parts = [standard.name]
    if run.gen_tokens != standard.gen_tokens:
        parts.append(f"tg{run.gen_tokens}")
    if run.repetitions != standard.repetitions:
        parts.append(f"r{run.repetitions}")
    if run.warmup != standard.warmup:
        parts.append(f"w{run.warmup}")
    return "/".join(parts)


def get(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise KeyError(f"unknown protocol {name!r} (known: {', '.join(sorted(PROTOCOLS))})") from None
