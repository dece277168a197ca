"""Prompt text: deterministic filler prose, sized in tokens without a tokenizer.

We cannot ship every model's tokenizer, so sizes are planned in words with a tokens-per-word
ratio: 1.3 to start (plain English of short common words), then the ratio the server itself
reports (`usage.prompt_tokens` / words sent) once a request has come back.
"""
from __future__ import annotations

import random
from typing import Iterator

DEFAULT_TOKENS_PER_WORD = 1.3

_SUBJECTS = ["the farmer", "a young teacher", "the old sailor", "my neighbour", "the baker",
             "a quiet student", "the gardener", "her brother", "the driver", "a tired nurse",
             "the miller", "our guide", "the painter", "his sister", "the keeper"]
_VERBS = ["carried", "found", "painted", "cleaned", "watched", "moved", "fixed", "sold",
          "counted", "opened", "closed", "checked", "filled", "shared", "kept"]
_ADJECTIVES = ["small", "green", "heavy", "old", "bright", "long", "warm", "empty", "round",
               "quiet", "wooden", "simple", "clean", "broad", "soft"]
_NOUNS = ["basket", "window", "boat", "garden", "letter", "table", "bridge", "field",
          "lamp", "road", "barn", "river", "chair", "door", "fence", "cart", "wall", "box"]
_PLACES = ["near the river", "in the morning", "after lunch", "before the rain",
           "behind the barn", "at the market", "by the old mill", "under the trees",
           "along the road", "in the evening", "at the harbour", "on the hill"]


def filler_sentences(rng: random.Random) -> Iterator[str]:
    while True:
        yield (f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} the "
               f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} {rng.choice(_PLACES)}.")


def filler(n_words: int, seed: int) -> list[str]:
    """Sentences of plain prose totalling at least n_words words, the same for the same seed."""
    rng = random.Random(seed)
    out: list[str] = []
    words = 0
    for sentence in filler_sentences(rng):
        if words >= n_words:
            break
        out.append(sentence)
        words += len(sentence.split())
    return out


def word_count(text: str) -> int:
    return len(text.split())


def words_for_tokens(tokens: int, tokens_per_word: float) -> int:
    return max(1, int(tokens / tokens_per_word))
