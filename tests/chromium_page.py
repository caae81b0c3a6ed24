"""Load one local page in headless Chromium (Debian's ``chromium``) over the DevTools protocol and
report what a reader's browser would: JavaScript exceptions, console errors, every network request
that is not a local file, and the value of a few expressions evaluated after the page loaded.
``tools/screenshots.sh`` also uses it to photograph the interactive trace views:

    python tests/chromium_page.py PAGE.html OUT.png CSS_SELECTOR
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


def chromium_path():
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageReport:
    errors: list = field(default_factory=list)  # exceptions and console errors
    requests: list = field(default_factory=list)  # non-local URLs the page asked for
    values: dict = field(default_factory=dict)  # expression -> value


def load(url, expressions=(), *, settle_s=2.0, timeout_s=60.0, screenshot=None, size=(1280, 1400)):
    """Open ``url`` (a file:// URL), wait for its load event and ``settle_s`` more, evaluate
    ``expressions``; return a ``PageReport``. ``screenshot=(path, css_selector)``: also scroll the
    first element matching the selector into view and save a PNG of the window to ``path``."""
    import websocket  # websocket-client

    exe = chromium_path()
    if exe is None:
        raise FileNotFoundError("no chromium on PATH (Debian: apt-get install -y chromium)")
    profile = tempfile.mkdtemp(prefix="gk-chromium-")
    proc = subprocess.Popen(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         f"--user-data-dir={profile}", "--remote-debugging-port=0", "--remote-allow-origins=*",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ws_url = None
        deadline = time.time() + timeout_s
        while ws_url is None and time.time() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                raise RuntimeError("chromium exited before it opened the DevTools port")
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                ws_url = m.group(1)
        if ws_url is None:
            raise TimeoutError("chromium did not open its DevTools port")
        browser = websocket.create_connection(ws_url, timeout=timeout_s)
        ids = iter(range(1, 1 << 30))

        def send(sock, method, session=None, **params):
            msg = {"id": next(ids), "method": method, "params": params}
            if session:
                msg["sessionId"] = session
            sock.send(json.dumps(msg))
            return msg["id"]

        report = PageReport()
        send(browser, "Target.createTarget", url="about:blank")
        session = target = None
        events = []
        while session is None:
            msg = json.loads(browser.recv())
            if msg.get("result", {}).get("targetId"):
                target = msg["result"]["targetId"]
                send(browser, "Target.attachToTarget", targetId=target, flatten=True)
            elif msg.get("result", {}).get("sessionId"):
                session = msg["result"]["sessionId"]
        for method in ("Runtime.enable", "Log.enable", "Network.enable", "Page.enable"):
            send(browser, method, session)
        send(browser, "Emulation.setDeviceMetricsOverride", session, width=size[0], height=size[1],
             deviceScaleFactor=1, mobile=False)
        send(browser, "Page.navigate", session, url=url)
        loaded_at = None
        pending = {}
        while time.time() < deadline:
            if loaded_at is not None and time.time() > loaded_at + settle_s and not pending:
                break
            browser.settimeout(0.5)
            try:
                msg = json.loads(browser.recv())
            except websocket.WebSocketTimeoutException:
                continue
            events.append(msg)
            method, params = msg.get("method"), msg.get("params", {})
            if method == "Page.loadEventFired":
                loaded_at = time.time()
                for expr in expressions:
                    pending[send(browser, "Runtime.evaluate", session, expression=expr, returnByValue=True,
                                  awaitPromise=True)] = expr  # a Promise expression may wait for the page
            elif method == "Runtime.exceptionThrown":
                d = params["exceptionDetails"]
                report.errors.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                report.errors.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                           for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                report.errors.append("log: " + params["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                req = params["request"]["url"]
                if not req.startswith(LOCAL_SCHEMES):
                    report.requests.append(req)
            elif msg.get("id") in pending:
                expr = pending.pop(msg["id"])
                report.values[expr] = msg.get("result", {}).get("result", {}).get("value")
        else:
            raise TimeoutError(f"{url} did not finish loading in {timeout_s} s")
        if screenshot:
            path, selector = screenshot
            send(browser, "Runtime.evaluate", session,
                 expression=f"document.querySelector({json.dumps(selector)}).scrollIntoView()")
            time.sleep(1.0)
            shot = send(browser, "Page.captureScreenshot", session, format="png")
            browser.settimeout(timeout_s)
            while True:
                msg = json.loads(browser.recv())
                if msg.get("id") == shot:
                    import base64

                    with open(path, "wb") as f:
                        f.write(base64.b64decode(msg["result"]["data"]))
                    break
        browser.close()
        return report
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    import sys
    from pathlib import Path

    page, out, selector = sys.argv[1:4]
    rep = load(Path(page).resolve().as_uri(), screenshot=(out, selector))
    for problem in rep.errors + [f"network request: {r}" for r in rep.requests]:
        print(f"{page}: {problem}", file=sys.stderr)
