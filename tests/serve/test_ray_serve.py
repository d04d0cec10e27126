"""Two Ray Serve replicas of ``ragnet serve`` on a local Ray cluster, answering from one index
folder with a scripted LM (skipped without ``ray[serve]``, the ``ragnet[scale]`` extra)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from ragnet.serve import ServeOptions
from tests.serve.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


def slow_scripted_lm():
    """Every replica's LM (built in the replica): answers after 1 s, so that questions asked at once
    need both replicas."""
    from tests.programs.scripted import ProgramLM

    def answer(prompt, n):
        time.sleep(1.0)
        return {"answer": "Paris", "evidence_ids": ["c1"]}

    return ProgramLM(answer=answer).lm()


@pytest.fixture
def ray_cluster():
    pytest.importorskip("ray.serve", reason="ray[serve] is not installed (pip install 'ragnet[scale]')")
    import ray
    from ray import serve

    # the replicas import this checkout's ragnet and tests, as this process does
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}})
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        yield serve, f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()


@pytest.mark.slow  # 2.5-5 minutes on one shared core: Ray's start and two replicas importing ragnet
def test_two_replicas_answer_from_one_index(ray_cluster, serve_index):
    from ragnet.serve.ray_serve import REPLICA_HEADER, application

    serve, url = ray_cluster
    options = ServeOptions(index=serve_index.path, reload_every=0, timeout=60, queue=2)
    serve.run(application(options, replicas=2, make_lm=slow_scripted_lm), name="ragnet", route_prefix="/")
    assert httpx.get(f"{url}/health", timeout=30).json()["index"]["chunks"] == 4

    def ask(_):
        return httpx.post(f"{url}/ask", json={"question": "Capital of France?", "strategy": "basic"}, timeout=60)

    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(ask, range(4)))
    assert [r.status_code for r in replies] == [200] * 4
    assert {r.json()["answer"] for r in replies} == {"Paris"} and all(r.json()["citations"] for r in replies)
    assert len({r.headers[REPLICA_HEADER] for r in replies}) == 2  # both replicas answered
