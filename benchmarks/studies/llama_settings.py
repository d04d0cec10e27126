"""Prompt-read speed of the default GGUF with and without llama.cpp flash attention (2 threads).

Reads the repository's README.md as text (llama_settings.txt in docs/results/demo-profile:
2026-11-22, idle machine):

    python -m benchmarks.studies.llama_settings
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from benchmarks.studies import REPO_ROOT, parser
from ragnet.lm.models import default_model_path


def main(argv: Sequence[str] | None = None) -> None:
    parser(__doc__, "llama_settings").parse_args(argv)
    import llama_cpp

    path = str(default_model_path())
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for fa in (False, True):
        for nb in (512,):
            llm = llama_cpp.Llama(model_path=path, n_ctx=8192, n_threads=2, n_batch=nb, flash_attn=fa, verbose=False)
            toks = llm.tokenize(text.encode())[:6000]
            res = []
            for L in (1000, 4000):
                ts = []
                for rep in range(2):
                    llm.reset()
                    if hasattr(llm._ctx, "kv_cache_clear"):
                        llm._ctx.kv_cache_clear()
                    t = time.perf_counter()
                    llm.eval(toks[:L])
                    ts.append(time.perf_counter() - t)
                res.append((L, round(L / min(ts), 1)))
            t = time.perf_counter()
            n = 0
            for tok in llm.generate(toks[:1000], temp=0.0):
                n += 1
                if n >= 64:
                    break
            gen = (time.perf_counter() - t)
            print(f"flash_attn={fa} n_batch={nb} prompt tok/s {res} gen64 incl 1k read {gen:.1f}s", flush=True)
            del llm


if __name__ == "__main__":
    main()
