"""``ragnet bench serve``: concurrent clients against ``ragnet serve``, and what a warm server saves
over ``ragnet ask``.

Starts ``ragnet serve`` on the index (the LMs of ``ragnet ask``: local by default), asks ``warm``
questions one after another (the first one loads the models), then lets ``clients`` threads ask
``questions`` each at once (every request's status and latency; throughput over the run), and
finally times ``ask_runs`` cold ``ragnet ask`` processes on the first questions. The warm time per
question is the median of the server's own answering time in the load run (queue wait excluded).
Every process starts with an empty LM cache, so no answer is a cached one. Questions are
``--questions-file`` lines, else made from the index's document titles ("What does the
document say about <title>?").

    ragnet bench serve --index manuals-index --clients 8 --questions 25 --threads 1

Example:
    >>> _percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else float("nan")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_questions(index_dir: Path, n: int) -> list[str]:
    """``n`` questions from the index's document titles (cycled)."""
    from ragnet.index import Index

    index = Index.load(index_dir, verify=False)
    titles, seen = [], set()
    for chunk in index.chunks:
        if chunk.title and chunk.title not in seen:
            seen.add(chunk.title)
            titles.append(chunk.title)
        if len(titles) >= n:
            break
    titles = titles or ["the documents"]
    return [f"What does the document say about {titles[i % len(titles)]}?" for i in range(n)]


def run_serve_bench(index_dir: Path, *, clients: int = 8, questions: int = 25, warm: int = 3, ask_runs: int = 2,
                    timeout: float = 3600.0, questions_list: list[str] | None = None, serve_args: Sequence[str] = (),
                    log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the load and return the figures (see the module docstring)."""
    import httpx

    total = clients * questions
    qs = questions_list or default_questions(index_dir, total + warm)
    qs = [qs[i % len(qs)] for i in range(total + warm)]
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    t_start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ragnet", "serve", "--index", str(index_dir), "--port", str(port),
                             "--queue", str(total + 8), "--timeout", str(timeout), *serve_args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_fresh_env())
    try:
        _wait_until_up(proc, url)
        startup_s = time.perf_counter() - t_start
        log(f"server up in {startup_s:.1f}s")
        client = httpx.Client(timeout=timeout + 60)
        warm_times = []
        for q in qs[:warm]:
            status, seconds, _ = _ask(client, url, q)
            warm_times.append(seconds)
            log(f"warm question: {seconds:.1f}s (status {status})")
        results, wall = _load_run(lambda q: _ask(client, url, q), qs[warm:], clients, questions, log)
        health = client.get(f"{url}/health").json()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    ok = [r for r in results if r[0] == 200]
    latencies = [r[1] for r in ok]
    service = [r[2].get("usage", {}).get("seconds", float("nan")) for r in ok]
    ask_times = _time_ask(index_dir, qs[:ask_runs], log)
    return {
        "clients": clients, "questions_per_client": questions, "requests": total,
        "answered": len(ok), "failed": len(results) - len(ok), "lost": total - len(results),
        "statuses": sorted({r[0] for r in results}),
        "latency_p50_s": round(_percentile(latencies, 50), 2), "latency_p95_s": round(_percentile(latencies, 95), 2),
        "latency_max_s": round(max(latencies), 2) if latencies else None,
        "service_p50_s": round(_percentile(service, 50), 2),
        "throughput_per_min": round(60 * len(ok) / wall, 2), "wall_s": round(wall, 1),
        "server_startup_s": round(startup_s, 1),
        # the first question after start-up loads the models; the load run's service times are all warm
        "first_question_s": round(warm_times[0], 2) if warm_times else None,
        "warm_per_question_s": round(_percentile(service, 50), 2) if service else None,
        "ragnet_ask_per_question_s": round(float(np.median(ask_times)), 2) if ask_times else None,
        "strategy": health.get("strategy"), "index_chunks": health.get("index", {}).get("chunks"),
    }


def _fresh_env() -> dict[str, str]:
    """The environment of a process the bench starts: an empty LM cache of its own, so no answer
    may come from an earlier run's."""
    return {**os.environ, "RAGNET_CACHE_DIR": tempfile.mkdtemp(prefix="ragnet-bench-cache-")}


def _wait_until_up(proc: subprocess.Popen, url: str) -> None:
    """Wait until the server at ``url`` answers ``/health`` (it loads the index first)."""
    import httpx

    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"ragnet serve exited with status {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.3)


def _ask(client: Any, url: str, question: str) -> tuple[int, float, dict]:
    """One ``/ask`` request: its status (-1: no reply), seconds and JSON body."""
    import httpx

    t0 = time.perf_counter()
    try:
        reply = client.post(f"{url}/ask", json={"question": question})
        body = reply.json()
        return reply.status_code, time.perf_counter() - t0, body
    except (httpx.HTTPError, ValueError) as exc:
        return -1, time.perf_counter() - t0, {"error": str(exc)}


def _load_run(ask: Callable[[str], tuple[int, float, dict]], qs: Sequence[str], clients: int, questions: int,
              log: Callable[[str], None]) -> tuple[list[tuple[int, float, dict]], float]:
    """``clients`` threads asking ``questions`` each of ``qs`` at once: every request's result, and
    the wall time of the run."""
    total = clients * questions
    results: list[tuple[int, float, dict]] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        for q in qs[k * questions: (k + 1) * questions]:
            got = ask(q)
            with lock:
                results.append(got)
                if len(results) % max(1, total // 10) == 0:
                    log(f"{len(results)}/{total} answered")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.perf_counter() - t0


def _time_ask(index_dir: Path, qs: Sequence[str], log: Callable[[str], None]) -> list[float]:
    """The seconds of one cold ``ragnet ask`` process per question."""
    times = []
    for q in qs:
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ragnet", "ask", q, "--index", str(index_dir)], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_fresh_env())
        times.append(time.perf_counter() - t1)
        log(f"ragnet ask: {times[-1]:.1f}s")
    return times
