"""ONNX Runtime backends of :class:`~ragnet.index.embedder.Embedder`: local export and int8 quantization.

The ONNX graph is exported here, from the model the embedder resolved (the bundled
all-MiniLM-L6-v2 or a local sentence-transformers folder), with ``torch.onnx``; nothing is
downloaded. Exports live in ``$RAGNET_HOME/onnx/<model-slug>-<hash>/`` (``RAGNET_HOME``
defaults to ``~/.cache/ragnet``; the hash covers the model folder's weight and config files),
so a read-only model folder is fine and the next process reuses the export:

- ``model.onnx``: the transformer (token embeddings out), fp32;
- ``model_<q>int8_<cpu>.onnx``: the same, dynamically quantized to int8 with the
  optimum/sentence-transformers preset for this CPU (``avx512_vnni``, ``avx512``, ``avx2``,
  ``arm64``, else ``portable``);
- ``tokenizer.json`` and ``export.json`` (pooling, prompts, maximum length, checks).

The folder appears whole (written in a temporary sibling, then renamed) and only after the
ONNX pipeline reproduced the torch model on probe texts; the int8 file is added the same way.
Only models made of Transformer -> mean/CLS Pooling (-> Normalize) with a fast tokenizer are
supported. Needs ``onnxruntime`` and ``onnx`` (base dependencies of ragnet).

Example:
    >>> resolve_backend("onnx-int8")
    'onnx-int8'
    >>> int8_flavour() in ("avx512_vnni", "avx512", "avx2", "arm64", "portable")
    True
"""

from __future__ import annotations

import collections
import contextlib
import copy
import hashlib
import importlib.util
import json
import logging
import os
import platform
import re
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ragnet._atomic import atomic_dir, atomic_path, dir_lock, usual_permissions
from ragnet.errors import InputError, MissingDependencyError, RagnetError

__all__ = ["AUTO", "BACKENDS", "ENV_BACKEND", "OnnxEncoder", "auto_backend", "int8_flavour", "load_encoder",
           "onnx_cache_dir", "resolve_backend"]

BACKENDS = ("torch", "onnx", "onnx-int8")
# Not a backend but a choice between two that give the same vectors (see ``auto_backend``).
AUTO = "auto"
ENV_BACKEND = "RAGNET_EMBED_BACKEND"
FORMAT_VERSION = 1
OPSET = 17
EXPORT_META = "export.json"
FP32_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Dynamic-quantization presets of optimum's AutoQuantizationConfig (what
# sentence-transformers' export_dynamic_quantized_onnx_model uses): weight type per CPU, per-channel,
# symmetric weights, MatMul/Add. "portable" (u8/u8) is exact on every CPU.
_INT8_WEIGHTS = {"avx512_vnni": "QInt8", "avx512": "QInt8", "arm64": "QInt8", "avx2": "QUInt8", "portable": "QUInt8"}
FP32_ATOL = 1e-4    # max |difference| of normalised vectors, ONNX fp32 vs torch
INT8_MIN_COS = 0.95  # an int8 graph below this on the probes is broken, not merely approximate

_PROBES = [
    "Which river flows through Paris?",
    "a",
    "  Text with surrounding spaces.  ",
    "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer. He lives in "
    "Los Angeles, California. He is best known for directing horror films such as Sinister.",
    "long " * 600,  # past any maximum length: exercises truncation
]

_ENCODERS: dict[tuple[str, str], "OnnxEncoder"] = {}
_SESSIONS: dict[tuple[str, int], Any] = {}
_HASHES: dict[tuple, str] = {}
_LOCK = threading.RLock()


def resolve_backend(backend: str | None, default: str = "torch") -> str:
    """The backend to use: ``backend``, else ``$RAGNET_EMBED_BACKEND``, else ``default``.

    ``"auto"`` is returned as it is; ``Embedder`` settles it with :func:`auto_backend`.

    Raises:
        InputError: not one of ``"torch"``, ``"onnx"``, ``"onnx-int8"``, ``"auto"`` (names ``backend``).

    Example:
        >>> resolve_backend(None) in BACKENDS
        True
        >>> resolve_backend("Auto")
        'auto'
    """
    source = "backend"
    if backend is None:
        backend = os.environ.get(ENV_BACKEND) or default
        source = f"${ENV_BACKEND}"
    value = str(backend).strip().lower()
    if value not in (*BACKENDS, AUTO):
        raise InputError(f"unknown embedding backend {backend!r} (from {source}); choose one of "
                         f"{', '.join((*BACKENDS, AUTO))}", argument="backend")
    return value


def onnx_installed() -> bool:
    """Whether ONNX Runtime and ``onnx`` can be imported (without importing them)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def auto_backend(name: str, target: str, cache_dir: str | os.PathLike | None = None) -> str:
    """``"onnx"`` when ONNX Runtime is installed and the fp32 export of this model is already
    cached, else ``"torch"``.

    The fp32 graph gives the torch model's vectors (checked to ``FP32_ATOL`` when it was
    exported), so the choice does not change what a search returns. What it changes is the
    cost of a cold process: ONNX Runtime loads much faster than torch and
    sentence-transformers. Nothing is exported here (that needs torch):
    ``ragnet index`` prepares the export (``Embedder.prepare_onnx_export``).
    """
    if not onnx_installed():
        return "torch"
    try:
        folder = export_dir(name, target, cache_dir)
    except (InputError, OSError):
        return "torch"
    return "onnx" if _complete(folder) else "torch"


def onnx_cache_dir() -> Path:
    """Where exports live: ``$RAGNET_HOME/onnx`` (default ``~/.cache/ragnet/onnx``)."""
    return Path(os.environ.get("RAGNET_HOME") or Path.home() / ".cache" / "ragnet").expanduser() / "onnx"


def int8_flavour() -> str:
    """The quantization preset for this CPU: ``avx512_vnni``, ``avx512``, ``avx2``, ``arm64`` or ``portable``."""
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "arm64"
    flags: set[str] = set()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    if {"avx512f", "avx512bw"} <= flags:
        return "avx512_vnni" if "avx512_vnni" in flags else "avx512"
    return "avx2" if "avx2" in flags else "portable"


def int8_file(flavour: str) -> str:
    """File name of the int8 graph for ``flavour`` (sentence-transformers' naming).

    Example:
        >>> int8_file("avx2")
        'model_quint8_avx2.onnx'
    """
    return f"model_{_INT8_WEIGHTS[flavour].lower()}_{flavour}.onnx"


def require_onnx() -> Any:
    """Import ``onnxruntime`` (and check ``onnx``), failing with the pip command."""
    try:
        import onnx  # noqa: F401 - the exporter and the quantizer need it
        import onnxruntime
    except ImportError as exc:
        raise MissingDependencyError(
            f"{exc.name or 'onnxruntime'} is not installed (needed for the onnx embedding backends); run: "
            "pip install onnxruntime onnx"
        ) from exc
    return onnxruntime


# -- the cache folder ----------------------------------------------------------------------
def model_folder(target: str) -> Path:
    """The local folder of ``target`` (a folder, or a hub name already in the local cache)."""
    path = Path(target)
    if path.is_dir():
        return path.resolve()
    os.environ["HF_HUB_OFFLINE"] = "1"  # as for the torch model: never reach for the network
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(target, local_files_only=True)).resolve()
    except Exception as exc:  # noqa: BLE001 - any failure: not available offline
        raise InputError(f"the onnx backends export from a local model folder, and {target!r} is not one "
                         "(nor in the local Hugging Face cache)", argument="embedder") from exc


def _hashed_files(folder: Path) -> list[Path]:
    skip_dirs = {"onnx", "openvino", ".git", ".cache"}
    files = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part in skip_dirs or part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if path.suffix.lower() in (".md", ".onnx", ".xml"):
            continue
        files.append(path)
    return sorted(files)


def model_hash(folder: Path) -> str:
    """Short SHA-256 over the model folder's weight, config and tokenizer files (memoised per size/mtime)."""
    files = _hashed_files(folder)
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    cached = _HASHES.get(stamp)
    if cached is None:
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        cached = _HASHES[stamp] = digest.hexdigest()[:12]
    return cached


def slug(name: str) -> str:
    """File-system-safe short form of a model name (a path keeps its last part).

    Example:
        >>> slug("sentence-transformers/all-MiniLM-L6-v2")
        'sentence-transformers-all-minilm-l6-v2'
    """
    if os.sep in name and Path(name).is_absolute():
        name = Path(name).name
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "model"


def export_dir(name: str, target: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache folder of the export of model ``name`` (loaded from ``target``)."""
    folder = model_folder(target)
    root = Path(cache_dir).expanduser() if cache_dir is not None else onnx_cache_dir()
    return root / f"{slug(name)}-{model_hash(folder)}"


# -- export ----------------------------------------------------------------------------------
def ensure_export(name: str, target: str, int8: bool, load_model: Callable[[], Any],
                  cache_dir: str | os.PathLike | None = None) -> Path:
    """Export (once) the fp32 graph, and the int8 one when ``int8``; return the cache folder.

    ``load_model`` returns the torch ``SentenceTransformer`` and its direct pipeline
    ``(tokenizer, hf_model, pooling, max_len)`` (False when it has none); it is called only
    when the fp32 export is missing.
    """
    require_onnx()
    folder = export_dir(name, target, cache_dir)
    flavour = int8_flavour()
    if _complete(folder) and (not int8 or (folder / int8_file(flavour)).is_file()):
        return folder
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(folder.parent, os.W_OK):
            raise PermissionError("not writable")
    except OSError as exc:
        raise InputError(f"cannot write the ONNX export cache {folder.parent}: {exc}; set RAGNET_HOME (or "
                         "cache_dir) to a writable folder", argument="backend") from exc
    with dir_lock(folder, wait=True):  # one exporting process at a time; the others then reuse its export
        if not _complete(folder):
            with atomic_dir(folder, owned=_all_files) as tmp, _export_errors(name):
                _export_fp32(*load_model(), name, target, tmp)
                usual_permissions(tmp, recursive=True)
        if int8 and not (folder / int8_file(flavour)).is_file():
            with _export_errors(name):
                _export_int8(folder, flavour)
    return folder


@contextlib.contextmanager
def _export_errors(name: str):
    """Report a failure deep inside torch.onnx or the quantizer as one clear error."""
    try:
        yield
    except RagnetError:
        raise
    except Exception as exc:  # noqa: BLE001 - re-raised with the model name and the way out
        raise RagnetError(f"could not export {name} to ONNX ({type(exc).__name__}: {exc}); "
                          "use backend='torch' for this model") from exc


def _all_files(folder: Path) -> set[str]:
    """Everything in an outdated export folder belongs to it (replaced whole)."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _complete(folder: Path) -> bool:
    """Whether ``folder`` holds a finished export of the current format."""
    if not all((folder / n).is_file() for n in (FP32_FILE, TOKENIZER_FILE, EXPORT_META)):
        return False
    try:
        return json.loads((folder / EXPORT_META).read_text(encoding="utf-8")).get("format") == FORMAT_VERSION
    except (OSError, ValueError, AttributeError):
        return False


def _check_pipeline(parts: Any) -> tuple[Any, Any, str, int]:
    """``parts`` when the model is a plain Transformer -> Pooling with a fast tokenizer, else refuse."""
    if not parts or not getattr(parts[0], "is_fast", False):
        raise InputError("the onnx backends support models made of Transformer -> mean/CLS Pooling "
                         "(-> Normalize) with a fast tokenizer; use backend='torch' for this one", argument="backend")
    return parts


def _prompts(model: Any) -> tuple[str | None, str | None]:
    """``(query prompt, document prompt)`` as ``Embedder``'s torch path applies them."""
    prompts = getattr(model, "prompts", None) or {}
    document = next((prompts[k] for k in ("document", "passage", "corpus") if prompts.get(k)), None)
    return prompts.get("query") or None, document


def _export_fp32(model: Any, parts: Any, name: str, target: str, out: Path) -> None:
    """Write ``model.onnx``, ``tokenizer.json`` and ``export.json`` into ``out`` (checked against ``model``)."""
    import torch

    tokenizer, hf, pooling, max_len = _check_pipeline(parts)
    query_prompt, document_prompt = _prompts(model)
    sample = tokenizer(["a short text", "a somewhat longer text, so that the batch is padded"], padding=True,
                       truncation="longest_first", max_length=max_len, return_tensors="pt")
    names = [n for n in _INPUTS if n in sample]

    class Wrapper(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *tensors: Any) -> Any:
            return self.inner(**dict(zip(names, tensors)), return_dict=True)[0]

    traced = copy.deepcopy(hf).eval()  # the shared torch model stays as it is
    # Eager attention traces to plain MatMul/Softmax; SDPA's mask handling is data-dependent under tracing.
    with contextlib.suppress(Exception):
        traced.set_attn_implementation("eager")
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "token_embeddings"]}
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Wrapper(traced), tuple(sample[n] for n in names), str(out / FP32_FILE), input_names=names,
                          output_names=["token_embeddings"], dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    del traced
    backend = tokenizer.backend_tokenizer
    saved = type(backend).from_str(backend.to_str())
    saved.no_padding()
    saved.no_truncation()
    saved.save(str(out / TOKENIZER_FILE))
    meta = {
        "format": FORMAT_VERSION,
        "model": name,
        "source": str(model_folder(target)),
        "model_hash": model_hash(model_folder(target)),
        "inputs": names,
        "pooling": pooling,
        "max_seq_length": max_len,
        "query_prompt": query_prompt,
        "document_prompt": document_prompt,
        "pad_id": int(tokenizer.pad_token_id or 0),
        "pad_token": tokenizer.pad_token or "[PAD]",
        "pad_type_id": int(getattr(tokenizer, "pad_token_type_id", 0) or 0),
        "padding_side": getattr(tokenizer, "padding_side", "right"),
        "dimension": int(model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension")
                         else model.get_sentence_embedding_dimension()),
        "opset": OPSET,
        "versions": {"torch": torch.__version__, "onnxruntime": require_onnx().__version__},
    }
    (out / EXPORT_META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    got = OnnxEncoder(out, FP32_FILE, shared=False)
    diffs = []
    for prompt, encode in ((document_prompt, getattr(model, "encode_document", None) or model.encode),
                           (query_prompt, getattr(model, "encode_query", None) or model.encode)):
        want = _normalise(np.asarray(encode(_PROBES, convert_to_numpy=True, show_progress_bar=False)))
        diffs.append(float(np.abs(_normalise(got.forward(_PROBES, prompt)) - want).max()))
    meta["check"] = {"fp32_max_abs_diff": max(diffs)}
    if max(diffs) > FP32_ATOL:
        raise RagnetError(f"the ONNX export of {name} does not reproduce the torch model (max difference "
                          f"{max(diffs):.2e} > {FP32_ATOL}); use backend='torch' for this model")
    (out / EXPORT_META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def _export_int8(folder: Path, flavour: str) -> None:
    """Quantize ``model.onnx`` dynamically to int8 with ``flavour``'s preset, checked against fp32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = folder / int8_file(flavour)
    fp32 = OnnxEncoder(folder, FP32_FILE, shared=False)
    logger = logging.getLogger()  # the quantizer logs a pre-processing hint on the root logger
    old_level = logger.level
    with atomic_path(target, suffix=".onnx") as tmp:
        logger.setLevel(max(old_level, logging.ERROR))
        try:
            quantize_dynamic(str(folder / FP32_FILE), str(tmp), op_types_to_quantize=["MatMul", "Add"],
                             per_channel=True, reduce_range=False, weight_type=getattr(QuantType, _INT8_WEIGHTS[flavour]),
                             extra_options={"WeightSymmetric": True, "ActivationSymmetric": False})
        finally:
            logger.setLevel(old_level)
        got = _normalise(OnnxEncoder(folder, tmp.name, shared=False).forward(_PROBES))
        want = _normalise(fp32.forward(_PROBES))
        cos = float((got * want).sum(1).min())
        if cos < INT8_MIN_COS:
            raise RagnetError(f"the int8 ({flavour}) quantization of {folder.name} drifts too far from fp32 "
                              f"(cosine {cos:.3f} on probe texts); use backend='onnx'")


# -- running ------------------------------------------------------------------------------------
def _threads() -> int:
    """Intra-op threads: torch's setting when torch is loaded, else ``$OMP_NUM_THREADS``, else the usable cores."""
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            return max(1, int(torch.get_num_threads()))
    with contextlib.suppress(ValueError):
        if int(os.environ.get("OMP_NUM_THREADS", "0")) > 0:
            return int(os.environ["OMP_NUM_THREADS"])
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class OnnxEncoder:
    """Tokenizer + ONNX Runtime session + pooling for one exported graph (unnormalised output).

    Sessions are built per thread count (``torch.get_num_threads()`` at call time), so
    pinning torch's threads pins this backend's too.

    Args:
        folder: an export folder (see :func:`ensure_export`).
        file: the graph in it (``model.onnx`` or an int8 file).
        shared: keep the sessions in the process-wide cache (False: on this object only,
            freed with it; for the checks made while exporting).
    """

    def __init__(self, folder: str | os.PathLike, file: str = FP32_FILE, shared: bool = True) -> None:
        from tokenizers import Tokenizer

        require_onnx()
        self.folder = Path(folder)
        self.path = self.folder / file
        self.meta = json.loads((self.folder / EXPORT_META).read_text(encoding="utf-8"))
        self.dimension = int(self.meta["dimension"])
        self.query_prompt = self.meta.get("query_prompt")
        self.document_prompt = self.meta.get("document_prompt")
        self._cls = self.meta["pooling"] == "cls"
        self._inputs = list(self.meta["inputs"])
        self._single = Tokenizer.from_file(str(self.folder / TOKENIZER_FILE))
        self._single.enable_truncation(int(self.meta["max_seq_length"]))
        self._batch = Tokenizer.from_file(str(self.folder / TOKENIZER_FILE))
        self._batch.enable_truncation(int(self.meta["max_seq_length"]))
        self._batch.enable_padding(direction=self.meta.get("padding_side", "right"), pad_id=self.meta["pad_id"],
                                   pad_type_id=self.meta["pad_type_id"], pad_token=self.meta["pad_token"])
        self.single_ok = False  # set by load_encoder: forward_one reproduces forward
        self._sessions = _SESSIONS if shared else {}

    def session(self, threads: int | None = None) -> Any:
        """The ONNX Runtime session for ``threads`` intra-op threads (default: the current
        thread count, see ``_threads``), built once per count."""
        threads = _threads() if threads is None else threads
        key = (str(self.path), threads)
        sess = self._sessions.get(key)
        if sess is None:
            ort = require_onnx()
            with _LOCK:
                sess = self._sessions.get(key)
                if sess is None:
                    opts = ort.SessionOptions()
                    opts.intra_op_num_threads = threads
                    opts.inter_op_num_threads = 1
                    # ONNX Runtime's threads spin after each run by default; on a small machine
                    # they then compete with the NumPy/FAISS/BM25 work of the same search
                    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    opts.log_severity_level = 3
                    sess = self._sessions[key] = ort.InferenceSession(str(self.path), opts, providers=["CPUExecutionProvider"])
        return sess

    def _run(self, feeds: dict[str, np.ndarray], threads: int | None = None) -> np.ndarray:
        return self.session(threads).run(None, {n: feeds[n] for n in self._inputs})[0]

    def forward(self, texts: Sequence[str], prompt: str | None = None, threads: int | None = None) -> np.ndarray:
        """Pooled embeddings ``(len(texts), dimension)`` of one padded batch (on a session of
        ``threads`` intra-op threads; default: the current thread count)."""
        if prompt:
            texts = [prompt + t for t in texts]
        encode = getattr(self._batch, "encode_batch_fast", None) or self._batch.encode_batch
        encs = encode(list(texts))
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        types = np.array([e.type_ids for e in encs], dtype=np.int64)
        hidden = self._run({"input_ids": ids, "attention_mask": mask, "token_type_ids": types}, threads)
        if self._cls:
            return np.ascontiguousarray(hidden[:, 0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        return ((hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)).astype(np.float32)

    def forward_batches(self, batches: Sequence[Sequence[str]], prompt: str | None = None,
                        workers: int | None = None) -> Iterator[np.ndarray]:
        """Pooled embeddings of each batch, yielded in order.

        With ``workers`` > 1 (default: the current thread count) the batches run concurrently,
        ``workers`` at a time, each on one single-thread session (ONNX Runtime releases the
        GIL and a session may run from several threads at once). That outruns one multi-thread
        session on small batches, where such a session spends much of each operator waking and
        joining its other threads (which do not spin between runs, see ``session``). Results
        are ``forward``'s, batch by batch.
        """
        workers = _threads() if workers is None else max(1, int(workers))
        if workers == 1 or len(batches) == 1:  # one batch: all threads on it
            for batch in batches:
                yield self.forward(batch, prompt)
            return
        self.session(1)  # build the shared session before the workers race for it
        pending: collections.deque = collections.deque()
        with ThreadPoolExecutor(workers, thread_name_prefix="ragnet-onnx") as pool:
            for batch in batches:
                pending.append(pool.submit(self.forward, batch, prompt, 1))
                if len(pending) >= 2 * workers:  # bounded look-ahead: a million texts never become a million futures
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def forward_one(self, text: str, prompt: str | None = None) -> np.ndarray:
        """Pooled embedding ``(1, dimension)`` of one unpadded text (no mask arithmetic)."""
        enc = self._single.encode(prompt + text if prompt else text)
        ids = np.array([enc.ids], dtype=np.int64)
        hidden = self._run({"input_ids": ids, "attention_mask": np.ones_like(ids),
                            "token_type_ids": np.array([enc.type_ids], dtype=np.int64)})[0]
        return (hidden[:1] if self._cls else hidden.mean(0, keepdims=True)).astype(np.float32)

    def single_path_agrees(self) -> bool:
        """Whether :meth:`forward_one` reproduces :meth:`forward` of a one-text batch on probe texts.

        One text at a time: int8 activations are quantized per tensor, so an int8 vector moves
        slightly with the other texts of its batch.
        """
        try:
            for prompt in {self.query_prompt, None}:
                want = _normalise(np.concatenate([self.forward([p], prompt) for p in _PROBES]))
                got = _normalise(np.concatenate([self.forward_one(p, prompt) for p in _PROBES]))
                if not np.allclose(got, want, atol=1e-5):
                    return False
        except Exception:  # noqa: BLE001 - any failure: use the batch path
            return False
        return True


def load_encoder(name: str, target: str, backend: str, load_model: Callable[[], Any],
                 cache_dir: str | os.PathLike | None = None) -> OnnxEncoder:
    """The (process-wide shared) encoder for ``backend`` (``"onnx"`` or ``"onnx-int8"``), exporting if needed."""
    int8 = backend == "onnx-int8"
    folder = ensure_export(name, target, int8, load_model, cache_dir)
    file = int8_file(int8_flavour()) if int8 else FP32_FILE
    key = (str(folder), file)
    with _LOCK:
        enc = _ENCODERS.get(key)
        if enc is None:
            enc = OnnxEncoder(folder, file)
            enc.single_ok = enc.single_path_agrees()
            _ENCODERS[key] = enc
    return enc


def _normalise(vecs: np.ndarray) -> np.ndarray:
    vecs = np.ascontiguousarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    np.divide(vecs, norms, out=vecs, where=norms > 0)
    return vecs
