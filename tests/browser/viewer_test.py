#!/usr/bin/python3
"""Browser tests of the web viewer: `flowrt serve` on a temporary project, driven through a
headless Chromium over the DevTools protocol, checking what a person would see.

    /usr/bin/python3 tests/browser/viewer_test.py --flowrt build/release/cli/flowrt \\
        --out build/release/tests/browser [--test viewer|restart|all] [--update-docs]

  viewer   the contexts list takes a new context from the event stream without a reload; a
           context that waited for a lock shows the wait on its timeline; Cancel is refused
           to a viewer (403, the context goes on waiting) and done for an operator; the locks
           page shows the holder and the waiter; the flows and records pages list what the
           project holds, a flow's page its plan as JSON, and a record's cell of a key it
           lacks is empty, "__proto__" too. Screenshots of each page (and the list 400 px
           wide) go to --out, and with --update-docs those the README shows to docs/img/ as well.
  burst    3,000 events posted at once while the contexts list is open: the live first page
           never holds more than its 50 rows, and once the burst is over shows the 50 newest
           contexts in order, none missing (the stream's resets of looks that left contexts
           out reload it), its Next page the 50 after them; greet's flow page, its context
           older than the newest 2,000 of all flows, shows greet's own counts and runtimes.
  restart  a context waits at a gate; the server is killed (SIGKILL) and served again on
           the same --data file; the context's page shows it waiting still, holding its
           lock, and completing once the gate opens.

Needs /usr/bin/chromium and Debian's python3-websockets (so Debian's /usr/bin/python3).
Exits 1 with what failed; chromium and the server are killed however it ends.
"""
import argparse
import asyncio
import importlib.util
import json
import os
import re
import shutil
import subprocess
import signal
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser_harness as bh  # noqa: E402
from browser_harness import Failure  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STARTED = time.monotonic()


def step(text):
    print(f"[{time.monotonic() - STARTED:6.2f} s] {text}", flush=True)


def js_str(s):
    return json.dumps(s)


def q(css):
    """A JavaScript expression: the first element matching `css`, or null."""
    return f"document.querySelector({js_str(css)})"


def text(css):
    """A JavaScript expression: the trimmed text of the first element matching `css` (undefined if none)."""
    return f"{q(css)}?.textContent.trim()"


def row(context_id, within="#contexts-table"):
    """The CSS selector of a context's row in a table."""
    return f'{within} tr[data-context-id="{context_id}"]'


class Env:
    """A temporary project, the servers started on it, one chromium; close() ends them all."""

    def __init__(self, flowrt, out, update_docs):
        self.flowrt, self.out, self.update_docs = flowrt, out, update_docs
        self.tmp = tempfile.mkdtemp(prefix="flowrt-browser-")
        self.project = os.path.join(self.tmp, "project")
        self.tokens = bh.write_project(self.project)
        self.data = os.path.join(self.tmp, "state.db")
        self.servers = []
        self.chromium = None
        self.browser = None

    def serve(self, data=None, extra=()):
        server = bh.Server(self.flowrt, self.project, data or self.data, self.tokens["admin"], extra)
        self.servers.append(server)
        server.start()
        step(f"flowrt serve is listening on {server.base}")
        return server

    async def tab(self):
        import websockets
        self.chromium = bh.Chromium(os.path.join(self.tmp, "chromium-profile")).start()
        self.browser = await bh.Browser(websockets).connect(self.chromium.ws_url)
        step("chromium is up")
        return await self.browser.new_tab()

    def shot_paths(self, name, docs):
        paths = [os.path.join(self.out, name + ".png")]
        if self.update_docs and docs:
            paths.append(os.path.join(REPO, "docs", "img", name + ".png"))
        return paths

    async def shot(self, tab, name, docs=True, **kw):
        """A screenshot to --out, and with --update-docs (unless docs=False) to docs/img/."""
        paths = self.shot_paths(name, docs)
        await tab.screenshot(paths, **kw)
        step("screenshot " + ", ".join(paths))

    def close(self, failed):
        if self.chromium:
            self.chromium.stop()
        for s in self.servers:
            s.stop()
        if failed:
            for i, s in enumerate(self.servers):
                if s.proc:
                    print(f"--- server {i + 1} ({s.base}) stderr, last lines:\n{s.err.tail(40)}", file=sys.stderr)
        shutil.rmtree(self.tmp, ignore_errors=True)


async def open_viewer(tab, server, token, who):
    """Opens the viewer at `server` and signs in with `token` through the token field."""
    await tab.navigate(server.base + "/#/contexts")
    await set_token(tab, token, who)


async def set_token(tab, token, who):
    # Before the page has wired its form, a submit is a plain one: the page reloads
    # without the token (seen under load, when navigate returned before DOMContentLoaded).
    await tab.wait("the page to start", "document.body && document.body.dataset.started === 'yes'")
    await tab.js(f"document.getElementById('token').value = {js_str(token)};"
                 "document.getElementById('token-form').requestSubmit(); true")
    await tab.wait(f"the header to say who is signed in: {who!r}", f"{text('#whoami')} === {js_str(who)}")


async def go(tab, hash_):
    await tab.js(f"location.hash = {js_str(hash_)}; true")


async def click(tab, css):
    await tab.wait(f"{css} to be there to click", f"!!{q(css)} && !{q(css)}.disabled")
    await tab.js(f"{q(css)}.click(); true")


async def expect_same_document(tab, what):
    if not await tab.js("window.__flowrtSameDocument === true"):
        raise Failure(f"the page was reloaded while {what}: it should update in place")


async def open_context(tab, context_id, status):
    await go(tab, "#/contexts/" + context_id)
    await tab.wait(f"the page of {context_id} showing status {status}",
                   f"{text('#context-id')} === {js_str(context_id)} && {text('#context-status')} === {js_str(status)}")


async def follow_to(tab, server, context_id, status):
    """Waits for the open page of a context to show `status` without a reload; on a timeout
    says what the API says, to tell a stale page from a context that did not go on."""
    try:
        await tab.wait(f"{context_id}'s page to show {status} without a reload",
                       f"{text('#context-status')} === {js_str(status)}")
    except Failure as e:
        raise Failure(f"{e}\n  the API says {context_id} is {server.status(context_id)}") from None


async def bars(tab, kind):
    """The timeline's bars of a kind: [{path, title}]."""
    return await tab.js(f"[...document.querySelectorAll('#timeline .bar.{kind}')]"
                        ".map(b => ({path: b.dataset.path, title: b.title}))")


def bar_duration_ms(bar):
    m = re.search(r"duration ([\d.,]+) ms", bar["title"])
    if not m:
        raise Failure(f"a timeline bar's title has no duration: {bar['title']!r}")
    return float(m.group(1).replace(",", ""))


def lock_queue(server, name="desk"):
    """(holders, waiters) of a lock, as context ids, through the API."""
    for lock in server.api("GET", "/api/locks")["locks"]:
        if lock["name"] == name:
            return [h["context"] for h in lock.get("holders", [])], [w["context"] for w in lock.get("waiters", [])]
    return [], []


# ---------------------------------------------------------------- the viewer

async def viewer_test(env):
    server = env.serve()
    api = server.api
    tokens = env.tokens
    # Some history first, so that the list holds more than the context it is watched for.
    api("POST", "/api/flows/greet/call?wait=30s", {"name": "Ada"}, expect=(200,))
    api("POST", "/api/events/ping", {"n": 1})

    tab = await env.tab()
    await tab.navigate(server.base + "/#/contexts")
    await tab.wait("the viewer to ask for a token (the server has tokens)",
                   f"({text('#message')} || '').includes('Authentication required')")
    await set_token(tab, tokens["admin"], "admin (admin)")
    step("signed in as admin")

    # (a) The contexts list follows the stream: a context started by an insert appears at
    # the top and its status moves on, without a reload.
    await tab.wait("the contexts table with the greet and on_ping contexts",
                   "document.querySelectorAll('#contexts-table tr[data-context-id]').length >= 2")
    await tab.wait("the event stream to be live", "document.getElementById('stream-status').dataset.state === 'live'")
    await tab.js("window.__flowrtSameDocument = true")
    incident = api("POST", "/api/tables/incident/records",
                   {"number": "INC0100", "short_description": "Printer on fire", "priority": 1})
    sys_id = incident["sys_id"]
    ctx = server.wait_api("the context on_incident started for the insert",
                          lambda: next((c["id"] for c in api("GET", "/api/contexts?flow=on_incident")["contexts"]), None))
    await tab.wait(f"row {ctx} to appear in #contexts-table", f"!!{q(row(ctx))}")
    await tab.wait(f"row {ctx}'s status to show completed",
                   f"{text(row(ctx) + ' td.status')} === 'completed'")
    first = await tab.js("document.querySelector('#contexts-table tbody tr')?.dataset.contextId")
    if first != ctx:
        raise Failure(f"the new context {ctx} should be the first row (newest first), the first is {first}")
    await expect_same_document(tab, "the new context was shown")
    step(f"(a) {ctx} appeared in the contexts list live, completed, no reload")

    # (d) Two hold_desk contexts on one closed gate: the first holds "desk" and waits at the
    # gate, the second waits for the lock. The locks page shows both.
    gate = api("POST", "/api/tables/gate/records", {"open": False})["sys_id"]
    a = api("POST", "/api/flows/hold_desk/call", {"gate": gate})["context_id"]
    server.wait_status(a, "waiting")
    b = api("POST", "/api/flows/hold_desk/call", {"gate": gate})["context_id"]
    server.wait_api(f"{b} to queue for desk behind {a}", lambda: lock_queue(server) == ([a], [b]))
    await click(tab, '#nav a[data-nav="locks"]')
    desk = 'section.lock[data-lock="desk"]'
    await tab.wait(f"the locks page to show {a} holding desk and {b} waiting",
                   f"!!{q(row(a, desk + ' table.holders'))} && !!{q(row(b, desk + ' table.waiters'))}")
    holders = await tab.js(f"[...document.querySelectorAll('{desk} table.holders tbody tr')].map(r => r.dataset.contextId)")
    waiters = await tab.js(f"[...document.querySelectorAll('{desk} table.waiters tbody tr')].map(r => r.dataset.contextId)")
    if (holders, waiters) != ([a], [b]):
        raise Failure(f"desk's holders and waiters should be [{a}] and [{b}]; the page shows {holders} and {waiters}")
    await env.shot(tab, "viewer-locks")
    step(f"(d) locks page: {a} holds desk, {b} waits")

    # (b) The waiting context's timeline shows its lock wait while it waits, and once the gate
    # opens (the first unlocks, the second takes the lock and passes the open gate) the page
    # follows it to completed: a lock-wait bar of some length, then the hold.
    await open_context(tab, b, "waiting")
    await tab.wait(f"{b}'s timeline to show a lock-wait bar while it waits", "!!document.querySelector('#timeline .bar.lock-wait')")
    await tab.js("window.__flowrtSameDocument = true")
    api("PATCH", f"/api/tables/gate/records/{gate}", {"open": True})
    await follow_to(tab, server, b, "completed")
    await expect_same_document(tab, f"{b} went on")
    waits, holds = await bars(tab, "lock-wait"), await bars(tab, "lock-hold")
    if len(waits) != 1 or len(holds) != 1:
        raise Failure(f"{b}'s timeline should have one lock-wait and one lock-hold bar; it has {waits} and {holds}")
    if bar_duration_ms(waits[0]) <= 0:
        raise Failure(f"{b} waited for desk, its lock-wait bar should last more than 0 ms: {waits[0]['title']!r}")
    if server.status(a) != "completed":
        raise Failure(f"{a} should have completed when the gate opened, it is {server.status(a)}")
    await env.shot(tab, "viewer-context")
    step(f"(b) {b}'s timeline shows its lock wait: {waits[0]['title']}")

    # (c) Cancel: a viewer is refused (403) and the context waits on; an operator cancels it.
    gate2 = api("POST", "/api/tables/gate/records", {"open": False})["sys_id"]
    c = api("POST", "/api/flows/hold_desk/call", {"gate": gate2})["context_id"]
    server.wait_status(c, "waiting")
    await open_context(tab, c, "waiting")
    await set_token(tab, tokens["viewer"], "viewer (viewer)")
    await tab.wait(f"{c}'s page again, as the viewer", f"{text('#context-id')} === {js_str(c)}")
    await click(tab, "#cancel-button")
    msg = await tab.wait("#message to show the refusal", f"({text('#message')} || '').includes('403') && {text('#message')}")
    if await tab.js(text("#context-status")) != "waiting" or server.status(c) != "waiting":
        raise Failure(f"after the refused cancel {c} should still be waiting: the page says "
                      f"{await tab.js(text('#context-status'))}, the API {server.status(c)}")
    await tab.wait("the Cancel button to be usable again after the refusal", "!document.getElementById('cancel-button').disabled")
    await env.shot(tab, "viewer-cancel-refused", docs=False, full_page=False)
    step(f"(c) the viewer's cancel was refused: {msg!r}")
    await set_token(tab, tokens["operator"], "operator (operator)")
    await tab.wait(f"{c}'s page again, as the operator", f"{text('#context-id')} === {js_str(c)} && !!{q('#cancel-button')}")
    await click(tab, "#cancel-button")
    await follow_to(tab, server, c, "cancelled")
    if await tab.js("!!document.getElementById('cancel-button')"):
        raise Failure(f"{c} has ended: its page should no longer offer Cancel")
    if server.status(c) != "cancelled":
        raise Failure(f"the page says {c} was cancelled, the API says {server.status(c)}")
    step(f"(c) the operator cancelled {c}")

    # (e) The flows page lists the project's four flows.
    await click(tab, '#nav a[data-nav="flows"]')
    await tab.wait("#flows-table", "!!document.querySelector('#flows-table tr[data-flow-id]')")
    flows = await tab.js("[...document.querySelectorAll('#flows-table tr[data-flow-id]')].map(r => r.dataset.flowId)")
    if sorted(flows) != sorted(bh.FLOWS):
        raise Failure(f"the flows page should list {sorted(bh.FLOWS)}, it lists {flows}")
    await env.shot(tab, "viewer-flows")
    step(f"(e) flows page lists {flows}")
    # A flow's page shows its plan as formatted JSON, as GET /api/flows/greet/plan gives it
    # (an object; until 2026-12-06 the page showed "[object Object]").
    await click(tab, '#flows-table tr[data-flow-id="greet"] a')
    await tab.wait("greet's flow page with its plan", f"{text('#flow-id')} === 'greet' && !!{q('#flow-plan')}")
    shown_plan = await tab.js(text("#flow-plan"))
    try:
        shown_plan = json.loads(shown_plan)
    except ValueError:
        raise Failure(f"greet's plan should show as JSON; the page shows {shown_plan[:200]!r}") from None
    if shown_plan != api("GET", "/api/flows/greet/plan")["plan"]:
        raise Failure(f"greet's page shows a plan other than GET /api/flows/greet/plan's: {json.dumps(shown_plan)[:400]}")
    step("(e) greet's page shows its plan as JSON")

    # (f) The records page of table incident shows the inserted record, as on_incident left it.
    await click(tab, '#nav a[data-nav="records"]')
    await click(tab, '#tables a[href="#/records/incident"]')
    record = f'#records-table tr[data-sys-id="{sys_id}"]'
    await tab.wait(f"record {sys_id} in #records-table", f"!!{q(record)}")
    cells = await tab.js(f"[...{q(record)}.cells].map(c => c.textContent)")
    columns = await tab.js("[...document.querySelectorAll('#records-table th')].map(c => c.textContent)")
    shown = dict(zip(columns, cells))
    for column, value in (("sys_id", sys_id), ("number", "INC0100"), ("short_description", "Printer on fire"), ("state", "seen")):
        if shown.get(column) != value:
            raise Failure(f"record {sys_id} should show {column} = {value!r}; the row shows {shown}")
    if columns[0] != "sys_id":
        raise Failure(f"the records table's first column should be sys_id: {columns}")
    await env.shot(tab, "viewer-records")
    step(f"(f) records page shows {sys_id}: {shown}")
    # A cell of a key the record lacks is empty, whatever the key: "__proto__" of a record
    # without it is not Object.prototype (until 2026-12-06 it showed "{}").
    plain = api("POST", "/api/tables/quirks/records", {"v": 1})["sys_id"]
    odd = api("POST", "/api/tables/quirks/records", {"__proto__": {"x": 1}, "constructor": "c"})["sys_id"]
    await go(tab, "#/records/quirks")
    def quirk(record_id):
        return f'#records-table tr[data-sys-id="{record_id}"]'
    await tab.wait("the records of table quirks", f"!!{q(quirk(odd))}")
    columns = await tab.js("[...document.querySelectorAll('#records-table th')].map(c => c.textContent)")
    for record, expected in ((plain, {"v": "1", "__proto__": "", "constructor": ""}),
                             (odd, {"v": "", "__proto__": '{"x":1}', "constructor": "c"})):
        cells = await tab.js(f"[...{q(quirk(record))}.cells].map(c => c.textContent)")
        shown = dict(zip(columns, cells))
        wrong = {k: shown.get(k) for k, v in expected.items() if shown.get(k) != v}
        if wrong:
            raise Failure(f"record {record} of quirks should show {expected}; it shows {wrong} (row {shown})")
    step("(f) a record's cells of keys it lacks (__proto__, constructor) are empty")

    # The list as a person opens it, with one context still waiting; then 400 px wide.
    gate3 = api("POST", "/api/tables/gate/records", {"open": False})["sys_id"]
    d = api("POST", "/api/flows/hold_desk/call", {"gate": gate3})["context_id"]
    await set_token(tab, tokens["admin"], "admin (admin)")
    await click(tab, '#nav a[data-nav="contexts"]')
    await tab.wait(f"row {d} to show waiting", f"{text(row(d) + ' td.status')} === 'waiting'")
    await env.shot(tab, "viewer-contexts")
    await tab.viewport(400, 800)
    await tab.frame()
    width = await tab.js("document.documentElement.scrollWidth")
    if width > 400:
        raise Failure(f"at 400 px wide the contexts page should not scroll sideways; it is {width} px wide")
    await env.shot(tab, "viewer-contexts-narrow", width=400, height=800)
    step("contexts list, 1280 and 400 px wide")

    # A server without --node has no cluster: the page says so.
    await click(tab, '#nav a[data-nav="cluster"]')
    await tab.wait("the cluster page to say this is no cluster node", f"{text('#no-cluster')}")
    step("the cluster page of a plain server says it is no cluster node")

    if env.browser.exceptions:
        raise Failure("the viewer threw JavaScript exceptions: " + json.dumps(env.browser.exceptions)[:2000])
    server.stop_cleanly()
    step("the server exited 0 on SIGTERM")


# ---------------------------------------------------------------- a restart

async def restart_test(env):
    server = env.serve()
    api = server.api
    gate = api("POST", "/api/tables/gate/records", {"open": False})["sys_id"]
    a = api("POST", "/api/flows/hold_desk/call", {"gate": gate})["context_id"]
    server.wait_status(a, "waiting")
    tab = await env.tab()
    await open_viewer(tab, server, env.tokens["admin"], "admin (admin)")
    await open_context(tab, a, "waiting")
    step(f"{a} waits at the gate, holding desk")

    server.kill9()
    step("the server was killed with SIGKILL")
    server = env.serve()
    api = server.api
    await open_viewer(tab, server, env.tokens["admin"], "admin (admin)")
    await open_context(tab, a, "waiting")
    takes = await bars(tab, "lock-wait")
    if len(takes) != 1:
        raise Failure(f"{a} took desk once before the restart: its timeline should have one lock-wait bar, it has {takes}")
    step(f"after the restart the viewer shows {a} waiting")
    await click(tab, '#nav a[data-nav="locks"]')
    holders = row(a, 'section.lock[data-lock="desk"] table.holders')
    await tab.wait(f"the locks page to show {a} still holding desk", f"!!{q(holders)}")
    step(f"the locks page shows {a} holding desk after the restart")

    await open_context(tab, a, "waiting")
    await tab.wait("the event stream to be live", "document.getElementById('stream-status').dataset.state === 'live'")
    await tab.js("window.__flowrtSameDocument = true")
    api("PATCH", f"/api/tables/gate/records/{gate}", {"open": True})
    await follow_to(tab, server, a, "completed")
    await expect_same_document(tab, f"{a} went on")
    waits, holds = await bars(tab, "lock-wait"), await bars(tab, "lock-hold")
    if len(waits) != 1 or len(holds) != 1:
        raise Failure(f"{a}'s timeline should have one lock-wait and one lock-hold bar (the lock taken once, "
                      f"before the restart): it has {waits} and {holds}")
    if lock_queue(server) != ([], []):
        raise Failure(f"desk should be free once {a} completed: {lock_queue(server)}")
    await env.shot(tab, "restart-completed", docs=False)
    step(f"{a} completed after the restart")
    if env.browser.exceptions:
        raise Failure("the viewer threw JavaScript exceptions: " + json.dumps(env.browser.exceptions)[:2000])
    server.stop_cleanly()
    step("the server exited 0 on SIGTERM")


# ---------------------------------------------------------------- a burst

BURST = 3000


async def burst_test(env):
    server = env.serve()
    api = server.api
    page_size = 50
    greet = api("POST", "/api/flows/greet/call?wait=30s", {"name": "Ada"}, expect=(200,))["id"]
    tab = await env.tab()
    await open_viewer(tab, server, env.tokens["admin"], "admin (admin)")
    await tab.wait(f"the contexts list with {greet}", f"!!{q(row(greet))}")
    await tab.wait("the event stream to be live", "document.getElementById('stream-status').dataset.state === 'live'")
    await tab.js("window.__flowrtSameDocument = true")
    rows = "[...document.querySelectorAll('#contexts-table tbody tr[data-context-id]')]"

    # The burst, while the page is watched: it never holds more than a page.
    await tab.js("document.getElementById('contexts-table').dataset.before = 'burst'; true")
    watch = server.watch_stream()
    posting = asyncio.ensure_future(asyncio.to_thread(server.burst, "/api/events/ping", [{"n": i} for i in range(BURST)]))
    most = looks = 0
    while not posting.done():
        shown = await tab.js(f"{rows}.length")
        most, looks = max(most, shown), looks + 1
        if shown > page_size:
            posting.cancel()
            raise Failure(f"during the burst the first page holds {shown} rows, more than its {page_size}")
        await tab.frame()
    await posting
    step(f"{BURST} events posted; the first page held at most {most} rows ({looks} looks)")

    # Once every context has ended: the 50 newest, newest first, each as the API says.
    def all_ended():
        stats = api("GET", "/api/stats")
        return stats["contexts_started"] >= BURST + 1 and stats["runnable_contexts"] == 0
    server.wait_api(f"the {BURST} ping contexts to start and end", all_ended)
    # A look of the stream that left started contexts out sends a reset, and the page
    # reads its list again on it (a new table). How the burst fell into looks is the
    # machine's: on a slow one no look may have had more than 500.
    skipped = [r for r in watch.resets if r.get("reason") == "contexts started and not announced"]
    watch.close()
    if skipped:
        await tab.wait("the page to read its list again after the stream's resets",
                       "document.getElementById('contexts-table')?.dataset.before === undefined")
    step(f"the stream sent {len(skipped)} resets for contexts it did not announce"
         + (", and the page read its list again" if skipped else ""))
    first = api("GET", f"/api/contexts?limit={page_size}")
    expected = [[c["id"], c["status"]] for c in first["contexts"]]
    shows = f"{rows}.map(r => [r.dataset.contextId, r.querySelector('td.status').textContent])"
    try:
        await tab.wait(f"the first page to show the {page_size} newest contexts, in order, as the API does",
                       f"JSON.stringify({shows}) === {js_str(json.dumps(expected, separators=(',', ':')))}")
    except Failure as e:
        shown = await tab.js(shows)
        missing = [c for c, _ in expected if c not in {s for s, _ in shown}]
        raise Failure(f"{e}\n  the page shows {len(shown)} rows, from {shown[:1]} to {shown[-1:]}; "
                      f"of the newest {page_size} it lacks {len(missing)}: {missing[:10]}") from None
    seqs = await tab.js(f"{rows}.map(r => Number(r.dataset.seq))")
    if seqs != sorted(seqs, reverse=True) or len(set(seqs)) != len(seqs):
        raise Failure(f"the first page's rows should be newest first, each once: seqs {seqs}")
    await expect_same_document(tab, "the burst was shown")
    step(f"the first page shows the {page_size} newest contexts ({expected[0][0]} .. {expected[-1][0]}), completed")

    # Its Next page: the 50 below them, as the API gives them.
    second = api("GET", f"/api/contexts?limit={page_size}&cursor={first['next']}")
    expected2 = [c["id"] for c in second["contexts"]]
    await click(tab, "#next-page")
    await tab.wait("the next page to show the 50 contexts below the first page's",
                   f"JSON.stringify({rows}.map(r => r.dataset.contextId)) === {js_str(json.dumps(expected2, separators=(',', ':')))}")
    step(f"the next page shows {expected2[0]} .. {expected2[-1]}")

    # greet ran before the newest 2,000 contexts of all flows: the list's entry has no
    # figures for it, its own route has; its page shows those (until 2026-12-06, "—").
    entry = next(f for f in api("GET", "/api/flows")["flows"] if f["id"] == "greet")
    own = api("GET", "/api/flows/greet")
    if entry["counts"] != {} or own["counts"] != {"completed": 1} or not own["runtime_ms"]:
        raise Failure(f"greet's figures should be none in GET /api/flows and its own in GET /api/flows/greet: "
                      f"{entry['counts']} and {own['counts']}, {own['runtime_ms']}")
    await go(tab, "#/flows/greet")
    completed = '#flow-counts li[data-status="completed"]'
    await tab.wait("greet's page to count its completed context",
                   f"{text('#flow-id')} === 'greet' && {text(completed)} === 'completed 1'")
    runtime = await tab.js(text("#flow-runtime"))
    if not re.fullmatch(r"[\d.,]+ ms / [\d.,]+ ms / [\d.,]+ ms", runtime or ""):
        raise Failure(f"greet's page should show its runtime p50 / p95 / p99; it shows {runtime!r}")
    step(f"greet's page shows its own counts and runtimes: {runtime}")

    # A page that shows no list of contexts keeps what it shows through a burst: the
    # stream's resets for contexts it did not announce are not about it (until 2026-12-06
    # they reloaded it at every look while the burst lasted).
    await tab.js("document.getElementById('flow-id').dataset.kept = 'yes'; true")
    watch = server.watch_stream()
    await asyncio.to_thread(server.burst, "/api/events/ping", [{"n": i} for i in range(BURST)])
    server.wait_api(f"the second {BURST} ping contexts to start and end",
                    lambda: api("GET", "/api/stats")["contexts_started"] >= 2 * BURST + 1
                    and api("GET", "/api/stats")["runnable_contexts"] == 0)
    skipped = [r for r in watch.resets if r.get("reason") == "contexts started and not announced"]
    watch.close()
    kept = await tab.js("document.getElementById('flow-id')?.dataset.kept === 'yes'")
    if skipped and not kept:
        raise Failure(f"greet's page was drawn again on the stream's {len(skipped)} resets for contexts not announced")
    step(f"greet's page kept what it shows through {len(skipped)} resets for contexts not announced")

    if env.browser.exceptions:
        raise Failure("the viewer threw JavaScript exceptions: " + json.dumps(env.browser.exceptions)[:2000])
    server.stop_cleanly()
    step("the server exited 0 on SIGTERM")


async def run(test, env):
    try:
        await test(env)
    finally:
        if env.browser:
            await env.browser.close()


# ---------------------------------------------------------------- a cluster

def node_roles(roles):
    """A JS expression: true when the cluster page's table shows each node in its role,
    the leader running every context and any other node none."""
    checks = []
    for n, r in roles.items():
        node_row = f"#nodes tr[data-node=\"{n}\"][data-role=\"{r}\"]"
        runs = "every context: " if r == "leader" else "none"
        checks.append(f"document.querySelector('{node_row}') !== null && "
                      f"document.querySelector('{node_row} td.runs').textContent.startsWith('{runs}')")
    return " && ".join(checks)


async def cluster_test(env):
    """Two nodes on the PostgreSQL test server: the viewer, opened on the follower, shows
    both with their roles and leases, and a context started on the leader live (the
    follower passes the leader's event stream on); the leader is killed, the contexts page
    reloads its list once the stream it followed has ended, and the cluster page shows the
    follower taking over and the leader gone, without a reload of the document."""
    url_file = os.environ.get("FLOWRT_PG_URL_FILE", "")
    if not url_file or not os.path.exists(url_file):
        raise Failure(f"no PostgreSQL test server: {url_file or 'FLOWRT_PG_URL_FILE'} is missing "
                      "(ctest starts one through the fixture `postgres`)")
    server_url = open(url_file).read().strip()
    schema = f"browser_cluster_{os.getpid()}"
    subprocess.run(["psql", server_url, "-qc", f"CREATE SCHEMA {schema}"], check=True)
    data = server_url + ("&" if "?" in server_url else "?") + "options=-csearch_path%3D" + schema
    # Chromium first: its start loads both cores for seconds (more under ASan), which once
    # stalled a's heartbeats past its lease while it started beside the nodes.
    tab = await env.tab()
    a = env.serve(data, ["--node", "a", "--lease-ms", "3000"])
    b = env.serve(data, ["--node", "b", "--lease-ms", "3000"])
    if b.api("GET", "/api/cluster")["node"]["role"] != "follower":
        raise Failure("b should follow: a joined first")
    await tab.navigate(b.base + "/#/cluster")  # the page from b; its API reads go through the leader
    await set_token(tab, env.tokens["viewer"], "viewer (viewer)")
    await tab.wait("both nodes, a leading", node_roles({"a": "leader", "b": "follower"}))
    await env.shot(tab, "viewer-cluster")
    step("the cluster page shows a leading and b following")
    # The contexts page from b follows the leader's stream, passed on by b: a context
    # started through a appears live, without a reload.
    await go(tab, "#/contexts")
    await tab.wait("the event stream through the follower to be live",
                   "document.getElementById('stream-status').dataset.state === 'live'")
    await tab.js("window.__flowrtSameDocument = true")
    a.api("POST", "/api/tables/incident/records", {"number": "INC0200", "short_description": "via a", "priority": 1})
    ctx = a.wait_api("the context on_incident started on a",
                     lambda: next((c["id"] for c in a.api("GET", "/api/contexts?flow=on_incident")["contexts"]), None))
    await tab.wait(f"row {ctx} to appear in #contexts-table on b's page", f"!!{q(row(ctx))}")
    await tab.wait(f"row {ctx}'s status to show completed", f"{text(row(ctx) + ' td.status')} === 'completed'")
    await expect_same_document(tab, "the new context was shown through the follower")
    step(f"{ctx}, started on the leader, appeared live on the follower's page")
    # The leader goes: its stream, passed on by b, ends, and what comes after it cannot
    # carry on from it (a `reset`, or a new stream): the page reloads what it shows.
    await tab.js("document.getElementById('contexts-table').dataset.shownBefore = 'yes'")
    a.kill9()
    step("a killed (kill -9)")
    await tab.wait("the contexts page to reload what it shows after the stream's gap",
                   "document.getElementById('contexts-table') !== null && "
                   "document.getElementById('contexts-table').dataset.shownBefore === undefined", timeout=60)
    await expect_same_document(tab, "the page reloaded its list, not the document")
    step("the contexts page reloaded its list after the leader's stream ended")
    await go(tab, "#/cluster")
    await tab.wait("b to take over and a to show gone", node_roles({"b": "leader", "a": "gone"}), timeout=60)
    await env.shot(tab, "viewer-cluster-takeover", docs=False)
    step("b leads; a is gone")
    if env.browser.exceptions:
        raise Failure("the viewer threw JavaScript exceptions: " + json.dumps(env.browser.exceptions)[:2000])
    b.stop_cleanly()
    subprocess.run(["psql", server_url, "-qc", f"SET client_min_messages = warning; DROP SCHEMA {schema} CASCADE"], check=False)


TESTS = {"viewer": viewer_test, "burst": burst_test, "restart": restart_test, "cluster": cluster_test}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flowrt", required=True, help="the flowrt binary")
    p.add_argument("--out", required=True, help="directory for the screenshots")
    p.add_argument("--test", choices=[*TESTS, "all"], default="all")
    p.add_argument("--update-docs", action="store_true", help="also write the screenshots to docs/img/")
    args = p.parse_args()
    if importlib.util.find_spec("websockets") is None:
        sys.exit(f"FAIL: the browser tests need Debian's python3-websockets (apt-get install python3-websockets) "
                 f"and /usr/bin/python3 to run them; {sys.executable} has no websockets module")
    if not os.access(bh.CHROMIUM, os.X_OK):
        sys.exit(f"FAIL: the browser tests need {bh.CHROMIUM} (apt-get install chromium)")
    if not os.access(args.flowrt, os.X_OK):
        sys.exit(f"FAIL: {args.flowrt} is not an executable")
    # A SIGTERM (or Ctrl-C) ends the test through the `finally` below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL: terminated"))

    for name in ([*TESTS] if args.test == "all" else [args.test]):
        env = Env(os.path.abspath(args.flowrt), os.path.abspath(args.out), args.update_docs)
        failed = True
        try:
            asyncio.run(run(TESTS[name], env))
            failed = False
        except Failure as e:
            print(f"FAIL ({name}): {e}", file=sys.stderr)
        finally:
            env.close(failed)
        if failed:
            sys.exit(1)
        step(f"PASS ({name})")


if __name__ == "__main__":
    main()
