#!/usr/bin/env python3
"""DEVELOPMENT AID ONLY - not part of flowrt.

A mock of the `flowrt serve` HTTP API with fixture data, so the web viewer
(index.html, app.css, contexts.js, app.js in this folder) can be checked without the C++ server.
Python 3 standard library only.

    python3 web/mock_server.py [PORT] [--require-token]

Tokens: "admin-token", "operator-token", "designer-token", "viewer-token" (role = prefix).
Without a token you are an admin named "dev", unless --require-token is given (then 401).
Any other token is a 401. A viewer's cancel is a 403.

Every second a new context starts (stream event `context`, change "started"); it logs
a step_ended and ends a few seconds later. Lock holders rotate every few seconds
(stream event `lock`). ctx-7 is a rich fixture: a lock that waited, an if, a loop,
a wait, an unlock; ctx-20 is waiting (holds a lock, waits on a condition) and can be
cancelled.
"""
import json
import random
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

HERE = Path(__file__).resolve().parent
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/app.css": ("app.css", "text/css; charset=utf-8"),
          "/contexts.js": ("contexts.js", "text/javascript; charset=utf-8"),
          "/app.js": ("app.js", "text/javascript; charset=utf-8")}
TOKENS = {"admin-token": ("ada", "admin"), "operator-token": ("otto", "operator"),
          "designer-token": ("dana", "designer"), "viewer-token": ("val", "viewer")}
REQUIRE_TOKEN = "--require-token" in sys.argv

LOCK = threading.RLock()
CHANGED = threading.Condition(LOCK)
EVENTS = []          # (id, event, data-json) for the SSE stream
CONTEXTS = {}        # id -> full record
FLOWS = {}           # id -> definition record
LOCKS = {}           # name -> lock state
TABLES = {}          # name -> [records]


def iso(t):
    """Epoch seconds -> ISO 8601 UTC with milliseconds."""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (int(t * 1000) % 1000)


def parse_iso(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def emit(event, data):
    with CHANGED:
        EVENTS.append((len(EVENTS) + 1, event, json.dumps(data)))
        CHANGED.notify_all()


def summary(c):
    keys = ("id", "seq", "flow", "status", "trigger", "started_at", "ended_at", "runtime_ms", "error")
    return {k: c[k] for k in keys}


def step(path, sid, action, status, t0, t1, inputs=None, outputs=None, error=None):
    s = {"path": path, "id": sid, "action": action, "status": status,
         "started_at": iso(t0), "ended_at": iso(t1) if t1 is not None else None,
         "inputs": inputs or {}, "outputs": outputs}
    if error is not None:
        s["error"] = error
    return s


def make_context(seq, flow, t0, status, dur=0.004):
    trigger = {"type": "record", "table": "incident", "operation": random.choice(["insert", "update"]),
               "sys_id": "inc%05d" % random.randint(1, 99999)}
    if flow == "nightly_cleanup":
        trigger = {"type": "schedule", "at": iso(t0)}
    ended = status in ("completed", "error", "cancelled")
    steps = [step("1", "find", "look_up_record", "completed", t0, t0 + dur / 2,
                  {"table": "incident", "condition": "priority=1"}, {"found": True, "record": {"sys_id": trigger.get("sys_id")}})]
    if ended:
        steps.append(step("2", "assign", "update_record", "error" if status == "error" else "completed",
                          t0 + dur / 2, t0 + dur, {"table": "incident", "values": {"assigned_to": "ops"}},
                          None if status == "error" else {"record": {"assigned_to": "ops"}},
                          "record not found" if status == "error" else None))
    return {"id": "ctx-%d" % seq, "seq": seq, "flow": flow, "plan_version": "%s@%08x" % (flow, hash(flow) & 0xffffffff),
            "status": status, "trigger": trigger, "cause": None, "chain": [],
            "started_at": iso(t0), "ended_at": iso(t0 + dur) if ended else None,
            "runtime_ms": round(dur * 1000, 3) if ended else None,
            "steps": steps, "logs": [{"time": iso(t0), "level": "info", "step": "1", "message": "looking up incident"}],
            "variables": {"attempts": 1},
            "error": {"message": "record not found", "step": "2"} if status == "error" else None}


def rich_context(seq, t0):
    """A context with a lock that waited, an if, a loop, a wait and an unlock."""
    ms = lambda a: t0 + a / 1000.0
    steps = [
        step("1", "find", "look_up_record", "completed", ms(0), ms(12), {"table": "incident", "condition": "active=true"},
             {"found": True, "record": {"sys_id": "inc00042", "short_description": "<b>Disk</b> full & \"urgent\""}}),
        step("2", "take_queue", "lock", "completed", ms(12), ms(362), {"key": "incident_queue", "weight": 1, "max_attempts": 10, "delay": "50ms"},
             {"result": "success", "state": "finished", "token": 41, "attempts": 8, "waited_ms": 350}),
        step("3", "is_p1", "if", "completed", ms(362), ms(520), {"condition": "priority == 1"}, {"branch": "then"}),
        step("3.then.1", "assign", "update_record", "completed", ms(363), ms(400), {"table": "incident", "sys_id": "inc00042", "values": {"assigned_to": "ops"}}, {"record": {"assigned_to": "ops"}}),
        step("3.then.2", "cool_down", "wait", "completed", ms(400), ms(520), {"duration": "120ms"}, None),
        step("4", "each_task", "for_each", "completed", ms(520), ms(610), {"items": ["t1", "t2"]}, {"iterations": 2}),
        step("4.do.1#1", "notify", "fire_event", "completed", ms(521), ms(540), {"name": "task.notify", "payload": {"task": "t1"}}, None),
        step("4.do.2#1", "note", "log", "completed", ms(540), ms(560), {"message": "t1 done"}, None),
        step("4.do.1#2", "notify", "fire_event", "completed", ms(560), ms(580), {"name": "task.notify", "payload": {"task": "t2"}}, None),
        step("4.do.2#2", "note", "log", "completed", ms(580), ms(608), {"message": "t2 done"}, None),
        step("5", "release_queue", "unlock", "completed", ms(610), ms(640), {"key": "incident_queue"}, {"released": True}),
        step("6", "wait_ack", "wait_for_condition", "completed", ms(640), ms(900), {"table": "incident", "sys_id": "inc00042", "condition": "state=2"}, {"timed_out": False}),
        step("7", "done", "log", "completed", ms(900), ms(905), {"message": "all done"}, None),
    ]
    return {"id": "ctx-%d" % seq, "seq": seq, "flow": "escalate", "plan_version": "escalate@3f9a1c2e", "status": "completed",
            "trigger": {"type": "record", "table": "incident", "operation": "update", "sys_id": "inc00042"},
            "cause": {"context": "ctx-5", "flow": "assign_p1"}, "chain": ["assign_p1"],
            "started_at": iso(t0), "ended_at": iso(ms(905)), "runtime_ms": 555.2, "steps": steps,
            "logs": [{"time": iso(ms(12)), "level": "info", "step": "2", "message": "waiting for incident_queue"},
                     {"time": iso(ms(362)), "level": "warn", "step": "2", "message": "waited 350 ms for <incident_queue>"},
                     {"time": iso(ms(560)), "level": "info", "step": "4.do.2#1", "message": "t1 done"},
                     {"time": iso(ms(905)), "level": "info", "step": "7", "message": "all done"}],
            "variables": {"attempts": 2, "note": "<script>alert(1)</script>"}, "error": None}


def waiting_context(seq, t0):
    """A context that holds a lock and is parked on wait_for_condition (cancellable)."""
    c = make_context(seq, "assign_p1", t0, "waiting")
    c["steps"] = [
        step("1", "grab", "lock", "completed", t0, t0 + 0.2, {"key": "incident_queue", "weight": 1}, {"result": "success", "token": 40, "waited_ms": 200}),
        step("2", "await_state", "wait_for_condition", "waiting", t0 + 0.2, None, {"table": "incident", "sys_id": "inc00007", "condition": "state=6"}, None),
    ]
    return c


def figures(f):
    """A flow's counts and runtime percentiles over its contexts (the fixture has few)."""
    runs = [c for c in CONTEXTS.values() if c["flow"] == f["id"]]
    counts = {}
    for c in runs:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    times = sorted(c["runtime_ms"] for c in runs if c["runtime_ms"] is not None)
    pick = lambda p: times[min(len(times) - 1, int(p * len(times)))]
    return {"counts": counts, "figures_window": 2000,
            "runtime_ms": {"p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99), "count": len(times)} if times else None}


def seed():
    now = time.time()
    random.seed(7)
    FLOWS.update({
        "assign_p1": {"id": "assign_p1", "type": "flow", "state": "active", "revision": 3},
        "escalate": {"id": "escalate", "type": "flow", "state": "active", "revision": 5},
        "nightly_cleanup": {"id": "nightly_cleanup", "type": "flow", "state": "inactive", "revision": 2},
        "approve_change": {"id": "approve_change", "type": "flow", "state": "draft", "revision": 1},
        "notify_owner": {"id": "notify_owner", "type": "subflow", "state": "published", "revision": 4},
    })
    for f in FLOWS.values():
        f["definition"] = {"id": f["id"], "type": f["type"], "trigger": {"type": "record", "table": "incident", "on": "insert"},
                           "steps": [{"id": "find", "action": "look_up_record", "inputs": {"table": "incident"}},
                                     {"id": "assign", "action": "update_record", "inputs": {"values": {"assigned_to": "ops"}}}]}
    for seq in range(1, 81):
        t0 = now - (81 - seq) * 45
        if seq == 7:
            c = rich_context(seq, t0)
        elif seq == 20:
            c = waiting_context(seq, t0)
        else:
            flow = random.choice(["assign_p1", "escalate", "nightly_cleanup"])
            c = make_context(seq, flow, t0, random.choice(["completed"] * 6 + ["error", "cancelled"]), random.uniform(0.0003, 0.05))
        CONTEXTS[c["id"]] = c
    LOCKS.update({
        "incident_queue": {"name": "incident_queue", "limit": 2, "held": 2, "last_token": 44,
                           "holders": [{"context": "ctx-20", "weight": 1, "token": 40, "acquired_at": iso(now - 300), "expires_at": None},
                                       {"context": "ctx-29", "weight": 1, "token": 44, "acquired_at": iso(now - 1), "expires_at": iso(now + 6)}],
                           "waiters": [{"context": "ctx-30", "weight": 1, "requested_at": iso(now - 0.5), "gives_up_at": iso(now + 9)}]},
        "db-pool": {"name": "db-pool", "limit": 12, "held": 0, "last_token": 3, "holders": [], "waiters": []},
    })
    TABLES["incident"] = [{"sys_id": "inc%05d" % i, "number": "INC%07d" % i, "priority": 1 + i % 4,
                           "short_description": "Incident %d <b>not bold</b>" % i, "assigned_to": None if i % 3 else "ops",
                           **({"tags": ["db", "disk"]} if i % 5 == 0 else {})} for i in range(1, 121)]
    TABLES["change_request"] = [{"sys_id": "chg%05d" % i, "state": "new", "approval": {"required": True}} for i in range(1, 6)]
    TABLES["sys_user"] = [{"sys_id": "usr%03d" % i, "user_name": "user%d" % i, "active": i != 3} for i in range(1, 9)]


def ticker():
    """Every second: start a context, move running ones on, rotate lock holders."""
    n = 0
    while True:
        time.sleep(1)
        n += 1
        now = time.time()
        with LOCK:
            seq = max(c["seq"] for c in CONTEXTS.values()) + 1
            c = make_context(seq, random.choice(["assign_p1", "escalate"]), now, "in_progress")
            c["_end"] = now + random.uniform(1.5, 4)
            CONTEXTS[c["id"]] = c
            emit("context", {"change": "started", "context": summary(c)})
            for o in list(CONTEXTS.values()):
                if o["status"] == "in_progress" and "_end" in o:
                    if now >= o["_end"]:
                        status = random.choice(["completed"] * 4 + ["error"])
                        done = make_context(o["seq"], o["flow"], parse_iso(o["started_at"]), status, o["_end"] - parse_iso(o["started_at"]))
                        done["trigger"] = o["trigger"]
                        CONTEXTS[o["id"]] = done
                        emit("context", {"change": "ended", "context": summary(done)})
                    elif len(o["steps"]) == 1 and now - parse_iso(o["started_at"]) > 0.9:
                        o["steps"][0]["ended_at"] = iso(now)
                        o["steps"].append(step("2", "assign", "update_record", "in_progress", now, None, {"table": "incident"}))
                        emit("context", {"change": "step_ended", "context": summary(o)})
            if n % 3 == 0:
                q = LOCKS["incident_queue"]
                expired = [x for x in q["holders"] if x["expires_at"] and parse_iso(x["expires_at"]) <= now]
                for x in expired:
                    q["holders"].remove(x)
                    if q["waiters"]:
                        w = q["waiters"].pop(0)
                        q["last_token"] += 1
                        q["holders"].append({"context": w["context"], "weight": w["weight"], "token": q["last_token"],
                                             "acquired_at": iso(now), "expires_at": iso(now + 6)})
                q["waiters"].append({"context": c["id"], "weight": 1, "requested_at": iso(now), "gives_up_at": iso(now + 12)})
                q["waiters"] = [w for w in q["waiters"] if parse_iso(w["gives_up_at"]) > now][-4:]
                q["held"] = sum(x["weight"] for x in q["holders"])
                emit("lock", {"name": "incident_queue"})


class Handler(BaseHTTPRequestHandler):
    server_version = "flowrt-mock/0"

    def log_message(self, fmt, *args):
        if "-v" in sys.argv:
            super().log_message(fmt, *args)

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def user(self, query):
        auth = self.headers.get("Authorization", "")
        token = auth[7:].strip() if auth.startswith("Bearer ") else (query.get("access_token") or [""])[0]
        if not token:
            return None if REQUIRE_TOKEN else ("dev", "admin")
        return TOKENS.get(token)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path in STATIC:
            name, ctype = STATIC[url.path]
            data = (HERE / name).read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)
            return
        query = parse_qs(url.query)
        if not url.path.startswith("/api/"):
            return self.send_json(404, {"error": "not found: " + url.path})
        me = self.user(query)
        if me is None:
            return self.send_json(401, {"error": "missing or invalid bearer token"})
        parts = [unquote(p) for p in url.path.split("/")[2:]]
        if parts == ["stream"]:
            return self.stream()
        with LOCK:
            return self.route_get(parts, query, me)

    def route_get(self, parts, query, me):
        q = lambda k, d=None: (query.get(k) or [d])[0]
        if parts == ["whoami"]:
            return self.send_json(200, {"name": me[0], "role": me[1]})
        if parts == ["contexts"]:
            items = sorted(CONTEXTS.values(), key=lambda c: -c["seq"])
            if q("flow"):
                items = [c for c in items if c["flow"] == q("flow")]
            if q("status"):
                items = [c for c in items if c["status"] == q("status")]
            if q("since"):
                try:
                    since = parse_iso(q("since"))
                except ValueError:
                    return self.send_json(400, {"error": "since is not an ISO 8601 time", "pointer": "/since"})
                items = [c for c in items if parse_iso(c["started_at"]) >= since]
            if q("cursor"):
                if not q("cursor").isdigit():
                    return self.send_json(400, {"error": "invalid cursor"})
                items = [c for c in items if c["seq"] < int(q("cursor"))]
            limit = int(q("limit", "20"))
            page = items[:limit]
            nxt = str(page[-1]["seq"]) if len(items) > limit else None
            return self.send_json(200, {"contexts": [summary(c) for c in page], "next": nxt})
        if len(parts) == 2 and parts[0] == "contexts":
            c = CONTEXTS.get(parts[1])
            if not c:
                return self.send_json(404, {"error": "no context " + parts[1]})
            return self.send_json(200, {k: v for k, v in c.items() if not k.startswith("_")})
        if parts == ["locks"]:
            return self.send_json(200, {"now": iso(time.time()), "locks": list(LOCKS.values())})
        if parts == ["flows"]:
            out = [{"id": f["id"], "type": f["type"], "state": f["state"], "revision": f["revision"], **figures(f)}
                   for f in FLOWS.values()]
            return self.send_json(200, {"flows": out})
        if len(parts) in (2, 3) and parts[0] == "flows":
            f = FLOWS.get(parts[1])
            if not f:
                return self.send_json(404, {"error": "no flow " + parts[1]})
            if len(parts) == 2:
                return self.send_json(200, {**f, **figures(f)})
            if parts[2] == "plan":
                if f["state"] == "draft":
                    return self.send_json(409, {"error": "flow %s is a draft: it has no plan" % f["id"]})
                # A JSON object, as `flowrt plan` prints it (the real server's answer).
                return self.send_json(200, {"plan": {
                    "flow": f["id"], "version": "%s@3f9a1c2e" % f["id"], "trigger": f["definition"]["trigger"],
                    "dependencies": [{"type": f["type"], "id": f["id"], "fingerprint": "7e79be137e57f21c"}],
                    "units": [{"unit": 0, "steps": [{"slot": i, "id": st["id"], "action": st["action"]}
                                                    for i, st in enumerate(f["definition"]["steps"])]}]}})
        if parts == ["tables"]:
            return self.send_json(200, {"tables": sorted(TABLES)})
        if len(parts) == 3 and parts[0] == "tables" and parts[2] == "records":
            recs = TABLES.get(parts[1])
            if recs is None:
                return self.send_json(404, {"error": "no table " + parts[1]})
            start = int(q("cursor", "0")) if (q("cursor") or "0").isdigit() else 0
            limit = int(q("limit", "50"))
            nxt = str(start + limit) if start + limit < len(recs) else None
            return self.send_json(200, {"records": recs[start:start + limit], "next": nxt})
        return self.send_json(404, {"error": "no route /api/" + "/".join(parts)})

    def do_POST(self):
        url = urlparse(self.path)
        me = self.user(parse_qs(url.query))
        if me is None:
            return self.send_json(401, {"error": "missing or invalid bearer token"})
        parts = [unquote(p) for p in url.path.split("/")[2:]]
        if len(parts) == 3 and parts[0] == "contexts" and parts[2] == "cancel":
            with LOCK:
                c = CONTEXTS.get(parts[1])
                if not c:
                    return self.send_json(404, {"error": "no context " + parts[1]})
                if me[1] not in ("operator", "admin"):
                    return self.send_json(403, {"error": "role %s may not cancel contexts (needs operator)" % me[1]})
                if c["status"] not in ("queued", "in_progress", "waiting"):
                    return self.send_json(409, {"error": "context %s already ended (%s)" % (c["id"], c["status"])})
                now = time.time()
                c.update(status="cancelled", ended_at=iso(now), runtime_ms=1.5)
                c.pop("_end", None)
                for s in c["steps"]:
                    if s["ended_at"] is None:
                        s.update(status="error", ended_at=iso(now), error="cancelled")
                emit("context", {"change": "ended", "context": summary(c)})
                for lk in LOCKS.values():  # an ended context holds and waits for nothing
                    before = len(lk["holders"]) + len(lk["waiters"])
                    lk["holders"] = [x for x in lk["holders"] if x["context"] != c["id"]]
                    lk["waiters"] = [x for x in lk["waiters"] if x["context"] != c["id"]]
                    lk["held"] = sum(x["weight"] for x in lk["holders"])
                    if len(lk["holders"]) + len(lk["waiters"]) != before:
                        emit("lock", {"name": lk["name"]})
                return self.send_json(200, {"id": c["id"], "status": "cancelled"})
        return self.send_json(404, {"error": "no route " + url.path})

    def stream(self):
        """Server-Sent Events: replays after Last-Event-ID, else only new events."""
        last = self.headers.get("Last-Event-ID")
        with LOCK:
            pos = int(last) if last and last.isdigit() else len(EVENTS)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(b"retry: 2000\n\n")
            self.wfile.flush()
            while True:
                with CHANGED:
                    if pos >= len(EVENTS):
                        CHANGED.wait(15)
                    batch = EVENTS[pos:]
                    pos = len(EVENTS)
                out = "".join("id: %d\nevent: %s\ndata: %s\n\n" % e for e in batch) or ": keep-alive\n\n"
                self.wfile.write(out.encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    port = int(args[0]) if args else 8000
    seed()
    threading.Thread(target=ticker, daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print("flowrt MOCK server (development aid) on http://127.0.0.1:%d/" % port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
