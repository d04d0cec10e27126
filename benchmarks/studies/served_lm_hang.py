"""A server that never answers: one basic question through `ragnet ask`, timed.

Run from a clone (it uses the test suite's fault server), with an index built by `ragnet index`:

    python -m benchmarks.studies.served_lm_hang INDEX_DIR [TIMEOUT_SECONDS]

Starts tests/lm/fault_server.FaultServer("hang") on 127.0.0.1, runs
`ragnet ask ... --strategy basic --lm openai/test-model --api-base URL --timeout T --json`, and
prints the exit status, the wall time, the HTTP requests the server received and the
question's own time (usage.seconds, without process start-up).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.studies import REPO_ROOT, parser


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "served_lm_hang")
    p.add_argument("index", help="An index folder.")
    p.add_argument("timeout", type=float, nargs="?", default=10.0, help="Seconds per LM call (--timeout).")
    args = p.parse_args(argv)
    index, timeout = args.index, args.timeout
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.lm.fault_server import FaultServer

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


if __name__ == "__main__":
    main()
