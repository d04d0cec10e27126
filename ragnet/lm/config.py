"""Choose the LM ragnet programs run on, with DSPy's response cache switched on.

``configure(lm)`` accepts:

* ``"local"``: the local GGUF model through llama.cpp (``$RAGNET_GGUF`` or the
  model fetched by ``ragnet fetch-model``);
* ``"local:/path/model.gguf"``: any GGUF file you own;
* ``"local:qwen2.5-coder-1.5b"``: another fetched registry model;
* any litellm model id (``"openai/gpt-4o-mini"``, ``"ollama_chat/llama3.1"``,
  ``"hosted_vllm/Qwen/Qwen2.5-7B-Instruct"`` with ``api_base=...``);
* a ready ``dspy.BaseLM`` (e.g. ``dspy.utils.DummyLM`` in tests).

``None`` reads ``$RAGNET_LM`` and falls back to ``"local"``.

Example:
    >>> lm = make_lm("openai/gpt-4o-mini", api_key="sk-test")   # configure() also installs it
    >>> lm.model
    'openai/gpt-4o-mini'
    >>> parse_lm_spec("local:qwen2.5-coder-1.5b")[1].endswith("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# litellm fetches a price map over the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from ragnet._secrets import remember, remember_url  # noqa: E402
from ragnet.errors import InputError  # noqa: E402
from ragnet.lm.call_time import check_timeout, served_timeout  # noqa: E402
from ragnet.lm.models import MODELS, default_model_path, ragnet_home  # noqa: E402

__all__ = ["DEFAULT_READER", "LMOptions", "LazyLM", "cache_dir", "configure", "default_answer_lm", "get_lm", "make_lm",
           "parse_lm_spec", "resolve_answer_lm"]

_cache_state: dict[str, Any] = {"dir": None}


def parse_lm_spec(lm: str | None = None) -> tuple[str, str | None]:
    """Split an LM spec into ``("local", path-or-None)`` or ``("litellm", model_id)``.

    Example:
        >>> parse_lm_spec("local:/m/x.gguf")
        ('local', '/m/x.gguf')
        >>> parse_lm_spec("openai/gpt-4o-mini")
        ('litellm', 'openai/gpt-4o-mini')
    """
    spec = lm if lm is not None else (os.environ.get("RAGNET_LM") or "local")
    if not isinstance(spec, str):
        raise InputError(f"lm must be a string or a dspy LM, got {type(spec).__name__}", argument="lm")
    spec = spec.strip()
    if not spec:
        raise InputError("lm is empty; use 'local', 'local:/path/model.gguf' or a litellm model id "
                         "such as 'openai/gpt-4o-mini'", argument="lm")
    if spec == "local":
        return "local", None
    if spec.startswith("local:"):
        target = spec[len("local:"):].strip()
        if not target:
            raise InputError("'local:' needs a GGUF path or a model name after the colon", argument="lm")
        if target in MODELS:
            target = str(default_model_path(target))
        return "local", target
    return "litellm", spec


def cache_dir(path: str | Path | None = None) -> Path:
    """DSPy cache folder: ``path``, else ``$RAGNET_CACHE_DIR``, else ``$RAGNET_HOME/dspy_cache``."""
    chosen = path or os.environ.get("RAGNET_CACHE_DIR") or ragnet_home() / "dspy_cache"
    return Path(chosen).expanduser()


def _configure_cache(path: str | Path | None) -> Path:
    import dspy

    folder = cache_dir(path)
    if _cache_state["dir"] != folder:
        folder.mkdir(parents=True, exist_ok=True)
        # restrict_pickle: cached entries are read back with an allow-list unpickler
        # (DSPy's native responses are plain data; litellm types are allow-listed).
        dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True,
                             disk_cache_dir=str(folder), restrict_pickle=True)
        _cache_state["dir"] = folder
    return folder


def make_lm(lm: str | None = None, *, api_base: str | None = None, api_key: str | None = None,
            timeout: float | str | None = "auto", num_retries: int = 0, temperature: float = 0.0,
            max_tokens: int = 512, cache: bool = True, **kwargs: Any):
    """Build (but do not install) the ``dspy.LM`` for an LM spec; see :func:`configure`.

    Example:
        >>> make_lm("openai/gpt-4o-mini", api_key="x").model
        'openai/gpt-4o-mini'
    """
    import dspy

    remember(api_key)  # never written to a run folder, a report or a compiled program
    remember_url(api_base)
    if isinstance(lm, dspy.BaseLM):
        return lm
    timeout = check_timeout(timeout)
    if isinstance(num_retries, bool) or not isinstance(num_retries, int) or num_retries < 0:
        raise InputError(f"must be an integer >= 0, got {num_retries!r}", argument="num_retries")
    kind, target = parse_lm_spec(lm)
    if kind == "local":
        if api_base is not None or api_key is not None:
            raise InputError("api_base/api_key apply to litellm models, not to the local model",
                             argument="api_base" if api_base is not None else "api_key")
        from ragnet.lm.local import AsyncLlamaCppEngine, LlamaCppEngine

        engine_options = {k: kwargs.pop(k) for k in ("n_ctx", "n_threads", "n_gpu_layers", "chat_template", "grammar",
                                                     "verbose") if k in kwargs}
        if kwargs:
            raise InputError(f"unknown options for the local model: {sorted(kwargs)}", argument=sorted(kwargs)[0])
        engine = LlamaCppEngine(target, timeout=timeout, temperature=temperature, max_tokens=max_tokens,
                                **engine_options)
        # Retries cannot help a deterministic local model; a timeout would only repeat.
        return dspy.LM(engine.model_name, engine=engine, async_engine=AsyncLlamaCppEngine(engine),
                       temperature=temperature, max_tokens=max_tokens, cache=cache, num_retries=0)
    from ragnet.lm.deadline import DeadlineLM

    try:
        client = {k: v for k, v in {"api_base": api_base, "api_key": api_key,
                                    "timeout": served_timeout(timeout)}.items()
                  if v is not None}
        # DeadlineLM: the timeout bounds the whole call, not only each wait for the next byte.
        return DeadlineLM(target, num_retries=num_retries, temperature=temperature, max_tokens=max_tokens,
                          cache=cache, **client, **kwargs)
    except (ValueError, TypeError) as exc:
        raise InputError(f"cannot use LM {target!r}: {exc}", argument="lm") from exc


def configure(lm: Any = None, *, api_base: str | None = None, api_key: str | None = None,
              cache_dir: str | Path | None = None, timeout: float | str | None = "auto", num_retries: int = 0,
              temperature: float = 0.0, max_tokens: int = 512, adapter: Any = "auto", **kwargs: Any):
    """Set the LM for every ragnet/DSPy program, with an on-disk response cache.

    Args:
        lm: LM spec (see the module docs) or a ``dspy.BaseLM``; ``None`` reads
            ``$RAGNET_LM``, default ``"local"``.
        api_base: server URL for litellm models (Ollama, vLLM, any OpenAI-compatible server).
        api_key: key for litellm models (else the provider's usual env variable).
        cache_dir: DSPy cache folder; default ``$RAGNET_CACHE_DIR`` or ``$RAGNET_HOME/dspy_cache``.
        timeout: wall-clock seconds per LM call, from its start to the reply's last byte (the
            local engine stops generating; a served model's call is cut at the deadline however
            the server behaves, :class:`ragnet.lm.deadline.DeadlineLM`); either raises
            :class:`ragnet.lm.deadline.LMCallTimeoutError`. ``"auto"`` (default): the local
            engine gives each call 4x what this machine was measured to need for it, at least
            120 s (:mod:`ragnet.lm.call_time`); a served model gets 120 s. None: no limit.
        num_retries: HTTP-level retries of a failed request for litellm models (with
            exponential backoff, by litellm). Default 0: every ragnet step already retries a
            failed call once (``retries`` of the programs), so a server that hangs costs at
            most ``timeout x (1 + retries)`` per step. HTTP retries run inside the same
            deadline, so each one leaves less time to the next. Raise it for rate-limited
            hosted APIs. The local model is never retried at this level.
        temperature: sampling temperature; 0 makes runs repeatable (and cacheable).
        max_tokens: answer length limit per call.
        adapter: how signatures become prompts: ``"auto"`` (default) uses DSPy's ``JSONAdapter``
            for the local llama.cpp engine and DSPy's default ``ChatAdapter`` for everything
            else (without its second call in JSON: ragnet's steps parse a JSON reply leniently
            and retry once themselves); ``"chat"``, ``"json"`` or any ``dspy.Adapter`` force one.
            Why JSON for the local model: a 0.5B model misreads the ChatAdapter's
            ``[[ ## field ## ]]`` layout (it copies the schema notes into its answer, and DSPy
            then re-asks with JSON: two calls per step), while it writes the JSON object the
            JSONAdapter asks for.
        **kwargs: local model options (``n_ctx``, ``n_threads``, ``n_gpu_layers``, ``grammar``,
            ``chat_template``, ``verbose``) or extra ``dspy.LM`` options for litellm.

    Returns:
        The configured ``dspy.LM``.

    Raises:
        InputError: a malformed spec or options that do not fit it.
        ragnet.lm.models.ModelNotFoundError: ``"local"`` but no model file
            (the message says to run ``ragnet fetch-model``).

    Example:
        In a script: ``ragnet.configure("local")`` once, before running programs. What it
        installs, without installing it here:

        >>> lm = make_lm("openai/gpt-4o-mini", api_key="sk-test", timeout=30)
        >>> lm.model, type(resolve_adapter("auto", lm)).__name__
        ('openai/gpt-4o-mini', 'ChatAdapter')
    """
    import dspy

    built = make_lm(lm, api_base=api_base, api_key=api_key, timeout=timeout, num_retries=num_retries,
                    temperature=temperature, max_tokens=max_tokens, **kwargs)
    _configure_cache(cache_dir)
    dspy.configure(lm=built, adapter=resolve_adapter(adapter, built))
    return built


#: The local model that answers when the steps run on the default local model (``lm="local"``),
#: if it has been fetched: it reads sentence-selected contexts far better than the 0.5B default,
#: at about twice the time per answer (docs/design.md, "The answer step").
DEFAULT_READER = "qwen2.5-coder-1.5b"


def default_answer_lm(lm: Any = None) -> str | None:
    """ragnet's default reader for the steps' LM ``lm``: the 1.5B local model when ``lm`` is the
    default local model and that model is on disk (``ragnet fetch-model qwen2.5-coder-1.5b``),
    else None (the answer step uses ``lm`` like every other step).

    Example:
        >>> default_answer_lm("openai/gpt-4o-mini") is None
        True
    """
    import dspy

    if isinstance(lm, dspy.BaseLM):  # as installed by configure("local"): the default local model
        if str(getattr(lm, "model", "")) != f"llamacpp/{default_model_path().stem}":
            return None
        lm = "local"
    kind, target = parse_lm_spec(lm)
    if kind != "local" or (target is not None and Path(target) != default_model_path()):
        return None
    if os.environ.get("RAGNET_GGUF"):
        return None  # the user chose their own local model
    reader = default_model_path(DEFAULT_READER)
    return f"local:{DEFAULT_READER}" if reader.is_file() else None


def resolve_answer_lm(answer_lm: Any, lm: Any = None) -> Any:
    """The answer step's LM for a command-line ``--answer-lm`` value: ``"auto"`` is ragnet's
    default reader for ``lm`` (:func:`default_answer_lm`), ``"none"`` or None is ``lm`` itself
    (returned as None), anything else is an LM spec (or LM) used as given.

    Example:
        >>> resolve_answer_lm("none") is None, resolve_answer_lm("openai/gpt-4o")
        (True, 'openai/gpt-4o')
    """
    if answer_lm is None or (isinstance(answer_lm, str) and answer_lm.strip().casefold() in ("", "none")):
        return None
    if isinstance(answer_lm, str) and answer_lm.strip().casefold() == "auto":
        return default_answer_lm(lm)
    return answer_lm


def resolve_adapter(adapter: Any, lm: Any):
    """The ``dspy.Adapter`` for ``adapter`` ("auto", "chat", "json" or an Adapter) and ``lm``.

    Example:
        >>> from dspy.utils import DummyLM
        >>> type(resolve_adapter("auto", DummyLM([]))).__name__
        'ChatAdapter'
    """
    import dspy

    if isinstance(adapter, dspy.Adapter):
        return adapter
    choice = str(adapter or "auto").lower()
    if choice == "auto":
        choice = "json" if str(getattr(lm, "model", "")).startswith("llamacpp/") else "chat"
    if choice == "json":
        return dspy.JSONAdapter()
    if choice == "chat":
        # No second call in JSON when a reply does not parse: ragnet's steps read JSON replies
        # leniently and retry once themselves, so DSPy's fallback would only double the requests
        # (and the time a failing server costs).
        return dspy.ChatAdapter(use_json_adapter_fallback=False)
    raise InputError(f"expected 'auto', 'chat', 'json' or a dspy.Adapter, got {adapter!r}", argument="adapter")


def get_lm():
    """The LM DSPy is configured with; configures the default (``$RAGNET_LM`` / local) if none.

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> dspy.configure(lm=DummyLM([]))
        >>> type(get_lm()).__name__
        'DummyLM'
    """
    import dspy

    current = dspy.settings.lm
    return current if current is not None else configure()


class LazyLM:
    """An LM built on first use, once: the reader an answer step holds when it differs from the
    LM the other steps use.

    Holds a spec (``"local:qwen2.5-coder-1.5b"``, a litellm id) or a ``dspy.BaseLM`` and builds
    the LM with ``options`` (``timeout``, ``api_base``, ...) only when a question needs it. A plain
    attribute, not a DSPy parameter: saving a program stores prompts and demos, never an LM, and
    copies of a step share it (no second model in memory).

    Example:
        >>> from dspy.utils import DummyLM
        >>> LazyLM(DummyLM([])).name, LazyLM("openai/gpt-4o-mini").name
        ('dummy', 'openai/gpt-4o-mini')
    """

    def __init__(self, lm: Any, **options: Any) -> None:
        import dspy

        self.spec, self.options = lm, options
        self._lm: Any = lm if isinstance(lm, dspy.BaseLM) else None

    @property
    def lm(self) -> Any:
        """The ``dspy.BaseLM``, built from the spec on first use."""
        if self._lm is None:
            self._lm = make_lm(self.spec, **self.options)
        return self._lm

    @property
    def name(self) -> str:
        if isinstance(self.spec, str):
            return self.spec
        return str(getattr(self.spec, "model", None) or type(self.spec).__name__)

    def settings(self):
        """``dspy.context`` with this LM and the adapter that suits it (JSON for llama.cpp)."""
        import dspy

        return dspy.context(lm=self.lm, adapter=resolve_adapter("auto", self.lm))

    def __deepcopy__(self, memo: dict) -> "LazyLM":
        return self


@dataclass(frozen=True)
class LMOptions:
    """Which LMs a run uses and how to reach them: what every ``ragnet`` command's LM options mean.

    One object instead of six loose options, so a command (or a script) builds it once and
    asks it for the configured step LM, the reader and any other LM on the same connection.

    Args:
        lm: the steps' LM spec (see the module docs); None reads ``$RAGNET_LM``, then "local".
        answer_lm: the reader (the answer step's LM): ``"auto"`` (ragnet's default reader for
            ``lm``, :func:`default_answer_lm`), ``"none"`` or None (``lm`` answers too), or a spec.
        api_base: server URL for litellm models.
        api_key: key for litellm models.
        api_key_env: name of the environment variable holding the key (instead of ``api_key``).
        timeout: seconds per LM call, ``"auto"`` (default, see :func:`configure`) or None.

    Example:
        >>> options = LMOptions(lm="openai/gpt-4o-mini", answer_lm="openai/gpt-4o", api_key="sk-test", timeout=30)
        >>> options.connection()
        {'api_key': 'sk-test', 'timeout': 30.0}
        >>> options.reader(), options.make("openai/gpt-4o").model, options.reader_lm().options
        ('openai/gpt-4o', 'openai/gpt-4o', {'api_key': 'sk-test', 'timeout': 30.0})
    """

    lm: str | None = None
    answer_lm: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    timeout: float | str | None = "auto"

    def connection(self) -> dict[str, Any]:
        """Keyword arguments for :func:`make_lm` / :func:`configure`: server, key and timeout.

        Raises:
            InputError: both a key and its variable, an unset variable, or a timeout <= 0.
        """
        api_key = self.api_key
        if api_key is not None and self.api_key_env is not None:
            raise InputError("give --api-key or --api-key-env, not both", argument="api-key-env")
        if self.api_key_env is not None:
            api_key = os.environ.get(self.api_key_env)
            if not api_key:
                raise InputError(f"environment variable {self.api_key_env} is not set or empty",
                                 argument="api-key-env")
        remember(api_key)  # never written to a run folder, a report or a compiled program
        remember_url(self.api_base)
        out = {"api_base": self.api_base, "api_key": api_key, "timeout": check_timeout(self.timeout)}
        return {k: v for k, v in out.items() if v is not None}

    def configure(self, **kwargs: Any):
        """:func:`configure` the steps' LM (``lm``) on this connection; returns it."""
        return configure(self.lm, **self.connection(), **kwargs)

    def make(self, spec: Any, **kwargs: Any):
        """Build another LM (a judge, a teacher) on this connection, without installing it."""
        return make_lm(spec, **self.connection(), **kwargs)

    def reader(self) -> Any:
        """The reader's spec, or None when ``lm`` answers too (:func:`resolve_answer_lm`)."""
        return resolve_answer_lm(self.answer_lm, self.lm)

    def reader_lm(self) -> LazyLM | None:
        """The reader on this connection, built when it first answers; None when ``lm`` answers too."""
        spec = self.reader()
        return None if spec is None else LazyLM(spec, **self.connection())
