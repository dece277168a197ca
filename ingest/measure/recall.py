"""The context-recall walk: can the model find one sentence hidden in a long prompt?

At each size (4K, 8K, ... 128K tokens) a random needle sentence is put at a random depth in
filler prose and the model is asked for the code it holds. The walk stops at the first size
the server cannot hold: beyond its known context, or when it refuses or fails the request.
A wrong answer is a finding (recalled: false), not a reason to stop.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from ingest.measure import text
from ingest.measure.client import BenchError, ChatClient
from ingest.measure.protocols import RECALL_SIZES as SIZES

# room left in the context for the chat template, the question and the answer
_RESERVE_TOKENS = 160
_ANSWER_TOKENS = 32
# plan a little under the size: the tokens-per-word ratio is an estimate
_FILL = 0.97

_CITIES = ["Lisbon", "Osaka", "Quito", "Tallinn", "Accra", "Perth", "Bergen", "Cusco",
           "Hanoi", "Dakar", "Tbilisi", "Galway"]
_WORDS = ["amber", "falcon", "copper", "meadow", "violet", "granite", "harbor", "cinder",
          "walnut", "orchid", "pepper", "thistle"]


@dataclass
class RecallResult:
    context_tokens: int  # the size of the step (4096, 8192, ...)
    recalled: bool
    prompt_tokens: int | None = None  # as the server counted them, when it said
    depth: float | None = None  # where the needle sat, 0 = start, 1 = end


@dataclass
class RecallWalk:
    results: list[RecallResult]
    stopped_at: int | None  # the size the server could not hold
    stop_reason: str | None
    server_failed: bool = False  # the server refused or dropped the request (else: its stated limit)

    @property
    def largest_recalled(self) -> int | None:
        held = [r.context_tokens for r in self.results if r.recalled]
        return max(held) if held else None

    def stopped(self) -> dict | None:
        """Why the walk ended, as the run file's context_recall_stopped (DESIGN §6).

        could_not_hold: the server failed the request, or its context is smaller than the next
        size; forgot: the last size tried came back without the needle; reached_trained_context:
        every size of the walk was asked and the last one recalled.
        """
        last = self.results[-1] if self.results else None
        if self.stopped_at is not None and (self.server_failed or last is None or last.recalled):
            return {"reason": "could_not_hold", "at_tokens": self.stopped_at}
        if last is None:
            return None
        if not last.recalled:
            return {"reason": "forgot", "at_tokens": last.context_tokens}
        return {"reason": "reached_trained_context", "at_tokens": last.context_tokens}


def needle(rng: random.Random) -> tuple[str, str, str]:
    """(sentence, question, code)."""
    city = rng.choice(_CITIES)
    code = f"{rng.choice(_WORDS)}-{rng.randint(1000, 9999)}"
    sentence = f"The secret code for the {city} vault is {code}."
    question = (f"What is the secret code for the {city} vault, as written in the text above? "
                "Answer with the code only.")
    return sentence, question, code


def build_prompt(size: int, tokens_per_word: float, rng: random.Random) -> tuple[list[dict], str, float]:
    sentence, question, code = needle(rng)
    n_words = text.words_for_tokens(int(size * _FILL) - _RESERVE_TOKENS, tokens_per_word)
    sentences = text.filler(n_words, seed=rng.randint(0, 2**31))
    at = rng.randint(0, len(sentences))
    depth = at / max(1, len(sentences))
    sentences.insert(at, sentence)
    content = ("Read the following text carefully.\n\n" + " ".join(sentences) + "\n\n" + question)
    return [{"role": "user", "content": content}], code, depth


def _normalise(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def context_limit(client: ChatClient) -> int | None:
    """The server's context size when it says: llama-server /props, vLLM and LM Studio model lists."""
    props = client.get_json("/props")
    if isinstance(props, dict):
        settings = props.get("default_generation_settings") or {}
        for value in (settings.get("n_ctx"), props.get("n_ctx")):
            if isinstance(value, int) and value > 0:
                return value
    models = client.get_json("/v1/models")
    if isinstance(models, dict):
        for m in models.get("data") or []:
            if isinstance(m, dict) and m.get("id") == client.model:
                for key in ("max_model_len", "context_length", "loaded_context_length"):
                    if isinstance(m.get(key), int) and m[key] > 0:
                        return m[key]
    lms = client.get_json(f"/api/v0/models/{client.model}")
    if isinstance(lms, dict) and isinstance(lms.get("loaded_context_length"), int):
        return lms["loaded_context_length"]
    return None


def walk(client: ChatClient, tokens_per_word: float, seed: int, limit: int | None = None,
         sizes: tuple[int, ...] = SIZES, log=print) -> RecallWalk:
    rng = random.Random(seed)
    results: list[RecallResult] = []
    ratio = tokens_per_word
    for size in sizes:
        if limit is not None and size > limit:
            reason = f"the server's context is {limit} tokens"
            log(f"  recall {size // 1024}K: not tried, {reason}")
            return RecallWalk(results, size, reason)
        messages, code, depth = build_prompt(size, ratio, rng)
        words = text.word_count(messages[0]["content"])
        try:
            res = client.stream_chat(messages, max_tokens=_ANSWER_TOKENS, temperature=0.0, seed=0)
        except BenchError as exc:  # refused, timed out, dropped: all mean it cannot hold this size
            reason = str(exc)
            log(f"  recall {size // 1024}K: the server could not hold it: {reason}")
            return RecallWalk(results, size, reason, server_failed=True)
        prompt_tokens = (res.usage or {}).get("prompt_tokens")
        if isinstance(prompt_tokens, int) and prompt_tokens > 0:
            ratio = prompt_tokens / words  # the server's own count plans the next size
        else:
            prompt_tokens = None
        recalled = _normalise(code) in _normalise(res.text)
        results.append(RecallResult(size, recalled, prompt_tokens, round(depth, 3)))
        log(f"  recall {size // 1024}K: {'recalled' if recalled else 'NOT recalled'} "
            f"(needle at {depth:.0%} depth{f', {prompt_tokens} prompt tokens' if prompt_tokens else ''})")
    return RecallWalk(results, None, None)
