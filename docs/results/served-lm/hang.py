"""A server that never answers: one basic question through `ragnet ask`, timed.

Usage (from the repository root, with an index built by `ragnet index`):
    python docs/results/served-lm/hang.py INDEX_DIR [TIMEOUT_SECONDS]

Starts tests/lm/fault_server.FaultServer("hang") on 127.0.0.1, runs
`ragnet ask ... --strategy basic --lm openai/test-model --api-base URL --timeout T --json`, and
prints the exit status, the wall time, the HTTP requests the server received and the
question's own time (usage.seconds, without process start-up).
"""
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from tests.lm.fault_server import FaultServer  # noqa: E402

index = sys.argv[1]
timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
with FaultServer("hang") as server:
    t0 = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).parent / "ragnet"), "ask",
                           "What was the population of Aldermoor in 2021?", "--index", index, "--strategy", "basic",
                           "--lm", "openai/test-model", "--api-base", server.url, "--api-key", "k",
                           "--timeout", str(timeout), "--json"], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    print(f"timeout {timeout:.0f} s: exit {proc.returncode}, {elapsed:.1f} s wall (target <= {2 * timeout + 5:.0f} s), "
          f"{server.requests} HTTP requests")
    print("stderr:", proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "")
usage = json.loads(proc.stdout)["usage"]
print(f"the question itself (usage.seconds): {usage['seconds']:.1f} s; LM calls {usage['lm_calls']}")
