"""Experiment: does OpenVINO (fp32, or int8 via NNCF post-training quantization) embed MiniLM >= 2x torch here?

Not a ragnet dependency. Run on 2026-11-27 with openvino 2026.4.1 and nncf 3.4.0 installed beside
the project's venv (``pip install --target DIR openvino openvino-telemetry nncf ninja psutil pydot
tabulate`` plus ``PYTHONPATH=DIR``), the ONNX export already cached (``Embedder(backend="onnx-int8")``):

    RAGNET_DATA=../shared/data PYTHONPATH=DIR python -m benchmarks.studies.openvino_experiment 3

The NNCF-quantized graphs are calibrated on 300 pooled paragraphs other than the 1,000 timed ones
and kept as OpenVINO IR in a temporary folder between runs.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.studies import encode_with, parser, print_speeds, time_against_torch

IR_DIR = Path(tempfile.gettempdir()) / "ragnet-openvino-experiment"


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "openvino_experiment")
    p.add_argument("rounds", type=int, nargs="?", default=3, help="Timed rounds (medians reported).")
    args = p.parse_args(argv)
    from ragnet._threads import pin_threads

    pin_threads(2)  # before torch, ONNX Runtime and OpenVINO load
    import nncf
    import openvino as ov

    from ragnet.bench.questions import benchmark_inputs, passage_texts
    from ragnet.index.embedder import Embedder
    from ragnet.index.onnx_backend import OnnxEncoder, int8_file, int8_flavour, onnx_cache_dir

    IR_DIR.mkdir(exist_ok=True)
    docs, _ = benchmark_inputs()
    texts = passage_texts(docs[:1000])
    calib = passage_texts(docs[5000:5300])
    torch_e = Embedder(backend="torch")
    e8 = Embedder(backend="onnx-int8")
    e8.encode(texts[:8])
    folder = next(p for p in onnx_cache_dir().iterdir() if (p / "model.onnx").exists())
    core = ov.Core()
    CFG = {"INFERENCE_NUM_THREADS": 2, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}

    class OvEncoder(OnnxEncoder):
        def __init__(self, folder, model, cfg=CFG):
            super().__init__(folder, "model.onnx", shared=False)
            self.compiled = core.compile_model(model, "CPU", cfg)
            self.req = self.compiled.create_infer_request()

        def _run(self, feeds):
            self.req.infer({n: feeds[n] for n in self._inputs})
            return self.req.get_output_tensor(0).data.copy()

    fp32 = core.read_model(str(folder / "model.onnx"))
    encs = {"ort-int8": OnnxEncoder(folder, int8_file(int8_flavour())),
            "ov-fp32": OvEncoder(folder, fp32)}
    try:
        encs["ov-from-ort-int8"] = OvEncoder(folder, core.read_model(str(folder / int8_file(int8_flavour()))))
    except Exception as exc:
        print("ov-from-ort-int8 failed:", exc, flush=True)
    tok = encs["ort-int8"]

    def calib_items():
        for s in range(0, len(calib), 16):
            b = calib[s:s + 16]
            encs_ = tok._batch.encode_batch(b)
            yield {"input_ids": np.array([e.ids for e in encs_], dtype=np.int64),
                   "attention_mask": np.array([e.attention_mask for e in encs_], dtype=np.int64),
                   "token_type_ids": np.array([e.type_ids for e in encs_], dtype=np.int64)}

    items = list(calib_items())
    for name, kw in (("ov-nncf-int8-transformer", dict(model_type=nncf.ModelType.TRANSFORMER)),
                     ("ov-nncf-int8-transformer-mixed", dict(model_type=nncf.ModelType.TRANSFORMER, preset=nncf.QuantizationPreset.MIXED))):
        t = time.perf_counter()
        try:
            ir = str(IR_DIR / f"{name}.xml")
            if os.path.exists(ir):
                q = core.read_model(ir)
            else:
                q = nncf.quantize(core.read_model(str(folder / "model.onnx")), nncf.Dataset(items), subset_size=len(items), **kw)
                ov.save_model(q, ir, compress_to_fp16=False)
            encs[name] = OvEncoder(folder, q)
            print(name, "quantized in", round(time.perf_counter() - t, 1), "s", flush=True)
        except Exception as exc:
            print(name, "failed:", exc, flush=True)
    ref = torch_e.encode(texts)
    for k, enc in list(encs.items()):
        t = time.perf_counter()
        encode_with(enc, texts)
        dt = time.perf_counter() - t
        print("warm-up", k, round(dt, 1), "s", flush=True)
        if dt > 60:
            print("dropping", k, flush=True)
            del encs[k]
    times, cos = time_against_torch(torch_e, encs, texts, ref, rounds=args.rounds, digits=4)
    print_speeds(times, cos, len(texts), width=32, cos_label="cos min/mean", rounds=True)


if __name__ == "__main__":
    main()
