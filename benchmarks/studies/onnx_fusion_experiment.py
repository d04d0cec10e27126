"""Experiment: does ONNX Runtime's offline transformer fusion speed up int8 MiniLM on this CPU?

Times 1,000 pooled HotpotQA paragraphs through torch, ragnet's int8 export and fused int8
variants (2 threads), with their cosines to torch's vectors:

    RAGNET_DATA=../shared/data python -m benchmarks.studies.onnx_fusion_experiment
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.studies import parser, print_speeds, time_against_torch


def main(argv: Sequence[str] | None = None) -> None:
    parser(__doc__, "onnx_fusion_experiment").parse_args(argv)
    from ragnet._threads import pin_threads

    pin_threads(2)  # before torch and ONNX Runtime load
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    from ragnet.bench.questions import benchmark_inputs, passage_texts
    from ragnet.index.embedder import Embedder
    from ragnet.index.onnx_backend import _INT8_WEIGHTS, OnnxEncoder, int8_file, int8_flavour, onnx_cache_dir

    docs, _ = benchmark_inputs(documents=1000)  # HotpotQA from $RAGNET_DATA or ../shared/data
    texts = passage_texts(docs)
    torch_e = Embedder(backend="torch")
    e8 = Embedder(backend="onnx-int8")
    e8.encode(texts[:8])
    folder = next(p for p in onnx_cache_dir().iterdir() if (p / "model.onnx").exists())
    print("export", folder, flush=True)
    fused_path = folder / "fused.onnx"
    if not fused_path.exists():
        m = optimizer.optimize_model(str(folder / "model.onnx"), model_type="bert", num_heads=12, hidden_size=384, opt_level=1, use_gpu=False)
        print("fusions", m.get_fused_operator_statistics(), flush=True)
        m.save_model_to_file(str(fused_path))
    variants = {}
    for name, ops in (("fused_int8_mm", ["MatMul"]), ("fused_int8_mm_att", ["MatMul", "Attention"]), ("fused_int8_mm_add", ["MatMul", "Add"])):
        out = folder / f"{name}.onnx"
        if not out.exists():
            try:
                quantize_dynamic(str(fused_path), str(out), op_types_to_quantize=ops, per_channel=True, reduce_range=False,
                                 weight_type=getattr(QuantType, _INT8_WEIGHTS[int8_flavour()]),
                                 extra_options={"WeightSymmetric": True, "ActivationSymmetric": False, "DefaultTensorType": onnx.TensorProto.FLOAT})
            except Exception as exc:
                print(name, "failed", exc)
                continue
        variants[name] = out.name
    files = {"int8": int8_file(int8_flavour()), **variants}
    ref = torch_e.encode(texts)
    encs = {k: OnnxEncoder(folder, f) for k, f in files.items()}
    for enc in encs.values():
        enc.forward(texts[:16])
    times, cos = time_against_torch(torch_e, encs, texts, ref, rounds=3)
    print_speeds(times, cos, len(texts))


if __name__ == "__main__":
    main()
