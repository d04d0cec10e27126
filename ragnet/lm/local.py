"""A local GGUF model as a DSPy 3.4 engine, through llama.cpp.

DSPy 3.4 runs custom models through its *engine* API: an object with
``complete(request: dspy.lm15.Request) -> dspy.lm15.Response`` passed as
``dspy.LM(model, engine=...)``. DSPy keeps caching, retries, history, callbacks
and usage accounting; the engine makes one attempt. :class:`LlamaCppEngine` is
that engine for ``llama_cpp.Llama``:

* the prompt is rendered with the model's own chat template (from the GGUF
  metadata), so system/user/assistant turns look the way the model was trained;
* decoding is greedy by default (temperature 0), so a prompt read from scratch gets the same
  answer every time; a prompt whose prefix comes from the KV cache (computed in other batch
  splits) can differ in the last digits of its logits, and so occasionally in a greedy token.
  Agent runs can therefore take other paths depending on what ran before them in the
  process (the demo's IterativeRAG: L3 wrong after basic/oneshot ran, right when run alone);
* every call has a wall-clock ``timeout``: the prompt is read in slices and generation stops at
  the first slice or token past the limit, raising :class:`~ragnet.lm.deadline.LMCallTimeoutError`.
  The default, ``"auto"``, gives each call a multiple of what this machine was measured to need
  for it (:mod:`ragnet.lm.call_time`), so a slow CPU is not failed and a contended one is caught;
* ``Response.usage`` carries the real prompt and completion token counts;
* ``stream`` (DSPy's streaming hook, which ``dspy.streamify`` and ``ragnet serve``'s
  ``stream: true`` use) yields the text as llama.cpp generates it: the same prompt, loop guard,
  deadline and usage as ``complete``, and a stream closed early stops at the next token;
* with ``grammar=True``, JSON-schema response formats (DSPy's ``JSONAdapter``)
  become a llama.cpp grammar, so structured output is always valid JSON. It is off
  by default: llama-cpp-python's grammar sampler checks candidate tokens in Python
  against the whole vocabulary, which makes generation several times slower on CPU.
  Without it the JSONAdapter's prompt alone gets well-formed JSON from the model
  almost always, and ragnet's steps repair or retry the rest.

One ``Llama`` per (file, context size, threads) is loaded per process and shared
by every engine that asks for it; calls on it are serialised with a lock, so
concurrent DSPy programs are safe (they queue).

Example:
    >>> import dspy, pathlib, tempfile
    >>> from ragnet.lm.local import LlamaCppEngine
    >>> gguf = pathlib.Path(tempfile.mkdtemp()) / "my-model.gguf"; _ = gguf.write_bytes(b"")
    >>> engine = LlamaCppEngine(gguf)            # the model loads on the first call, not here
    >>> lm = dspy.LM(engine.model_name, engine=engine, num_retries=0)   # what ragnet.configure("local") builds
    >>> lm.model
    'llamacpp/my-model'
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import json
import os
import re
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, AsyncIterator, Iterator, Sequence

from dspy.clients.engines.base import validate_request
from dspy.lm15 import (
    ContextLengthError,
    Message,
    Request,
    Response,
    StreamDeltaEvent,
    StreamEndEvent,
    StreamStartEvent,
    TextDelta,
    TextPart,
    TokenLogprob,
    TopLogprob,
    UnsupportedFeatureError,
    Usage,
)

from ragnet.errors import InputError, MissingDependencyError, RagnetError, require
from ragnet.lm.call_time import AUTO, CallLimit, Speed, check_timeout
from ragnet.lm import stop as request_stop
from ragnet.lm.deadline import LMCallStopped, LMCallTimeoutError
from ragnet.lm.models import resolve_model_path

__all__ = ["AsyncLlamaCppEngine", "LlamaCppEngine", "default_threads"]

# ChatML, for GGUF files that carry no chat template of their own.
_CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class _Loaded:
    """A loaded model, its lock, its chat formatter and the speed it has shown on this machine."""

    def __init__(self, llm: Any, formatter: Any) -> None:
        self.llm = llm
        self.formatter = formatter
        self.lock = threading.Lock()
        self.speed = Speed()


_MODELS: dict[tuple, _Loaded] = {}
_MODELS_LOCK = threading.Lock()


def default_threads() -> int:
    """All CPUs on small machines (<= 4), half of them on larger ones (llama-cpp-python's default,
    which assumes hyper-threads).

    On an idle machine every core speeds generation up. But llama.cpp threads wait for each
    other with spin barriers, so more threads than the machine can really give slows a call
    down many times over. Set ``RAGNET_LM_THREADS=1`` when the CPU is shared.
    """
    cpus = os.cpu_count() or 2
    return cpus if cpus <= 4 else cpus // 2


def _kv_only_cache(llama_cpp: Any, capacity_bytes: int) -> Any:
    """A ``LlamaRAMCache`` that keeps only the KV state of each prompt, not its logits.

    llama-cpp-python's states also copy the logits buffer (n_batch x n_vocab floats, large for
    Qwen's vocabulary), which its capacity accounting ignores, so a few dozen calls could
    exhaust the machine's memory. Logits are never needed from a cached prefix: generation always
    re-evaluates the last prompt token.
    """
    import numpy as np

    class KVOnlyCache(llama_cpp.LlamaRAMCache):
        def __setitem__(self, key, value) -> None:
            value.scores = np.zeros((1, value.scores.shape[-1]), dtype=np.single)
            super().__setitem__(key, value)

    return KVOnlyCache(capacity_bytes=capacity_bytes)


def _common_prefix(a, b) -> int:
    """Length of the common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _restore_longest_prefix(llm: Any, prompt: list[int]) -> None:
    """Load the cached KV state sharing the longest prefix with ``prompt``, if it beats the live one."""
    cache = getattr(llm, "cache", None)
    if cache is None:
        return
    try:
        state = cache[prompt]
    except KeyError:
        return
    stored = _common_prefix(state.input_ids[: state.n_tokens].tolist(), prompt)
    if stored > _common_prefix(llm.input_ids[: llm.n_tokens], prompt):
        llm.load_state(state)


def _model_name(path: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-") or "model"
    return f"llamacpp/{stem}"


# A small model at temperature 0 often falls into a loop (one sentence again and again) until
# max_tokens: long CPU time per call for an answer that fails to parse anyway.
# Generation stops once the last tokens are one block repeated _LOOP_REPEATS times.
_LOOP_MIN_PERIOD, _LOOP_MAX_PERIOD, _LOOP_REPEATS = 4, 64, 3


def _is_looping(tokens: Sequence[int]) -> bool:
    """True when ``tokens`` end with a block of 4-64 tokens repeated 3 times in a row.

    Example:
        >>> _is_looping([1, 2] + [5, 6, 7, 8, 9] * 3)
        True
        >>> _is_looping(list(range(40)))
        False
    """
    n = len(tokens)
    tail = list(tokens[max(0, n - _LOOP_REPEATS * _LOOP_MAX_PERIOD):])
    n = len(tail)
    for period in range(_LOOP_MIN_PERIOD, min(_LOOP_MAX_PERIOD, n // _LOOP_REPEATS) + 1):
        block = tail[n - period:]
        if all(tail[n - (k + 1) * period:n - k * period] == block for k in range(1, _LOOP_REPEATS)):
            return True
    return False


class _Call:
    """One generation under way: its prompt, its time limit, and what its stopping criteria saw."""

    def __init__(self, prompt: list[int], started: float, limit: CallLimit, speed: Speed) -> None:
        self.prompt, self.started, self.limit, self.speed = prompt, started, limit, speed
        self.generated = 0
        self.first_token_at = 0.0
        self.timed_out = self.looped = self.stopped = False
        self.options: dict[str, Any] = {}
        #: Each generated token's ``(id, logprob, [(id, logprob), ...] alternatives)`` when the request
        #: asked for logprobs (greedy decoding only), else None.
        self.steps: list[tuple[int, float, list[tuple[int, float]]]] | None = None
        self.top = 0
        self.llm: Any = None

    def past_deadline(self, input_ids: Any, logits: Any) -> bool:
        now = time.monotonic()
        self.generated += 1
        if self.generated == 1:
            self.first_token_at = now
        elif self.generated % 8 == 1:  # the rate after the first token (which replays the prompt's last)
            self.speed.saw_generation(self.generated - 1, now - self.first_token_at)
        if self.limit.over(now - self.started, generating=True):
            self.timed_out = True
            return True
        if request_stop.requested():  # the request is over (ragnet.lm.stop): free the model now
            self.stopped = True
            return True
        return False

    def looping(self, input_ids: Any, logits: Any) -> bool:
        # Checked every 4 tokens: the scan is cheap next to generating a token.
        if self.generated % 4 or self.generated < 3 * _LOOP_MIN_PERIOD:
            return False
        if _is_looping(input_ids[len(self.prompt):]):
            self.looped = True
            return True
        return False

    def record(self, input_ids: Any, logits: Any) -> bool:
        # Called once a token is drawn and before it is read. Without llama.cpp's logits_all (a
        # vocabulary of floats per context position) the ``logits`` handed here are not filled, but
        # the context still holds the row the token was drawn from; greedy decoding drew its argmax.
        if self.steps is not None:
            import numpy as np

            row = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),)).astype(np.float64)
            top = row.max()
            norm = top + np.log(np.exp(row - top).sum())
            best = np.argpartition(-row, self.top)[: self.top + 1] if self.top else [int(row.argmax())]
            ranked = sorted(((int(t), float(row[t] - norm)) for t in best), key=lambda x: -x[1])
            self.steps.append((ranked[0][0], ranked[0][1], ranked[1:] if self.top else []))
        return False

    def token_logprobs(self, generated: int, start: int = 0) -> tuple[TokenLogprob, ...] | None:
        """Recorded tokens ``start`` to ``generated`` as DSPy's ``TokenLogprob`` (None when none were asked)."""
        if self.steps is None:
            return None

        def text(token: int) -> str:
            return self.llm.detokenize([token]).decode("utf-8", "replace")

        return tuple(TokenLogprob(token=text(t), logprob=lp, token_id=t,
                                  top=tuple(TopLogprob(token=text(a), logprob=alp, token_id=a) for a, alp in alts))
                     for t, lp, alts in self.steps[start:generated])

    def finish(self, reason: str | None) -> str:
        # A loop cut short is reported like the max_tokens cut it would have become.
        return "length" if reason == "length" or self.looped else "stop"

    def provider_data(self, elapsed: float) -> dict[str, Any]:
        return {"elapsed_s": round(elapsed, 4), "stopped_loop": self.looped}


@contextlib.contextmanager
def _context_errors() -> Iterator[None]:
    """llama.cpp's "context window" ValueError as DSPy's ContextLengthError."""
    try:
        yield
    except ValueError as exc:
        if "context window" in str(exc):
            raise ContextLengthError(str(exc), provider="llama.cpp") from exc
        raise


class LlamaCppEngine:
    """DSPy engine that runs a local GGUF model with llama.cpp.

    Args:
        model_path: GGUF file; ``None`` uses :func:`ragnet.lm.models.resolve_model_path`
            (``$RAGNET_GGUF`` or the fetched default model).
        n_ctx: context window in tokens (prompt + answer).
        n_threads: CPU threads; default ``$RAGNET_LM_THREADS`` or :func:`default_threads`.
        temperature: used when the request does not set one (DSPy usually does).
        max_tokens: answer length used when the request does not set one.
        timeout: wall-clock seconds per call, counted from the moment the model is
            free (calls from several threads queue on one model); ``None`` = no limit;
            ``"auto"`` (default) = a multiple of what this machine was measured to need for
            the call's prompt and ``max_tokens``, at least 120 s (:mod:`ragnet.lm.call_time`).
            Checked between prompt slices and after each generated token.
        chat_template: Jinja chat template overriding the one in the GGUF file.
        n_gpu_layers: layers to offload when llama.cpp was built with GPU support.
        verbose: let llama.cpp print its load and timing logs.
        grammar: constrain JSON-schema response formats with a llama.cpp grammar (valid JSON
            guaranteed, several times slower generation on CPU; see the module docs).
        **llama_kwargs: passed to ``llama_cpp.Llama`` (e.g. ``n_batch``).

    The model is loaded on the first call (or by :meth:`load`), not here; a missing
    file or a missing ``llama_cpp`` fails here already, with the fix in the message.

    Example:
        >>> LlamaCppEngine("no-such-model.gguf")
        Traceback (most recent call last):
        ...
        ragnet.lm.models.ModelNotFoundError: ...no-such-model.gguf...
    """

    # Capability hints read by DSPy adapters (dspy.clients.capabilities).
    supports_function_calling = False
    supports_reasoning = False
    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "top_p", "top_k", "stop", "seed",
                                  "presence_penalty", "frequency_penalty", "response_format", "logprobs",
                                  "top_logprobs"})

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = 8192, n_threads: int | None = None,
                 temperature: float = 0.0, max_tokens: int = 512, timeout: float | str | None = AUTO,
                 chat_template: str | None = None, n_gpu_layers: int = 0, verbose: bool = False,
                 grammar: bool = False, **llama_kwargs: Any) -> None:
        if n_ctx < 256:
            raise InputError(f"n_ctx must be at least 256, got {n_ctx}", argument="n_ctx")
        if max_tokens < 1:
            raise InputError(f"max_tokens must be positive, got {max_tokens}", argument="max_tokens")
        timeout = check_timeout(timeout)
        self.model_path = resolve_model_path(model_path).resolve()
        if importlib.util.find_spec("llama_cpp") is None:
            raise MissingDependencyError(
                "llama_cpp is not installed (needed for the local model); run: pip install 'ragnet[local]' "
                "(builds llama-cpp-python from source, some minutes), or use a litellm model id instead of 'local'"
            )
        self.n_ctx = int(n_ctx)
        threads = n_threads or os.environ.get("RAGNET_LM_THREADS") or default_threads()
        try:
            self.n_threads = int(threads)
        except ValueError:
            raise InputError(f"thread count must be an integer, got {threads!r} (check RAGNET_LM_THREADS)",
                             argument="n_threads") from None
        if self.n_threads < 1:
            raise InputError(f"n_threads must be at least 1, got {self.n_threads}", argument="n_threads")
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.timeout = timeout
        self.chat_template = chat_template
        self.n_gpu_layers = int(n_gpu_layers)
        self.verbose = bool(verbose)
        self.llama_kwargs = dict(llama_kwargs)
        self.model_name = _model_name(self.model_path)
        self.grammar = bool(grammar)
        self._grammars: OrderedDict[str, Any] = OrderedDict()
        if self.grammar:  # a grammar reshapes the logits after the row logprobs are read from
            self.supported_params = type(self).supported_params - {"logprobs", "top_logprobs"}

    def __repr__(self) -> str:
        return (f"LlamaCppEngine({str(self.model_path)!r}, n_ctx={self.n_ctx}, n_threads={self.n_threads}, "
                f"timeout={self.timeout})")

    # ------------------------------------------------------------------ loading
    def _key(self) -> tuple:
        extra = tuple(sorted((k, repr(v)) for k, v in self.llama_kwargs.items()))
        return (str(self.model_path), self.n_ctx, self.n_threads, self.n_gpu_layers, self.chat_template, extra)

    def load(self) -> Any:
        """Load the model now (otherwise the first call does it); return the ``Llama``."""
        return self._loaded().llm

    def _loaded(self) -> _Loaded:
        key = self._key()
        with _MODELS_LOCK:
            loaded = _MODELS.get(key)
            if loaded is None:
                loaded = self._load_model()
                _MODELS[key] = loaded
        return loaded

    def _load_model(self) -> _Loaded:
        llama_cpp = require("llama_cpp", extra="local", purpose="the local model")
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:
            llm = llama_cpp.Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                  n_threads_batch=self.n_threads, n_gpu_layers=self.n_gpu_layers,
                                  verbose=self.verbose, **self.llama_kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            raise RagnetError(f"llama.cpp could not load {self.model_path}: {exc} "
                              "(is it a complete GGUF file? `ragnet fetch-model` re-downloads the default)") from exc
        # Keep KV states of recent prompts so a call reuses the longest cached prefix: each ragnet
        # step has its own long instruction prefix, and steps alternate, so llama.cpp's single
        # "last prompt" reuse alone would re-read every instruction block on every call.
        cache_mb = int(os.environ.get("RAGNET_LM_PREFIX_CACHE_MB", "1024"))
        if cache_mb > 0:
            llm.set_cache(_kv_only_cache(llama_cpp, cache_mb << 20))
        template = self.chat_template or llm.metadata.get("tokenizer.chat_template") or _CHATML_TEMPLATE
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                        stop_token_ids=[eos_id] if eos_id != -1 else None)
        return _Loaded(llm, formatter)

    @classmethod
    def unload_all(cls) -> None:
        """Forget every loaded model (memory is freed once no engine call holds it)."""
        with _MODELS_LOCK:
            loaded = list(_MODELS.values())
            _MODELS.clear()
        for item in loaded:
            close = getattr(item.llm, "close", None)
            if close is not None:
                with item.lock:
                    close()

    # ------------------------------------------------------------------ requests
    @staticmethod
    def _messages(request: Request) -> list[dict[str, str]]:
        if request.tools:
            raise UnsupportedFeatureError("the local llama.cpp engine does not support tools", feature="tools")
        messages: list[dict[str, str]] = []
        system = request.system
        if system is not None:
            if not isinstance(system, str):
                if not all(isinstance(p, TextPart) for p in system):
                    raise UnsupportedFeatureError("the local engine takes text-only system prompts", feature="media")
                system = "".join(p.text for p in system)
            messages.append({"role": "system", "content": system})
        for message in request.messages:
            text = message.text
            if text is None:
                kinds = sorted({type(p).__name__ for p in message.parts})
                raise UnsupportedFeatureError(f"the local engine takes text-only messages, got {kinds}",
                                              feature="media")
            role = {"developer": "system"}.get(message.role, message.role)
            messages.append({"role": role, "content": text})
        return messages

    def _grammar(self, response_format: dict | None) -> Any:
        if not response_format or not self.grammar:
            return None
        from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

        schema = response_format.get("schema") if response_format.get("type") == "json_schema" else None
        key = json.dumps(schema, sort_keys=True) if schema is not None else ""
        grammar = self._grammars.get(key)
        if grammar is None:
            try:
                grammar = (LlamaGrammar.from_json_schema(key, verbose=False) if schema is not None
                           else LlamaGrammar.from_string(JSON_GBNF, verbose=False))
            except Exception:  # a schema llama.cpp cannot express: any JSON object will do
                grammar = LlamaGrammar.from_string(JSON_GBNF, verbose=False)
            self._grammars[key] = grammar
            while len(self._grammars) > 32:
                self._grammars.popitem(last=False)
        return grammar

    def complete(self, request: Request) -> Response:
        """Run one request: render, generate (greedy by default), report usage.

        Raises:
            LMCallTimeoutError: generation passed ``timeout``.
            dspy.lm15.ContextLengthError: the prompt does not fit in ``n_ctx``
                (DSPy raises it as ``ContextWindowExceededError``).
            dspy.lm15.UnsupportedFeatureError: tools or non-text content.
        """
        validate_request(request)
        messages = self._messages(request)
        loaded = self._loaded()
        with loaded.lock:
            call = self._start(loaded, messages, request)
            with _context_errors():
                out = loaded.llm.create_completion(**call.options)
            elapsed = time.monotonic() - call.started
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        self._raise_if_late(call, elapsed)
        output_tokens = int(usage.get("completion_tokens", 0))
        return Response(
            id=out.get("id") or None,
            model=self.model_name,
            message=Message.assistant([TextPart(choice.get("text") or "")]),
            finish_reason=call.finish(choice.get("finish_reason")),
            usage=Usage(input_tokens=int(usage.get("prompt_tokens", len(call.prompt))), output_tokens=output_tokens),
            logprobs=call.token_logprobs(output_tokens),
            provider_data=call.provider_data(elapsed),
        )

    def stream(self, request: Request) -> Iterator[Any]:
        """Run one request as :meth:`complete` does, yielding the text as llama.cpp generates it
        (DSPy's streaming hook: ``dspy.streamify`` reads these events).

        The model stays locked until the stream ends; a consumer that closes it early (a client
        gone) stops the generation at the next token and frees the model. A timeout raises
        :class:`LMCallTimeoutError` after the text generated so far.
        """
        validate_request(request)
        messages = self._messages(request)
        loaded = self._loaded()
        llm = loaded.llm
        with loaded.lock:
            call = self._start(loaded, messages, request)
            yield StreamStartEvent(model=self.model_name)
            finish, sent = None, 0
            with _context_errors(), contextlib.closing(llm.create_completion(**call.options, stream=True)) as chunks:
                # read to its end: llama.cpp stores the prompt's KV state after the last chunk
                for chunk in chunks:
                    choice = chunk["choices"][0]
                    if choice.get("text"):
                        # the tokens recorded since the last fragment (text held back as a possible
                        # stop sequence comes later, with its tokens): DSPy joins them in order
                        recorded = len(call.steps) if call.steps is not None else 0
                        fresh = call.token_logprobs(recorded, start=sent) or ()
                        sent = recorded
                        yield StreamDeltaEvent(delta=TextDelta(text=choice["text"], part_index=0, logprobs=fresh))
                    finish = choice.get("finish_reason") or finish
            elapsed = time.monotonic() - call.started
            # llama.cpp reports no usage when streaming. Every kept token but the last is in the KV
            # cache; a cut at max_tokens keeps the last one too (an end-of-generation token is dropped).
            generated = llm.n_tokens - len(call.prompt) + (finish == "length")
        self._raise_if_late(call, elapsed)
        yield StreamEndEvent(finish_reason=call.finish(finish),
                             usage=Usage(input_tokens=len(call.prompt), output_tokens=max(0, generated)),
                             provider_data=call.provider_data(elapsed))

    def _start(self, loaded: _Loaded, messages: list[dict[str, str]], request: Request) -> "_Call":
        """Render and tokenize the prompt, read it into the KV cache, and set the generation up
        (its loop guard and deadline); the model's lock is held."""
        config = request.config
        llm = loaded.llm
        started = time.monotonic()
        if request_stop.requested():  # its request ended while it waited for the model
            raise self._stopped_error(0, 0, 0.0, reading=True)
        rendered = loaded.formatter(messages=messages)
        prompt = llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        if len(prompt) >= self.n_ctx:
            raise ContextLengthError(
                f"prompt has {len(prompt)} tokens but the local model's context is n_ctx={self.n_ctx}; "
                "shorten the input (smaller budget / fewer chunks) or raise n_ctx",
                provider="llama.cpp",
            )
        max_tokens = min(config.max_tokens or self.max_tokens, self.n_ctx - len(prompt))
        template_stop = [rendered.stop] if isinstance(rendered.stop, str) else list(rendered.stop or [])
        stop = list(config.stop) + template_stop
        _restore_longest_prefix(llm, prompt)
        to_read = max(0, len(prompt) - 1 - _common_prefix(llm.input_ids[: llm.n_tokens], prompt))
        limit = (CallLimit.auto(loaded.speed, read_tokens=to_read, max_tokens=max_tokens) if self.timeout == AUTO
                 else CallLimit.fixed(self.timeout))
        call = _Call(prompt, started, limit, loaded.speed)
        if not self._prefill(llm, prompt, call):
            raise self._timeout_error(call, time.monotonic() - started, reading=True)
        from llama_cpp import StoppingCriteriaList

        temperature = self.temperature if config.temperature is None else config.temperature
        grammar = self._grammar(config.response_format)
        if config.logprobs is not None:
            if temperature > 0 or grammar is not None:
                raise UnsupportedFeatureError("the local engine reports logprobs for greedy decoding without a "
                                              "grammar only (temperature 0, grammar=False)", feature="logprobs")
            call.steps, call.top, call.llm = [], min(int(config.logprobs), 20), llm
        call.options = dict(
            prompt=prompt, max_tokens=max_tokens, temperature=temperature, stop=stop,
            stopping_criteria=StoppingCriteriaList([call.past_deadline, call.looping, call.record,
                                                    *(rendered.stopping_criteria or [])]),
            repeat_penalty=1.0, grammar=grammar, model=self.model_name,
        )
        for name in ("top_p", "top_k", "seed", "presence_penalty", "frequency_penalty"):
            value = getattr(config, name)
            if value is not None:
                call.options[name] = value
        return call

    def _prefill(self, llm: Any, prompt: list[int], call: "_Call") -> bool:
        """Read the prompt into the KV cache in slices, checking the call's limit between them
        and timing each for the measured speed (``call.speed``).

        llama.cpp cannot be interrupted inside one ``create_completion`` prompt pass, so
        the prompt (all but its last token; its longest cached prefix is already restored)
        is evaluated here first; the completion call then finds it cached (llama.cpp's prefix
        matching) and only generates. Returns False when the limit passed before the prompt was read.
        A call whose request can end (:mod:`ragnet.lm.stop`) is read in slices too, and raises
        :class:`~ragnet.lm.deadline.LMCallStopped` between two once it has ended.
        """
        if not call.limit.bounded and not request_stop.active():
            return True
        common = _common_prefix(llm.input_ids[: llm.n_tokens], prompt)
        end = len(prompt) - 1  # generation replays the last prompt token to get fresh logits
        if common >= end:
            return True
        llm.n_tokens = common  # eval() drops the KV cache beyond n_tokens
        step = llm.n_batch  # the slices llama.cpp itself would use: same speed, checked in between
        for start in range(common, end, step):
            began = time.monotonic()
            if call.limit.over(began - call.started):
                return False
            if request_stop.requested():
                raise self._stopped_error(len(call.prompt), 0, began - call.started, reading=True)
            piece = prompt[start:min(end, start + step)]
            llm.eval(piece)
            call.speed.saw_read(len(piece), time.monotonic() - began)
        return True

    def _raise_if_late(self, call: "_Call", elapsed: float) -> None:
        if call.timed_out:
            raise self._timeout_error(call, elapsed, reading=False)
        if call.stopped:
            raise self._stopped_error(len(call.prompt), call.generated, elapsed, reading=False)

    def _stopped_error(self, prompt_tokens: int, generated: int, elapsed: float, *,
                       reading: bool) -> LMCallStopped:
        where = "while reading the prompt" if reading else f"after generating {generated} tokens"
        return LMCallStopped(
            f"local model {self.model_path.name} stopped {where} ({elapsed:.1f}s): the request it answered is over "
            "(its deadline passed or its client went away)",
            elapsed=elapsed, prompt_tokens=prompt_tokens, completion_tokens=generated, model=self.model_name,
        )

    def _timeout_error(self, call: "_Call", elapsed: float, *, reading: bool) -> LMCallTimeoutError:
        where = "while reading the prompt" if reading else f"after generating {call.generated} tokens"
        fix = ("give a fixed --timeout SECONDS (timeout= in ragnet.configure), free the CPU, or shorten the prompt"
               if call.limit.is_auto else
               "raise --timeout (timeout= in ragnet.configure), lower max_tokens, or shorten the prompt")
        return LMCallTimeoutError(
            f"local model {self.model_path.name} exceeded {call.limit.describe()} {where} "
            f"({elapsed:.1f}s, {len(call.prompt)} prompt tokens); {fix}",
            timeout=call.limit.allowance(), elapsed=elapsed, prompt_tokens=len(call.prompt),
            completion_tokens=call.generated, model=self.model_name,
        )

    def close(self) -> None:
        """Engines are shared and borrowed by ``dspy.LM``; the model stays loaded."""

    # ------------------------------------------------------------------ saving
    def dump_state(self) -> dict[str, Any]:
        """JSON state so ``dspy.LM.dump_state`` can save programs that carry this LM."""
        return {"model_path": str(self.model_path), "n_ctx": self.n_ctx, "n_threads": self.n_threads,
                "temperature": self.temperature, "max_tokens": self.max_tokens, "timeout": self.timeout,
                "chat_template": self.chat_template, "n_gpu_layers": self.n_gpu_layers}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> "LlamaCppEngine":
        """Rebuild from :meth:`dump_state` output."""
        state = dict(state)
        return cls(state.pop("model_path", None), **state)


class AsyncLlamaCppEngine:
    """Async counterpart of :class:`LlamaCppEngine` for ``dspy.LM(..., async_engine=...)``.

    Runs the sync engine in a worker thread, so ``await program.acall(...)`` works and
    the event loop stays free while the model generates.

    Example:
        >>> import dspy, pathlib, tempfile
        >>> gguf = pathlib.Path(tempfile.mkdtemp()) / "m.gguf"; _ = gguf.write_bytes(b"")
        >>> engine = LlamaCppEngine(gguf)
        >>> lm = dspy.LM(engine.model_name, engine=engine, async_engine=AsyncLlamaCppEngine(engine))
        >>> lm.model
        'llamacpp/m'
    """

    def __init__(self, sync: LlamaCppEngine) -> None:
        self.sync = sync
        self.supports_function_calling = sync.supports_function_calling
        self.supports_reasoning = sync.supports_reasoning
        self.supports_response_schema = sync.supports_response_schema
        self.supported_params = sync.supported_params

    async def complete(self, request: Request) -> Response:
        return await asyncio.to_thread(self.sync.complete, request)

    async def stream(self, request: Request) -> AsyncIterator[Any]:
        """The sync engine's stream, read in a worker thread; closing this one stops that one at
        its next event (the model is freed)."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()
        stop = threading.Event()

        def pump() -> None:
            source = self.sync.stream(request)
            try:
                for event in source:
                    loop.call_soon_threadsafe(events.put_nowait, (event, None))
                    if stop.is_set():
                        break
            except BaseException as exc:  # handed to the reader, whatever it is
                loop.call_soon_threadsafe(events.put_nowait, (None, exc))
                return
            finally:
                source.close()
            loop.call_soon_threadsafe(events.put_nowait, (None, None))

        worker = asyncio.ensure_future(asyncio.to_thread(pump))
        try:
            while True:
                event, error = await events.get()
                if error is not None:
                    raise error
                if event is None:
                    return
                yield event
        finally:
            stop.set()
            await asyncio.shield(worker)

    async def aclose(self) -> None:
        """Nothing to release; the model stays loaded for other engines."""

    def dump_state(self) -> dict[str, Any]:
        return self.sync.dump_state()

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> "AsyncLlamaCppEngine":
        return cls(LlamaCppEngine.load_state(state))


# Close models while the interpreter is still whole: llama-cpp-python's own __del__ at shutdown
# runs after its C bindings are torn down and prints a TypeError traceback per model.
atexit.register(LlamaCppEngine.unload_all)
