// Routes over definitions (list, read, save at a revision, publish, activate, deactivate,
// plan, validate), calls of API flows, and test runs of any flow.
#include <algorithm>
#include <map>
#include <chrono>
#include <functional>
#include <optional>
#include <span>

#include "compiler/diagnostics.h"
#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "server/api.h"
#include "server/api_common.h"
#include "server/context_summary.h"

namespace flowrt::server {
namespace {

constexpr DurationMs kMaxWait = 300000;

// The ?wait=DURATION of a call or a test run (0 without one); false with *error set when it
// is not a duration up to kMaxWait.
bool read_wait(const ApiRequest& req, DurationMs* wait, Response* error) {
  *wait = 0;
  if (const std::string* w = req.query_value("wait")) {
    Result<DurationMs> d = parse_duration(std::string_view(*w));
    if (!d || *d < 0 || *d > kMaxWait) {
      *error = error_response(http::status::bad_request,
                              "query parameter wait must be a duration up to 5m (\"500ms\", \"10s\"): " +
                                  (d ? std::string("too long") : d.message()));
      return false;
    }
    *wait = *d;
  }
  return true;
}

// A context just started by a call or a test run: {"context_id"} (202), or with a wait the
// record once the context ended (202 with {"context_id", "status"} if it has not by then).
Reply started_context(Engine& engine, const std::string& id, DurationMs wait) {
  if (wait == 0) return json_response(http::status::accepted, Value::object({{"context_id", Value(id)}}));
  Reply reply = reply_when_ended(engine, id, std::chrono::milliseconds(wait), [&engine, context = id](PollTurn turn) -> std::optional<Response> {
    std::optional<ContextRecord> r = engine.context(context);
    if (r && is_final_status(r->status())) return json_response(http::status::ok, r->value());
    if (turn == PollTurn::kWaiting) return std::nullopt;
    return json_response(http::status::accepted,
                         Value::object({{"context_id", Value(context)}, {"status", Value(r ? r->status() : "queued")}}));
  });
  reply.started = Value::object({{"context_id", Value(id)}});
  return reply;
}

// POST /api/flows/{id}/call[?wait=DURATION]: the body is the inputs.
Reply call_flow(Engine& engine, const ApiRequest& req) {
  Response error;
  std::optional<Value> inputs = json_body(req, &error, Value::empty_object());
  if (!inputs) return error;
  DurationMs wait = 0;
  if (!read_wait(req, &wait, &error)) return error;
  Result<std::string> id = engine.call_flow(req.param("id"), *inputs, req.caller.name);
  if (!id) return engine_error(id.message());
  return started_context(engine, *id, wait);
}

// POST /api/flows/{id}/test[?wait=DURATION]: runs the flow now as its designer tests it (the
// draft when there is one, the trigger's condition bypassed), with {"record": {"table",
// "sys_id"}} for a record-triggered flow or {"inputs": {...}} (SPEC's test_flow).
Reply test_flow(Engine& engine, const ApiRequest& req) {
  Response error;
  std::optional<Value> body = json_body(req, &error, Value::empty_object());
  if (!body) return error;
  if (!body->is_object()) return error_response(http::status::bad_request, "the body must be {\"record\"} or {\"inputs\"}", "");
  for (const auto& m : body->members()) {
    const std::string_view key = m.key.as_string();
    if (key != "record" && key != "inputs") {
      return error_response(http::status::bad_request, "unknown member (expected record or inputs)",
                            pointer_append("", key));
    }
  }
  const Value& record = (*body)["record"];
  const Value& inputs = (*body)["inputs"];
  if (!record.is_null() && !inputs.is_null()) {
    return error_response(http::status::bad_request, "give record or inputs, not both", "/inputs");
  }
  if (!record.is_null() && !record.is_object()) {
    return error_response(http::status::bad_request, "\"record\" must be {\"table\", \"sys_id\"}", "/record");
  }
  if (!inputs.is_null() && !inputs.is_object()) {
    return error_response(http::status::bad_request, "\"inputs\" must be an object", "/inputs");
  }
  DurationMs wait = 0;
  if (!read_wait(req, &wait, &error)) return error;
  Result<std::string> id = engine.test_flow(req.param("id"), record, inputs, req.caller.name);
  if (!id) return engine_error(id.message());
  return started_context(engine, *id, wait);
}

// PUT /api/flows/{id}: {"definition", "revision"} saves a draft at that revision.
// `?type=flow|subflow|action`: which definition of the id a route means, when a flow and a
// subflow (or action) share it (ids are unique per type). Absent: nullopt (the first of
// flow, subflow, action that has the id). False with `error` set when the value is none.
bool read_type(const ApiRequest& req, std::optional<UnitType>* type, Response* error) {
  const std::string* text = req.query_value("type");
  if (!text) return true;
  for (UnitType u : {UnitType::kFlow, UnitType::kSubflow, UnitType::kAction}) {
    if (*text == unit_type_name(u)) {
      *type = u;
      return true;
    }
  }
  *error = error_response(http::status::bad_request, "?type must be flow, subflow or action, not '" + *text + "'", "");
  return false;
}

std::string no_definition(const ApiRequest& req, std::optional<UnitType> type) {
  return "no " + (type ? std::string(unit_type_name(*type)) : std::string("definition")) + " '" + req.param("id") + "'";
}

Reply put_flow(Engine& engine, const ApiRequest& req) {
  Response error;
  std::optional<Value> body = json_body(req, &error);
  if (!body) return error;
  if (!body->is_object()) return error_response(http::status::bad_request, "the body must be {\"definition\", \"revision\"}", "");
  const Value& definition = (*body)["definition"];
  const Value& revision = (*body)["revision"];
  if (!definition.is_object()) return error_response(http::status::bad_request, "\"definition\" must be an object", "/definition");
  if (!revision.is_string()) {
    return error_response(http::status::bad_request,
                          "\"revision\" must be the revision the definition was read at (\"0\" for a new one)",
                          "/revision");
  }
  const Value& id = definition["id"];
  if (!id.is_string() || id.as_string() != req.param("id")) {
    return error_response(http::status::bad_request, "the definition's id must be '" + req.param("id") + "'",
                          "/definition/id");
  }
  Engine::SaveOutcome saved = engine.save_if_revision(definition, revision.as_string());
  if (saved.stale) {
    return json_response(http::status::conflict,
                         Value::object({{"error", Value(saved.status.message())}, {"revision", Value(saved.revision)}}));
  }
  if (!saved.status) return engine_error(saved.status.message());
  // The answer is the definition saved, of its own type (a subflow may share a flow's id).
  std::optional<UnitType> type = UnitType::kFlow;
  for (UnitType u : {UnitType::kFlow, UnitType::kSubflow, UnitType::kAction}) {
    if (definition["type"].is_string() && definition["type"].as_string() == unit_type_name(u)) type = u;
  }
  return json_response(http::status::ok, engine.definition_info(req.param("id"), type));
}

// A lifecycle change (publish, activate, deactivate), answered with the definition after.
// `change` gets the id and the ?type asked for; activate and deactivate are of flows.
Handler lifecycle(Engine& engine, std::function<Status(Engine&, const std::string&, std::optional<UnitType>)> change,
                  bool flows_only) {
  return [&engine, change = std::move(change), flows_only](const ApiRequest& req) -> Reply {
    Response error;
    std::optional<UnitType> type;
    if (!read_type(req, &type, &error)) return error;
    if (engine.definition_info(req.param("id"), type).is_null()) {
      return error_response(http::status::not_found, no_definition(req, type));
    }
    if (flows_only && type && *type != UnitType::kFlow) {
      return error_response(http::status::bad_request,
                            "only a flow is activated or deactivated: ?type must be flow, or left out", "");
    }
    if (flows_only) {
      type = UnitType::kFlow;
    } else if (!type) {
      // Without ?type: the first of the id's definitions (flow, subflow, action) that has a
      // draft, as the engine's publish picks it, named so that the answer is that one.
      std::optional<UnitType> first, first_with_draft;
      for (UnitType u : {UnitType::kFlow, UnitType::kSubflow, UnitType::kAction}) {
        const Value info = engine.definition_info(req.param("id"), u);
        if (info.is_null()) continue;
        if (!first) first = u;
        if (!first_with_draft && info["has_draft"] == Value(true)) first_with_draft = u;
      }
      type = first_with_draft ? first_with_draft : first;
    }
    Status s = change(engine, req.param("id"), type);
    if (!s) {
      // It does not compile (422), or the engine cannot take it now (503, as elsewhere).
      Response e = engine_error(s.message());
      if (e.result() == http::status::bad_request) e = error_response(http::status::unprocessable_entity, s.message());
      return e;
    }
    return json_response(http::status::ok, engine.definition_info(req.param("id"), type));
  };
}

Value diagnostics_value(const Diagnostics& diags) {
  std::vector<Value> errors;
  for (const Diagnostic& d : diags.list()) {
    errors.push_back(Value::object({{"file", Value(d.file)}, {"pointer", Value(d.pointer)}, {"message", Value(d.message)}}));
  }
  return Value::object({{"valid", Value(errors.empty())}, {"errors", Value::array(std::move(errors))}});
}

// POST /api/validate: without a body, compiles every definition held; with one (a
// definition or an array of them), compiles those as a load would, with the definitions
// held for the rest (the posted ones replace those of the same id), keeping nothing.
Reply validate(Engine& engine, const ApiRequest& req) {
  Response error;
  std::optional<Value> body = json_body(req, &error, Value());
  if (!body) return error;
  if (body->is_null()) return json_response(http::status::ok, diagnostics_value(engine.validate()));
  if (!body->is_object() && !body->is_array()) {
    return error_response(http::status::bad_request, "the body must be a definition or an array of them", "");
  }
  std::vector<std::string> posted;
  for (const Value& d : body->is_array() ? body->items() : std::span<const Value>(&*body, 1)) {
    if (d["id"].is_string()) posted.emplace_back(d["id"].as_string());
  }
  EngineOptions options;
  options.properties = engine.properties();
  options.properties.worker_threads = 1;
  Engine scratch(options);
  std::vector<Value> others;
  for (const Value& info : engine.definition_infos()) {
    if (std::find(posted.begin(), posted.end(), info["id"].as_string()) == posted.end()) others.push_back(info["definition"]);
  }
  if (!others.empty()) (void)scratch.load_text(Value::array(std::move(others)).to_json(), "held");
  std::string text;
  write_json(*body, text);
  return json_response(http::status::ok, diagnostics_value(scratch.load_text(text, "body")));
}

// A flow's entry with its figures (counts {} and runtime_ms null when none ran lately).
Value with_figures(const Value& info, const std::map<std::string, Value>& figures) {
  // Figures are of flows' contexts: a subflow or action sharing a flow's id has none.
  auto it = info["type"] == Value("flow") ? figures.find(std::string(info["id"].as_string())) : figures.end();
  return info.with("counts", it == figures.end() ? Value::empty_object() : it->second["counts"])
      .with("runtime_ms", it == figures.end() ? Value() : it->second["runtime_ms"])
      .with("figures_window", Value(static_cast<long long>(kFiguresWindow)));
}

}  // namespace

void add_flow_routes(Router& router, ApiContext& api) {
  Engine& engine = api.engine;
  router.add(http::verb::get, "/api/flows", Permission::kRead, [&engine](const ApiRequest&) -> Reply {
    std::vector<Value> flows;
    const std::map<std::string, Value> figures = recent_figures(engine).per_flow;
    for (const Value& info : engine.definition_infos()) {
      flows.push_back(with_figures(info.without("definition").without("published"), figures));
    }
    return json_response(http::status::ok, Value::object({{"flows", Value::array(std::move(flows))}}));
  });
  router.add(http::verb::get, "/api/flows/{id}", Permission::kRead, [&engine](const ApiRequest& req) -> Reply {
    Response error;
    std::optional<UnitType> type;
    if (!read_type(req, &type, &error)) return error;
    Value info = engine.definition_info(req.param("id"), type);
    if (info.is_null()) return error_response(http::status::not_found, no_definition(req, type));
    Response res = json_response(http::status::ok, with_figures(info, recent_figures(engine, req.param("id")).per_flow));
    res.set(http::field::etag, "\"" + std::string(info["revision"].as_string()) + "\"");
    return res;
  });
  router.add(http::verb::put, "/api/flows/{id}", Permission::kDesign,
             [&engine](const ApiRequest& req) { return put_flow(engine, req); });
  router.add(http::verb::post, "/api/flows/{id}/publish", Permission::kDesign,
             lifecycle(
                 engine,
                 [](Engine& e, const std::string& id, std::optional<UnitType> type) { return e.publish(id, type); },
                 false));
  router.add(http::verb::post, "/api/flows/{id}/activate", Permission::kDesign,
             lifecycle(
                 engine, [](Engine& e, const std::string& id, std::optional<UnitType>) { return e.activate(id); }, true));
  router.add(http::verb::post, "/api/flows/{id}/deactivate", Permission::kDesign,
             lifecycle(
                 engine, [](Engine& e, const std::string& id, std::optional<UnitType>) { return e.deactivate(id); },
                 true));
  router.add(http::verb::get, "/api/flows/{id}/plan", Permission::kRead, [&engine](const ApiRequest& req) -> Reply {
    Result<Value> plan = engine.plan(req.param("id"));
    if (!plan) return engine_error(plan.message());
    return json_response(http::status::ok, Value::object({{"plan", *plan}}));
  });
  router.add(http::verb::post, "/api/flows/{id}/call", Permission::kOperate,
             [&engine](const ApiRequest& req) { return call_flow(engine, req); });
  router.add(http::verb::post, "/api/flows/{id}/test", Permission::kDesign,
             [&engine](const ApiRequest& req) { return test_flow(engine, req); });
  router.add(http::verb::post, "/api/validate", Permission::kRead,
             [&engine](const ApiRequest& req) { return validate(engine, req); });
}

}  // namespace flowrt::server
