"""One repetition: send the protocol's request, turn the client-side timings into a sample."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ingest.measure import text
from ingest.measure.client import BenchError, ChatClient, StreamCut, StreamResult
from ingest.measure.protocols import Protocol
from ingest.sources.runs.payload import MAX_GEN_TPS


@dataclass
class Sample:
    prompt_tokens: int
    gen_tokens: int
    ttft_ms: float
    prompt_tps: float
    gen_tps: float
    turn_time_ms: float
    # "usage": both counts from the server's usage block; "stream": generated tokens counted
    # from the stream's chunks and the prompt estimated from its words (the server sent no usage)
    token_counts: str
    # "span" or "turn" (see decode_rate); said on screen, not a run-file field
    timed_over: str = "span"

    def as_payload(self) -> dict:
        row = asdict(self)
        del row["timed_over"]
        return row


# Below this span the client cannot tell decoding from delivery: tokens a busy server or a proxy
# held back arrive together, and a count over microseconds gives an impossible tok/s.
MIN_DECODE_S = 0.005


def decode_rate(result: StreamResult, gen_tokens: int) -> tuple[float, str]:
    """Generated tokens per second, and how it was timed.

    `span`: the tokens that arrived after the first read, over the time from the first read to
    the last (chunks in the first read cannot be timed; with usage counts a chunk may carry
    several tokens, so they are shared out by chunk). `turn`: when the timed span is shorter than
    MIN_DECODE_S (the answer came in a burst), all generated tokens over the whole turn, from
    sending the request to the last token: a lower bound, never an impossible rate.
    """
    arrivals = result.token_arrivals or [result.first_token_at, result.last_token_at]
    first = arrivals[0]
    timed_chunks = sum(1 for t in arrivals if t > first)
    span_s = arrivals[-1] - first
    if timed_chunks and span_s >= MIN_DECODE_S:
        rate = gen_tokens * timed_chunks / len(arrivals) / span_s
        if rate <= MAX_GEN_TPS:
            return rate, "span"
    return gen_tokens / (arrivals[-1] - result.sent_at), "turn"


def to_sample(result: StreamResult, prompt_words: int) -> Sample:
    if result.first_token_at is None or result.last_token_at is None:
        raise BenchError("the model generated no tokens (empty answer)")
    usage = result.usage or {}
    if isinstance(usage.get("completion_tokens"), int) and isinstance(usage.get("prompt_tokens"), int) \
            and usage["completion_tokens"] > 0:
        gen_tokens, prompt_tokens, counted = usage["completion_tokens"], usage["prompt_tokens"], "usage"
    else:
        gen_tokens = result.stream_tokens
        prompt_tokens = round(prompt_words * text.DEFAULT_TOKENS_PER_WORD)
        counted = "stream"
    ttft_s = result.first_token_at - result.sent_at
    if gen_tokens < 2:
        raise BenchError(f"the model generated only {gen_tokens} token(s): tokens per second "
                         "cannot be measured (is max_tokens honoured?)")
    gen_tps, timed_over = decode_rate(result, gen_tokens)
    return Sample(
        prompt_tokens=int(prompt_tokens),
        gen_tokens=int(gen_tokens),
        ttft_ms=round(ttft_s * 1000, 3),
        prompt_tps=round(prompt_tokens / ttft_s, 3),
        gen_tps=round(gen_tps, 3),
        turn_time_ms=round((result.last_token_at - result.sent_at) * 1000, 3),
        token_counts=counted,
        timed_over=timed_over,
    )


def run_repetition(client: ChatClient, protocol: Protocol, log=print, label: str = "",
                   extra: dict | None = None) -> tuple[Sample, StreamResult]:
    """One repetition, retried once when the stream is cut; a second cut fails the run."""
    messages = protocol.messages()
    words = sum(text.word_count(m["content"]) for m in messages)
    for attempt in (1, 2):
        try:
            result = client.stream_chat(messages, max_tokens=protocol.gen_tokens,
                                        temperature=protocol.temperature, seed=protocol.seed,
                                        extra=extra)
        except StreamCut as exc:
            if attempt == 2:
                raise StreamCut(f"{exc} (twice in a row{', ' + label if label else ''})") from None
            log(f"  {label}: {exc}; retrying once")
            continue
        return to_sample(result, words), result
    raise AssertionError("unreachable")
