"""Headless Chromium driven over the DevTools protocol: one tab, real keyboard and mouse input,
the page's script errors collected, screenshots. A small client on the ``websockets`` package, so
the tests need no browser download: they use the Chromium the system has (Debian's
``chromium-headless-shell``), and skip without one."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--remote-debugging-port=0",
         "--hide-scrollbars", "--mute-audio")


def browser_path() -> str:
    """The Chromium to run; the test is skipped when there is none."""
    for name in BROWSERS:
        found = shutil.which(name) or (f"/usr/lib/chromium/{name}" if Path(f"/usr/lib/chromium/{name}").exists()
                                       else None)
        if found:
            return found
    pytest.skip("no headless Chromium (apt-get install chromium-headless-shell)")


class Chromium:
    """One headless Chromium with one tab (``with Chromium(width, height) as tab:``)."""

    def __init__(self, width: int = 900, height: int = 1000) -> None:
        self.width, self.height = width, height
        self.events: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self.session: str | None = None  # the tab's, once attached

    def __enter__(self) -> "Chromium":
        from websockets.sync.client import connect

        self.profile = tempfile.mkdtemp(prefix="ragnet-chromium-")
        # a session of its own: the browser and every process it starts (a wrapper script runs the
        # real binary as its child) end together at the exit
        self.proc = subprocess.Popen([browser_path(), *FLAGS, f"--user-data-dir={self.profile}",
                                      f"--window-size={self.width},{self.height}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        deadline = time.time() + 60
        url = None
        while url is None:
            line = self.proc.stderr.readline()
            if not line and (self.proc.poll() is not None or time.time() > deadline):
                self.__exit__()
                raise RuntimeError("Chromium did not start")
            if "DevTools listening on " in line:
                url = line.split("DevTools listening on ", 1)[1].strip()
        try:
            self.ws = connect(url, max_size=None, open_timeout=30)
            self.target = self.send("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.send("Target.attachToTarget", targetId=self.target, flatten=True)["sessionId"]
            self.send("Target.setDiscoverTargets", discover=True, session=False)
            for domain in ("Page", "Runtime", "Log"):
                self.send(f"{domain}.enable")
            self.send("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            with contextlib.suppress(Exception):
                self.send("Browser.close", session=False, timeout=5)
            ws.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):  # the browser's process group: the one this started
            if self._group_gone(0) or self._group_gone(sig) or self._wait_group(10):
                break
        self.proc.wait(10)
        self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)  # its profile, once nothing writes to it

    def _group_gone(self, sig: int) -> bool:
        """Send ``sig`` to the browser's process group (0: none, a check); whether it has no process left."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            return True
        self.proc.poll()  # reap the group leader
        return False

    def _wait_group(self, seconds: float) -> bool:
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self._group_gone(0):
                return True
            time.sleep(0.05)
        return False

    # -- the protocol -----------------------------------------------------------------------
    def send(self, method: str, session: bool | str = True, timeout: float = 60, **params: Any) -> dict[str, Any]:
        """Call ``method`` on the tab (``session=False``: the browser; a session id: another tab)
        and return its result."""
        message_id = next(self._ids)
        message = {"id": message_id, "method": method, "params": params}
        if isinstance(session, str):
            message["sessionId"] = session
        elif session and self.session is not None:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        deadline = time.time() + timeout
        while True:
            reply = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.time())))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page (promises awaited)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression: str, timeout: float = 60) -> Any:
        """Poll ``expression`` until it is truthy (an element counts: it comes back as ``{}``); its value."""
        deadline = time.time() + timeout
        while True:
            value = self.js(expression)
            if value or value == {}:
                return value
            if time.time() > deadline:
                raise AssertionError(f"timed out waiting for {expression}")
            time.sleep(0.05)

    # -- a person's actions -----------------------------------------------------------------
    def goto(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && location.href !== 'about:blank'")

    def reload(self) -> None:
        self.js("window.__reloading = true")
        self.send("Page.reload")
        self.wait("!window.__reloading && document.readyState === 'complete'")

    def type(self, selector: str, text: str) -> None:
        """Focus ``selector``, select what it holds and type ``text`` over it."""
        self.js(f"(() => {{ const el = document.querySelector({json.dumps(selector)}); el.focus(); el.select(); }})()")
        self.send("Input.insertText", text=text)

    def press(self, key: str = "Enter", code: int = 13) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code,
                      text="\r" if kind == "keyDown" and key == "Enter" else "")

    def click(self, selector: str, text: str | None = None) -> None:
        """A mouse click in the middle of the element ``selector`` (the first whose text holds ``text``)."""
        find = (f"[...document.querySelectorAll({json.dumps(selector)})]"
                f".find((el) => {json.dumps(text)} === null || el.textContent.includes({json.dumps(text)}))")
        box = self.js(f"(() => {{ const el = {find}; if (!el) return null; el.scrollIntoView({{block: 'center'}});"
                      " const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        assert box is not None, f"no {selector} holding {text!r}"
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (not only what the window shows), written to ``path``."""
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": self.width, "height": size["height"], "scale": 1})
        data = base64.b64decode(shot["data"])
        Path(path).write_bytes(data)
        return data

    def errors(self) -> list[str]:
        """The page's uncaught script errors and the requests its Content-Security-Policy blocked."""
        out = []
        for event in self.events:
            if event["method"] == "Runtime.exceptionThrown":
                out.append(json.dumps(event["params"]["exceptionDetails"])[:500])
            elif event["method"] == "Log.entryAdded" and "Content Security Policy" in event["params"]["entry"]["text"]:
                out.append(event["params"]["entry"]["text"])
        return out

    def opened(self) -> dict[str, str]:
        """The tabs the page opened (a link with ``target=_blank``): their ids and URLs (empty
        while a tab has not committed one, and for a PDF, which a headless shell downloads)."""
        tabs: dict[str, str] = {}
        for event in self.events:
            info = event["params"].get("targetInfo", {}) if event["method"].startswith("Target.") else {}
            if info.get("openerId") == self.target:
                tabs[info["targetId"]] = info.get("url", "")
        return tabs

    def text_of(self, target: str, timeout: float = 30) -> str:
        """The text of another tab's page, once it has loaded ("" if it shows none by ``timeout``)."""
        session = self.send("Target.attachToTarget", targetId=target, flatten=True, session=False)["sessionId"]
        deadline = time.time() + timeout
        while True:
            result = self.send("Runtime.evaluate", session=session, returnByValue=True,
                               expression="document.readyState === 'complete' && document.body ? "
                                          "document.body.innerText : ''")
            shown = result.get("result", {}).get("value") or ""
            if shown or time.time() > deadline:
                return shown
            time.sleep(0.05)
