"""One repetition: send the protocol's request, turn the client-side timings into a sample."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ingest.bench import text
from ingest.bench.client import BenchError, ChatClient, StreamCut, StreamResult
from ingest.bench.protocols import Protocol


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

    def as_payload(self) -> dict:
        return asdict(self)


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
    decode_s = result.last_token_at - result.first_token_at
    if gen_tokens < 2 or decode_s <= 0:
        raise BenchError(f"the model generated only {gen_tokens} token(s): tokens per second "
                         "cannot be measured (is max_tokens honoured?)")
    return Sample(
        prompt_tokens=int(prompt_tokens),
        gen_tokens=int(gen_tokens),
        ttft_ms=round(ttft_s * 1000, 3),
        prompt_tps=round(prompt_tokens / ttft_s, 3),
        # tokens after the first, over the time from the first to the last
        gen_tps=round((gen_tokens - 1) / decode_s, 3),
        turn_time_ms=round((result.last_token_at - result.sent_at) * 1000, 3),
        token_counts=counted,
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
