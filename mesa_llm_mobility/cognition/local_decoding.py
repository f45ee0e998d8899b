"""A local GGUF model decoding under a JSON schema, fast: llguidance's masks over llama.cpp's logits.

llama.cpp's own grammar sampler walks Gemma's 262,144-token vocabulary for every token (85 ms a
token against 10 ms of evaluation, llama.cpp #7554); llguidance computes the same mask in about a
millisecond. :class:`LocalDecoder` runs the model through llama-cpp-python's low-level ``eval``
and picks each token itself: the logits of the last position (a zero-copy view), llguidance's
bitmask of the tokens the schema allows next, the best (or a sampled) allowed token. Tokens the
schema forces (``{"``, a key's name, ``":``) are taken without sampling and evaluated in one
batch. The prompt's prefix already in the model's cache (the schema instruction that opens every
prompt of a kind, the conversation before a repair round) is not evaluated again.

``python -m mesa_llm_mobility.cognition.local_decoding --model GEMMA.gguf --port 8765`` serves it
(:mod:`~mesa_llm_mobility.cognition.local_server`: Gemma's chat template, one queue). Requires the
``local-llm`` extra (``llama-cpp-python`` and ``llguidance``); imported only by that process.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
from llguidance import LLMatcher, LLTokenizer

from mesa_llm_mobility.cognition.local_server import (
    GEMMA_STOP_PIECES,
    Generation,
    PromptTooLongError,
    closed_objects,
    serve,
)

JSON_OPTIONS = {"whitespace_flexible": False}
"""llguidance's JSON options: compact separators (no token is spent on indentation)."""


class LocalDecoder:
    """A GGUF model in llama.cpp, answering one request at a time under an optional schema.

    Args:
        model_path: The GGUF file.
        context_tokens: The context window.
        threads: CPU threads of the evaluation.
        batch_tokens: Tokens evaluated per batch (a prompt is evaluated in batches).

    Not thread-safe: the server holds one decoder and a queue in front of it.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        context_tokens: int = 4096,
        threads: int = 2,
        batch_tokens: int = 512,
    ) -> None:
        self.llm = llama_cpp.Llama(
            model_path=str(model_path),
            n_ctx=context_tokens,
            n_threads=threads,
            n_threads_batch=threads,
            n_batch=batch_tokens,
            logits_all=False,
            verbose=False,
        )
        self.context_tokens = context_tokens
        vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(vocab))
        pieces = _token_pieces(vocab, self.n_vocab)
        self.stop_tokens = frozenset(
            index for index, piece in enumerate(pieces) if _is_stop(piece)
        ) | {int(llama_cpp.llama_vocab_eos(vocab))}
        self.tokenizer = LLTokenizer.from_llamacpp(  # type: ignore[attr-defined]
            tokens=pieces,
            vocab_ptr=vocab,
            tokenize_fptr=ctypes.cast(llama_cpp.llama_tokenize, ctypes.c_void_p).value,
            eos_token=sorted(self.stop_tokens),
            slices=None,
        )
        self._mask = np.zeros((self.n_vocab + 31) // 32, dtype=np.int32)
        self._lock = threading.Lock()

    def tokenize(self, text: str) -> list[int]:
        """Tokens of a rendered prompt (its special pieces as special tokens)."""
        return self.llm.tokenize(text.encode(), add_bos=False, special=True)

    def grammar(self, schema: Mapping[str, Any]) -> str:
        """The grammar of a JSON schema for llguidance (objects closed, compact JSON).

        Raises:
            ValueError: naming the problem when the schema cannot be compiled.
        """
        try:
            return LLMatcher.grammar_from_json_schema(
                closed_objects(dict(schema)), defaults=dict(JSON_OPTIONS)
            )
        except Exception as error:  # llguidance raises its own error types
            raise ValueError(f"the JSON schema cannot be compiled: {error}") from None

    def generate(
        self,
        prompt: list[int],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        seed: int | None = None,
        cancelled: threading.Event | None = None,
    ) -> Generation:
        """Answer ``prompt`` (tokens), under ``grammar`` when given.

        Args:
            prompt: The prompt's tokens.
            grammar: A grammar from :meth:`grammar`, or ``None`` for free text.
            max_tokens: Most tokens of the answer (``finish_reason`` ``length`` when reached).
            temperature: 0 picks the likeliest allowed token; above, samples the allowed
                tokens' softmax at this temperature.
            seed: Seed of the sampling (``None``: fresh entropy).
            cancelled: Set by the server when the client went away: the answer ends at the
                next token, ``finish_reason`` ``cancelled``.

        Raises:
            PromptTooLongError: when the prompt leaves no room for an answer.
        """
        if len(prompt) + 1 > self.context_tokens:
            raise PromptTooLongError(
                f"the prompt has {len(prompt)} tokens; the context holds "
                f"{self.context_tokens}"
            )
        max_tokens = min(max_tokens, self.context_tokens - len(prompt))
        with self._lock:
            matcher = None if grammar is None else LLMatcher(self.tokenizer, grammar)
            if matcher is not None and matcher.is_error():
                raise ValueError(f"the grammar is refused: {matcher.get_error()}")
            rng = np.random.default_rng(seed)
            started = time.perf_counter()
            evaluated = self._evaluate(prompt)
            prompt_done = time.perf_counter()
            answer: list[int] = []
            finish = "length"
            while len(answer) < max_tokens:
                if cancelled is not None and cancelled.is_set():
                    finish = "cancelled"
                    break
                forced = matcher.compute_ff_tokens() if matcher is not None else []
                if len(forced) > 1:  # the schema writes these: one batch, no sampling
                    forced = forced[: max_tokens - len(answer)]
                    matcher.consume_tokens(forced)
                    answer.extend(forced)
                    self.llm.eval(forced)
                    continue
                token = self._pick(matcher, temperature, rng)
                if matcher is not None:
                    matcher.consume_token(token)
                if token in self.stop_tokens:
                    finish = "stop"
                    break
                answer.append(token)
                if matcher is not None and matcher.is_stopped():
                    finish = "stop"
                    break
                self.llm.eval([token])
            text = self.llm.detokenize(answer, special=False).decode(errors="replace")
            return Generation(
                len(prompt),
                answer,
                text,
                finish,
                evaluated=evaluated,
                prompt_s=prompt_done - started,
                answer_s=time.perf_counter() - prompt_done,
            )

    def _evaluate(self, prompt: list[int]) -> int:
        """Evaluate ``prompt``, reusing the cached prefix it shares with the last one.

        Returns:
            The tokens evaluated.
        """
        cached = self.llm.input_ids[: self.llm.n_tokens]
        shared = 0
        limit = min(
            len(cached), len(prompt) - 1
        )  # the last token is evaluated for logits
        while shared < limit and cached[shared] == prompt[shared]:
            shared += 1
        self.llm.n_tokens = shared
        self.llm.eval(prompt[shared:])
        return len(prompt) - shared

    def _pick(
        self,
        matcher: LLMatcher | None,
        temperature: float,
        rng: np.random.Generator,
    ) -> int:
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(self.llm.ctx, -1), shape=(self.n_vocab,)
        )
        if matcher is None:
            candidates = np.arange(self.n_vocab)
        else:
            matcher.unsafe_compute_mask_ptr(self._mask.ctypes.data, self._mask.nbytes)
            allowed = np.unpackbits(self._mask.view(np.uint8), bitorder="little")
            candidates = np.flatnonzero(allowed[: self.n_vocab])
            if len(candidates) == 0:  # the matcher failed: end the answer
                return min(self.stop_tokens)
        scores = logits[candidates]
        if temperature <= 0:
            return int(candidates[int(np.argmax(scores))])
        weights = np.exp((scores - scores.max()) / temperature)
        return int(rng.choice(candidates, p=weights / weights.sum()))


def _token_pieces(vocab: Any, n_vocab: int) -> list[bytes]:
    """Every token's bytes; control tokens marked with a leading 0xFF (llguidance's way)."""
    buffer = ctypes.create_string_buffer(1024)
    to_piece = llama_cpp.llama_token_to_piece
    token_attr = llama_cpp.llama_token_get_attr
    control = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
    user_defined = llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    pieces = []
    for token in range(n_vocab):
        length = to_piece(vocab, token, buffer, 1024, 0, True)
        piece = buffer.raw[: max(length, 0)]
        attr = token_attr(vocab, token)
        if attr & control or (
            attr & user_defined and piece.startswith(b"<") and piece.endswith(b">")
        ):
            piece = b"\xff" + piece
        pieces.append(piece)
    return pieces


def _is_stop(piece: bytes) -> bool:
    return piece.startswith(b"\xff") and piece[1:].decode(errors="replace") in (
        GEMMA_STOP_PIECES
    )


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m mesa_llm_mobility.cognition.local_decoding",
        description="Serve a GGUF model on a local OpenAI-compatible API (Gemma's template, "
        "JSON schemas decoded with llguidance).",
    )
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--alias", default="gemma3-270m", help="the model's name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--context-tokens", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log-level", default="WARNING")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Load the model, then serve until SIGTERM or SIGINT (see :mod:`.local_server`)."""
    args = _parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    decoder = LocalDecoder(
        args.model, context_tokens=args.context_tokens, threads=args.threads
    )
    serve(decoder, args.alias, args.host, args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
