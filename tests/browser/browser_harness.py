"""What the browser tests stand on: a `flowrt serve` process, a headless Chromium, and the
Chrome DevTools Protocol (CDP) to drive a tab of it.

Standard library plus Debian's python3-websockets (run with /usr/bin/python3). Every wait
polls for a condition with a deadline and fails saying what it waited for; nothing sleeps
for a fixed time to let something happen. Both child processes die with this process
(PR_SET_PDEATHSIG) and are killed by Processes.close(), which the tests call in `finally`.
"""
import asyncio
import base64
import ctypes
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

CHROMIUM = "/usr/bin/chromium"
# How long one wait for something to show may take. Generous: the server may be a
# sanitizer build and the machine busy with other tests; a pass takes milliseconds.
WAIT_S = float(os.environ.get("FLOWRT_BROWSER_WAIT_S", "30"))


class Failure(Exception):
    """A check that did not hold; its message says what was expected and what was seen."""


# ---------------------------------------------------------------- child processes

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # Runs in the child before exec: SIGKILL it when this process dies, however it dies
    # (CTest's timeout kills the test with SIGKILL, which runs no `finally`).
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class _Lines:
    """The lines a child writes to one pipe, read by a thread (so the pipe never fills)."""

    def __init__(self, stream):
        self.lines = []
        self.closed = False
        self._cond = threading.Condition()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream):
        for raw in iter(stream.readline, b""):
            with self._cond:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def wait_for(self, pattern, timeout):
        """The first match of `pattern` in a line, waiting up to `timeout` s; None if none."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    m = regex.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if self.closed or left <= 0:
                    return None
                self._cond.wait(left)

    def tail(self, n=25):
        with self._cond:
            return "\n".join(self.lines[-n:])


def _stop(proc, group=False, grace=15):
    """SIGTERM, then SIGKILL after `grace` s; with `group`, the child's whole process group."""
    if proc is None or proc.poll() is not None:
        return
    send = (lambda s: os.killpg(proc.pid, s)) if group else proc.send_signal
    try:
        send(signal.SIGTERM)
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass
    if group:  # helpers of chromium that outlived it
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# ---------------------------------------------------------------- the project

# The flows of tests/server/server_fixture.h: records, events, API calls, a lock and a wait.
FLOWS = {
    "on_incident": {
        "id": "on_incident", "trigger": {"type": "record", "table": "incident", "when": "created"},
        "actions": [
            {"id": "mark", "action": "update_record",
             "inputs": {"table": "incident", "sys_id": "{{trigger.sys_id}}", "values": {"state": "seen"}}},
            {"action": "log", "inputs": {"message": "seen {{trigger.record.number}}"}}]},
    "greet": {
        "id": "greet", "trigger": {"type": "api"},
        "inputs": [{"name": "name", "type": "string", "required": True}],
        "actions": [{"action": "log", "inputs": {"message": "hello {{inputs.name}}"}}]},
    "on_ping": {
        "id": "on_ping", "trigger": {"type": "event", "name": "ping"},
        "actions": [{"action": "log", "inputs": {"message": "pong {{trigger.payload.n}}"}}]},
    # Holds the lock "desk" until the gate record's open is true.
    "hold_desk": {
        "id": "hold_desk", "trigger": {"type": "api"},
        "inputs": [{"name": "gate", "type": "string", "required": True}],
        "actions": [
            {"id": "take", "action": "lock", "inputs": {"key": "desk", "max_attempts": 3600, "delay": "1s"}},
            {"id": "gate", "action": "wait_for_condition",
             "inputs": {"table": "gate", "sys_id": "{{inputs.gate}}",
                        "condition": {"field": "open", "op": "eq", "value": True}, "timeout": "1h"}},
            {"action": "unlock", "inputs": {"key": "desk"}}]},
}
ROLES = ("viewer", "operator", "admin")


def write_project(directory):
    """Writes flows/ and a config.json with a fresh token per role; returns {role: token}."""
    os.makedirs(os.path.join(directory, "flows"))
    for name, flow in FLOWS.items():
        with open(os.path.join(directory, "flows", name + ".json"), "w") as f:
            json.dump(flow, f, indent=2)
    tokens = {role: role + "-" + secrets.token_hex(16) for role in ROLES}
    config = {"server": {"tokens": [
        {"name": role, "role": role, "token_sha256": hashlib.sha256(tokens[role].encode()).hexdigest()}
        for role in ROLES]}}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return tokens


# ---------------------------------------------------------------- flowrt serve

class Server:
    """`flowrt serve DIR --listen 127.0.0.1:0 --data FILE`, and a client of its API."""

    def __init__(self, flowrt, project, data, token, extra=()):
        self.flowrt, self.project, self.data, self.token = flowrt, project, data, token
        self.extra = list(extra)  # more arguments (--node NAME)
        self.proc = None
        self.base = None

    def start(self, timeout=60):
        self.proc = subprocess.Popen(
            [self.flowrt, "serve", self.project, "--listen", "127.0.0.1:0", "--data", self.data, *self.extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
        self.out, self.err = _Lines(self.proc.stdout), _Lines(self.proc.stderr)
        m = self.out.wait_for(r"^flowrt serve: listening on 127\.0\.0\.1:(\d+)( as node .*)?$", timeout)
        if not m:
            raise Failure(f"flowrt serve did not print 'listening on 127.0.0.1:PORT' within {timeout} s "
                          f"(exit status {self.proc.poll()}); its stdout:\n{self.out.tail()}\nits stderr:\n{self.err.tail()}")
        self.base = f"http://127.0.0.1:{m.group(1)}"
        return self

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        _stop(self.proc)

    def stop_cleanly(self, timeout=60):
        """SIGTERM, as a service manager stops it: it must exit 0 (in a sanitizer build a
        report or a leak makes the exit status something else)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"flowrt serve did not exit within {timeout} s of SIGTERM; its stderr:\n{self.err.tail()}") from None
        if status != 0:
            raise Failure(f"flowrt serve exited with status {status} after SIGTERM, not 0; its stderr:\n{self.err.tail(60)}")

    def api(self, method, path, body=None, token=None, expect=(200, 201, 202)):
        """Calls the API (with the admin token unless told), fails unless the status is expected."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + (token or self.token), "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                status, text = res.status, res.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        if status not in expect:
            raise Failure(f"{method} {path}: expected HTTP {'/'.join(map(str, expect))}, got {status}: {text[:400]!r}")
        return json.loads(text) if text else None

    def burst(self, path, bodies, connections=16):
        """POSTs each of `bodies` to `path` (with the admin token), from `connections` kept-alive
        connections at once, as fast as the server answers; fails unless each is accepted."""
        import http.client
        host, port = self.base[len("http://"):].rsplit(":", 1)
        headers = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json"}
        errors = []

        def post(share):
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            try:
                for body in share:
                    conn.request("POST", path, json.dumps(body), headers)
                    res = conn.getresponse()
                    text = res.read()
                    if res.status not in (200, 201, 202):
                        errors.append(f"POST {path}: HTTP {res.status}: {text[:200]!r}")
                        return
                    if (res.getheader("Connection") or "").lower() == "close":
                        conn.close()
                        conn = http.client.HTTPConnection(host, int(port), timeout=30)
            except OSError as e:
                errors.append(f"POST {path}: {e}")
            finally:
                conn.close()

        threads = [threading.Thread(target=post, args=(bodies[i::connections],)) for i in range(connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise Failure(f"{len(errors)} of the burst's connections failed; the first: {errors[0]}")

    def watch_stream(self):
        """Opens GET /api/stream and reads it on a thread: the returned Watch's `resets` are
        the `reset` events' data, as they come, until its close()."""
        import http.client
        host, port = self.base[len("http://"):].rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        conn.request("GET", "/api/stream", headers={"Authorization": "Bearer " + self.token})
        res = conn.getresponse()
        if res.status != 200:
            raise Failure(f"GET /api/stream: HTTP {res.status}")
        return _Watch(conn, res)

    def wait_api(self, what, fn, timeout=WAIT_S):
        """Polls fn() (API reads) until it returns something true; returns that."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            last = fn()
            if last:
                return last
            if time.monotonic() > deadline:
                raise Failure(f"timed out after {timeout:g} s waiting for {what} (through the API)")
            time.sleep(0.05)

    def status(self, context_id):
        return self.api("GET", "/api/contexts/" + context_id)["status"]

    def wait_status(self, context_id, status):
        self.wait_api(f"context {context_id} to be {status}", lambda: self.status(context_id) == status)


class _Watch:
    """An event stream read on a thread (Server.watch_stream)."""

    def __init__(self, conn, res):
        self.conn, self.resets = conn, []
        threading.Thread(target=self._read, args=(res,), daemon=True).start()

    def _read(self, res):
        kind = None
        try:
            for raw in res:
                line = raw.decode(errors="replace").rstrip("\n")
                if line.startswith("event: "):
                    kind = line[len("event: "):]
                elif line.startswith("data: ") and kind == "reset":
                    self.resets.append(json.loads(line[len("data: "):]))
        except (OSError, ValueError):
            pass  # closed

    def close(self):
        try:
            self.conn.sock and self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()


# ---------------------------------------------------------------- chromium over CDP

class Chromium:
    """Debian's chromium, headless, with DevTools on a port it chooses (read from stderr)."""

    def __init__(self, profile_dir):
        self.profile_dir = profile_dir
        self.proc = None

    def start(self, timeout=60):
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile_dir}", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync", "--mute-audio",
             "--hide-scrollbars", "--window-size=1280,900",
             "--disable-dev-shm-usage",  # a container's /dev/shm may be too small for it
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True, preexec_fn=_die_with_parent)
        self.err = _Lines(self.proc.stderr)
        m = self.err.wait_for(r"DevTools listening on (ws://\S+)", timeout)
        if not m:
            raise Failure(f"chromium did not print 'DevTools listening on ws://...' within {timeout} s "
                          f"(exit status {self.proc.poll()}); its stderr:\n{self.err.tail()}")
        self.ws_url = m.group(1)
        return self

    def stop(self):
        _stop(self.proc, group=True, grace=10)


class Browser:
    """One CDP connection to the browser; tabs are flat sessions on it."""

    def __init__(self, websockets_module):
        self._websockets = websockets_module
        self._next = 0
        self._pending = {}
        self.exceptions = []  # Runtime.exceptionThrown events: uncaught JavaScript errors
        self.console = []

    async def connect(self, url):
        self.ws = await self._websockets.connect(url, max_size=2 ** 28, ping_interval=None)
        self._reader = asyncio.ensure_future(self._read())
        return self

    async def _read(self):
        try:
            async for raw in self.ws:
                m = json.loads(raw)
                if "id" in m:
                    fut = self._pending.pop(m["id"], None)
                    if fut and not fut.done():
                        fut.set_result(m)
                elif m.get("method") == "Runtime.exceptionThrown":
                    self.exceptions.append(m["params"]["exceptionDetails"])
                elif m.get("method") == "Runtime.consoleAPICalled":
                    args = m["params"].get("args", [])
                    self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in args))
        finally:
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(Failure("the DevTools connection to chromium closed"))

    async def send(self, method, session=None, timeout=60, **params):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        fut = asyncio.get_running_loop().create_future()
        self._pending[self._next] = fut
        await self.ws.send(json.dumps(msg))
        try:
            m = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise Failure(f"chromium did not answer {method} within {timeout} s") from None
        if "error" in m:
            raise Failure(f"{method} failed: {m['error']}")
        return m["result"]

    async def new_tab(self, width=1280, height=900):
        target = await self.send("Target.createTarget", url="about:blank")
        session = (await self.send("Target.attachToTarget", targetId=target["targetId"], flatten=True))["sessionId"]
        tab = Tab(self, session)
        await tab.send("Page.enable")
        await tab.send("Runtime.enable")
        await tab.viewport(width, height)
        return tab

    async def close(self):
        self._reader.cancel()
        await self.ws.close()


class Tab:
    def __init__(self, browser, session):
        self.browser, self.session = browser, session

    async def send(self, method, **params):
        return await self.browser.send(method, session=self.session, **params)

    async def js(self, expression):
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise Failure(f"JavaScript error evaluating {expression[:200]!r}: "
                          f"{d.get('exception', {}).get('description') or d.get('text')}")
        return r["result"].get("value")

    async def wait(self, what, expression, timeout=WAIT_S):
        """Polls `expression` until it is truthy; returns its value, or fails saying what it waited for."""
        deadline = time.monotonic() + timeout
        while True:
            value = await self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                state = await self.js("({hash: location.hash, message: document.getElementById('message')?.textContent,"
                                      " stream: document.getElementById('stream-status')?.dataset.state,"
                                      " whoami: document.getElementById('whoami')?.textContent,"
                                      " view: document.getElementById('view')?.innerText.slice(0, 600)})")
                raise Failure(f"timed out after {timeout:g} s waiting for {what}\n  last value: {value!r}\n"
                              f"  page: {json.dumps(state, indent=2)}")
            await asyncio.sleep(0.05)

    async def navigate(self, url):
        await self.send("Page.navigate", url=url)
        await self.wait(f"{url} to load", "document.readyState === 'complete' && !!document.getElementById('view')")

    async def frame(self):
        """Resolves after the page has laid out and painted twice (after a resize, say)."""
        await self.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")

    async def viewport(self, width, height):
        await self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                        mobile=width < 600)

    async def screenshot(self, paths, width=1280, height=900, full_page=True, max_height=2400):
        """Writes a PNG of the page at `width` to every path: the viewport, or with full_page
        the page's content, as tall as it is (up to max_height)."""
        await self.viewport(width, height)
        await self.frame()
        if full_page:
            h = await self.js("Math.ceil(document.body.getBoundingClientRect().height)")
            await self.viewport(width, max(200, min(h + 16, max_height)))
            await self.frame()
        data = base64.b64decode((await self.send("Page.captureScreenshot", format="png"))["data"])
        for p in paths:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)
        await self.viewport(1280, 900)
        await self.frame()
