"""``ragnet bench serve`` on a tiny index with a served LM: every request is accounted for."""

from __future__ import annotations


def test_serve_bench_counts_every_request(tmp_path, monkeypatch):
    import ragnet
    from ragnet.bench.serve_load import run_serve_bench
    from tests.lm.fault_server import FaultServer

    docs = [ragnet.Document(id=n.lower(), title=n, text=f"{n} is a city with a river.") for n in ("Paris", "Rome")]
    index = ragnet.Index.build(docs, tmp_path / "idx", show_progress=False)
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGNET_TEST_LM_KEY", "lm-key")
    with FaultServer("ok") as lm:
        result = run_serve_bench(index.path, clients=3, questions=2, warm=1, ask_runs=0, timeout=60,
                                 serve_args=["--lm", "openai/test-model", "--api-base", lm.url, "--answer-lm", "none",
                                             "--lm-api-key-env", "RAGNET_TEST_LM_KEY", "--strategy", "basic"],
                                 log=lambda _: None)
    assert (result["requests"], result["answered"], result["failed"], result["lost"]) == (6, 6, 0, 0)
    assert result["statuses"] == [200] and result["latency_p95_s"] >= result["latency_p50_s"] > 0
    # a figure for every warm answer; the fake LM answers in milliseconds, so its median may round to 0.0
    assert result["throughput_per_min"] > 0 and result["warm_per_question_s"] is not None
    assert result["warm_per_question_s"] >= 0
