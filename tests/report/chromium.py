"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages ending in NUL on file descriptors 3 and 4), with the
standard library only; and a PNG decoder for its screenshots (zlib and numpy)."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

import numpy as np

# as the machine's notes start it: no sandbox (root), nothing that reaches the network on its own
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


def binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One Chromium process and one page, attached over the pipe."""

    def __init__(self, path: str, width: int = 1400, height: int = 1000):
        self.profile = tempfile.mkdtemp(prefix="report-chromium-")
        to_chrome_r, self._send_fd = os.pipe()
        self._recv_fd, from_chrome_w = os.pipe()

        def wire():   # the child's fd 3 reads our commands, fd 4 writes its answers (moved out of the
            # way first: a pipe may already be 3 or 4, and dup2 onto itself would leave it close-on-exec)
            read, write = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w))
            os.dup2(read, 3)
            os.dup2(write, 4)
        self.proc = subprocess.Popen([path, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
                                      f"--window-size={width},{height}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=wire, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer, self._next, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.width = width
        self._viewport(height)

    def _viewport(self, height: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=self.width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read(self, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._recv_fd, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, **params) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._send_fd, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self._read(deadline - time.monotonic())
            self.events.append(event)
            if event.get("method") == method:
                return event
        raise TimeoutError(method)

    def open(self, url: str) -> None:
        """Load `url`; the viewport as tall as the page: every part of it is drawn for screenshots."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")
        self.fit()

    def fit(self) -> None:
        """The viewport as tall as the page (after a change of its height)."""
        self._viewport(int(self.evaluate("document.documentElement.scrollHeight")))

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads the page caused so far."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        return out

    def screenshot(self, x: float, y: float, width: float, height: float) -> bytes:
        """A PNG of a region of the page (page coordinates)."""
        clip = {"x": x, "y": y, "width": width, "height": height, "scale": 1}
        data = self.call("Page.captureScreenshot", session=True, format="png", clip=clip, optimizeForSpeed=True)
        return base64.b64decode(data["data"])

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._send_fd)
        os.close(self._recv_fd)
        shutil.rmtree(self.profile, ignore_errors=True)


def assert_page_renders(page, tables: int | None = None) -> list[list]:
    """A report page in headless Chromium (skipped where it is not installed, outside CI): no console
    error, `tables` table sections (when given), every chart laid out with its series drawn. Returns
    [width, height, drawn series elements] per chart."""
    if (path := binary()) is None:
        assert os.environ.get("CI") != "true", "CI=true: the browser tier must run; .ci/run installs chromium"
        return []
    browser = Browser(path)
    try:
        browser.open(page.as_uri())
        assert browser.errors() == []
        sections = browser.evaluate("document.querySelectorAll('section.table').length")
        charts = json.loads(browser.evaluate(
            "JSON.stringify([...document.querySelectorAll('figure.chart svg')].map(s => { const r = s.getBoundingClientRect(); "
            "return [r.width, r.height, [...s.querySelectorAll('.series > *')].filter(e => e.getBBox().width > 0).length]; }))"))
    finally:
        browser.close()
    assert tables is None or sections == tables, sections
    assert len(charts) >= 4 and all(w > 300 and h > 120 and drawn > 0 for w, h, drawn in charts), charts
    return charts


def decode_png(data: bytes) -> np.ndarray:
    """The pixels of an 8-bit RGB or RGBA PNG (what Chromium writes) as a (height, width, channels) array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    assert header is not None
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"unexpected PNG format {header}"
    bpp = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, width * bpp + 1)
    out = np.zeros((height, width * bpp), dtype=np.uint8)
    prior = np.zeros(width * bpp, dtype=np.int32)
    for r in range(height):
        kind, line = raw[r, 0], raw[r, 1:].astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 1:   # sub: a running sum per channel
            row = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) % 256
        elif kind == 2:   # up
            row = (line + prior) % 256
        else:             # average, paeth: each byte needs the one before it
            row = np.zeros_like(line)
            for i in range(width * bpp):
                left = row[i - bpp] if i >= bpp else 0
                up = prior[i]
                if kind == 3:
                    row[i] = (line[i] + (left + up) // 2) % 256
                else:
                    corner = prior[i - bpp] if i >= bpp else 0
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    row[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) % 256
        out[r], prior = row, row
    return out.reshape(height, width, bpp)
