#!/usr/bin/env python3
"""Checks that the API's documents say what the server does:

  1. docs/api/openapi.yaml is OpenAPI 3.1 shaped: `openapi: 3.1.x`, an info with title and
     version, paths; a bearerAuth security scheme; every operation has responses, a unique
     operationId, declares each {parameter} of its path, and every local $ref resolves;
  2. the (method, path) operations it documents are exactly the routes that server/*.cpp
     registers with `router.add(http::verb::X, "PATH", Permission::kP, ...)`, plus the web
     viewer's files, which api_viewer.cpp registers in a loop over the names that
     server/CMakeLists.txt embeds (FLOWRT_WEB_NAMES: "/", "/app.css", "/contexts.js", "/app.js");
  3. each operation's x-flowrt-role is the route's permission (public, read, operate,
     design), and public routes, and only they, say `security: []`;
  4. docs/API.md names every route as "METHOD PATH".

usage: check_openapi.py [ROOT]   (ROOT: the repository; by default the one holding this file)
Prints each failure and closes with 'N passed, M failed'; exits 1 if any failed, and 77
(skipped) if the yaml module is missing (Debian's python3-yaml; scripts/setup-deps.sh
installs it).
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402  (tests/support/checks.py)

try:
    import yaml
except ImportError:
    # Exit 77: ctest reports the test as skipped (SKIP_RETURN_CODE), not passed.
    print(f"check_openapi: SKIPPED: {sys.executable} has no yaml module; install Debian's python3-yaml "
          "(scripts/setup-deps.sh does)", file=sys.stderr)
    sys.exit(77)

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(ROOT, "server")
OPENAPI = os.path.join(ROOT, "docs", "api", "openapi.yaml")
API_MD = os.path.join(ROOT, "docs", "API.md")

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
ROLES = {"Public": "public", "Read": "read", "Operate": "operate", "Design": "design"}

checks = Checks("check_openapi")
check = checks.check


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- the routes the code registers ----

ADD = re.compile(r'router\.add\(\s*http::verb::(\w+)\s*,\s*"([^"]*)"\s*,\s*Permission::k(\w+)')
ANY_ADD = re.compile(r'router\.add\(')
VIEWER_LOOP = re.compile(r'router\.add\(\s*http::verb::get\s*,\s*f\.path\s*,\s*Permission::kPublic')


def viewer_names():
    """The paths the viewer's files are served at, as server/CMakeLists.txt embeds them."""
    text = read(os.path.join(SERVER, "CMakeLists.txt"))
    m = re.search(r'set\(FLOWRT_WEB_NAMES((?:\s+"[^"]*")+)\s*\)', text)
    if not m:
        return None
    return re.findall(r'"([^"]*)"', m.group(1))


def code_routes():
    routes = {}  # (method, path) -> role
    for name in sorted(os.listdir(SERVER)):
        if not name.endswith(".cpp"):
            continue
        text = read(os.path.join(SERVER, name))
        literal = list(ADD.finditer(text))
        loops = list(VIEWER_LOOP.finditer(text))
        # Every router.add must be understood: a literal route, or the viewer's loop.
        check(len(ANY_ADD.findall(text)) == len(literal) + len(loops),
              f"server/{name}: a router.add that is neither a literal route nor the viewer's loop "
              f"(teach tests/api/check_openapi.py how to read it)")
        for m in literal:
            verb = m.group(1).rstrip("_")
            key = (verb, m.group(2))
            check(key not in routes, f"server/{name}: {verb.upper()} {m.group(2)} is registered twice")
            check(m.group(3) in ROLES, f"server/{name}: unknown permission k{m.group(3)}")
            routes[key] = ROLES.get(m.group(3), m.group(3))
        if loops:
            names = viewer_names()
            if check(bool(names), "server/CMakeLists.txt: no FLOWRT_WEB_NAMES list (the viewer's paths)"):
                for path in names:
                    routes[("get", path)] = "public"
    return routes


# ---- the OpenAPI document ----

def resolve(doc, ref):
    if not ref.startswith("#/"):
        return None
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def refs(node, where, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.append((where, v))
            else:
                refs(v, where, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, where, out)


def parameters_of(doc, params):
    out = []
    for p in params or []:
        if isinstance(p, dict) and "$ref" in p:
            p = resolve(doc, p["$ref"]) or {}
        out.append(p)
    return out


def documented_routes(doc):
    routes = {}  # (method, path) -> role
    check(isinstance(doc, dict), "openapi.yaml: not a mapping")
    if not isinstance(doc, dict):
        return routes
    check(re.fullmatch(r"3\.1\.\d+", str(doc.get("openapi", ""))) is not None,
          f"openapi.yaml: openapi must be 3.1.x, not {doc.get('openapi')!r}")
    info = doc.get("info")
    check(isinstance(info, dict) and isinstance(info.get("title"), str) and isinstance(info.get("version"), str),
          "openapi.yaml: info needs a title and a version (strings)")
    schemes = (doc.get("components") or {}).get("securitySchemes") or {}
    bearer = schemes.get("bearerAuth") or {}
    check(bearer.get("type") == "http" and bearer.get("scheme") == "bearer",
          "openapi.yaml: components.securitySchemes.bearerAuth must be {type: http, scheme: bearer}")
    check(doc.get("security") == [{"bearerAuth": []}], "openapi.yaml: the default security must be bearerAuth")
    paths = doc.get("paths")
    if not check(isinstance(paths, dict) and paths, "openapi.yaml: paths must be a non-empty mapping"):
        return routes

    all_refs = []
    refs(doc, "openapi.yaml", all_refs)
    for where, ref in all_refs:
        check(resolve(doc, ref) is not None, f"{where}: $ref {ref} does not resolve")

    operation_ids = {}
    for path, item in paths.items():
        if not check(isinstance(path, str) and path.startswith("/") and isinstance(item, dict),
                     f"openapi.yaml: path {path!r} must start with '/' and be a mapping"):
            continue
        templated = set(re.findall(r"\{([^}]+)\}", path))
        path_params = {p.get("name") for p in parameters_of(doc, item.get("parameters")) if p.get("in") == "path"}
        for method, op in item.items():
            if method not in METHODS:
                check(method in ("parameters", "summary", "description", "servers") or method.startswith("x-"),
                      f"openapi.yaml: {path}: unknown key {method!r}")
                continue
            name = f"{method.upper()} {path}"
            if not check(isinstance(op, dict), f"openapi.yaml: {name} is not a mapping"):
                continue
            responses = op.get("responses")
            check(isinstance(responses, dict) and responses and
                  all(re.fullmatch(r"[1-5](\d\d|XX)|default", str(code)) for code in responses),
                  f"openapi.yaml: {name} needs responses keyed by HTTP status")
            op_id = op.get("operationId")
            if check(isinstance(op_id, str), f"openapi.yaml: {name} has no operationId"):
                check(op_id not in operation_ids,
                      f"openapi.yaml: {name}: operationId {op_id} is also {operation_ids.get(op_id)}")
                operation_ids[op_id] = name
            declared = path_params | {p.get("name") for p in parameters_of(doc, op.get("parameters"))
                                      if p.get("in") == "path"}
            check(templated == declared,
                  f"openapi.yaml: {name} declares path parameters {sorted(declared)}, its path has {sorted(templated)}")
            role = op.get("x-flowrt-role")
            check(role in ROLES.values(), f"openapi.yaml: {name}: x-flowrt-role must be one of {sorted(ROLES.values())}")
            public_security = op.get("security") == []
            check(public_security == (role == "public"),
                  f"openapi.yaml: {name}: `security: []` belongs on public routes, and only there")
            routes[(method, path)] = role
    return routes


def main():
    code = code_routes()
    check(len(code) > 0, "server/*.cpp: no routes found")
    try:
        doc = yaml.safe_load(read(OPENAPI))
    except (OSError, yaml.YAMLError) as e:
        checks.fail(f"openapi.yaml: cannot read it: {e}")
        doc = None
    documented = documented_routes(doc) if doc is not None else {}

    for method, path in sorted(set(code) - set(documented)):
        check(False, f"openapi.yaml: {method.upper()} {path} is a route (server/*.cpp) but is not documented")
    for method, path in sorted(set(documented) - set(code)):
        check(False, f"openapi.yaml: {method.upper()} {path} is documented but no server/*.cpp registers it")
    for key in sorted(set(code) & set(documented)):
        check(code[key] == documented[key],
              f"openapi.yaml: {key[0].upper()} {key[1]}: x-flowrt-role is {documented[key]}, the code needs {code[key]}")

    try:
        md = read(API_MD)
    except OSError as e:
        checks.fail(f"docs/API.md: cannot read it: {e}")
        md = None
    if md is not None:
        for method, path in sorted(code):
            said = re.compile(r"(?<![A-Za-z])" + method.upper() + " " + re.escape(path) + r"(?![\w/{}.-])")
            check(said.search(md) is not None, f"docs/API.md: never names {method.upper()} {path}")

    return checks.report(f"{len(code)} routes in server/*.cpp, {len(documented)} operations in docs/api/openapi.yaml")


if __name__ == "__main__":
    sys.exit(main())
