// Routes over tables and records, and the operations that start flows: events and calls.
#include <charconv>

#include "compiler/compiler.h"
#include "plans/value_json.h"

#include "runtime/engine.h"
#include "server/api.h"
#include "server/api_common.h"

namespace flowrt::server {
namespace {

// ?where= as a condition object (null when absent).
std::optional<Value> where_param(const ApiRequest& req, Response* error) {
  const std::string* text = req.query_value("where");
  if (!text) return Value();
  Value v;
  JsonParseError e;
  if (!parse_json(*text, &v, &e)) {
    *error = error_response(http::status::bad_request, "query parameter where is not valid JSON: " + e.describe(),
                            e.pointer);
    return std::nullopt;
  }
  return v;
}

// A condition the engine would refuse, answered 400 with the pointer of the value at fault:
// under `base` ("/where" in a body, "" for ?where=, whose pointers are into its JSON).
std::optional<Response> condition_error(const Value& where, const std::string& base) {
  Diagnostics diags;
  Condition c;
  if (compile_record_condition(where, "where", "", &c, &diags)) return std::nullopt;
  const Diagnostic& first = diags.list().front();
  return error_response(http::status::bad_request, "where: " + first.message, base + first.pointer);
}

// A body that must be an object (the values of a record, a payload).
std::optional<Value> object_body(const ApiRequest& req, Response* error, std::string_view what) {
  std::optional<Value> body = json_body(req, error);
  if (!body) return std::nullopt;
  if (!body->is_object()) {
    *error = error_response(http::status::bad_request, std::string(what) + " must be a JSON object", "");
    return std::nullopt;
  }
  return body;
}

Reply list_records(Engine& engine, const ApiRequest& req) {
  Response error;
  const std::optional<Value> where = where_param(req, &error);
  if (!where) return error;
  if (!where->is_null()) {
    if (std::optional<Response> bad = condition_error(*where, "")) return std::move(*bad);
  }
  const std::optional<int64_t> limit = int_param(req, "limit", 100, 1, 10000, &error);
  const std::optional<int64_t> cursor = int_param(req, "cursor", 0, 0, INT64_MAX - 20000, &error);
  if (!limit || !cursor) return error;
  // The cursor is a position in insertion order: the page is read as the first
  // cursor + limit + 1 matches, the extra one telling whether there is a next page.
  Result<std::vector<Value>> found =
      engine.find_records(req.param("table"), *where, static_cast<size_t>(*cursor + *limit + 1));
  if (!found) return engine_error(found.message());
  // Up to `limit` of them, fewer when the body's budget is reached first (kPageBodyBytes):
  // the next page begins right after the last one taken.
  const size_t from = static_cast<size_t>(*cursor);
  PageBody body("records");
  size_t next = from;  // the position after the last one taken
  while (next < found->size() && next - from < static_cast<size_t>(*limit) && body.add((*found)[next])) ++next;
  const bool more = found->size() > next;
  return std::move(body).finish(more ? Value(std::to_string(next)) : Value());
}

// The body of an update or delete where: {"where": CONDITION, "values": {...}}. Returns the
// error to answer, or nothing when the body is right.
std::optional<Response> read_where(const ApiRequest& req, Value* where, Value* values, bool with_values) {
  Response error;
  std::optional<Value> body = object_body(req, &error, "the body");
  if (!body) return error;
  *where = (*body)["where"];
  if (where->is_null()) return error_response(http::status::bad_request, "the body needs a \"where\" condition", "/where");
  if (std::optional<Response> bad = condition_error(*where, "/where")) return bad;
  if (with_values) {
    *values = (*body)["values"];
    if (!values->is_object()) return error_response(http::status::bad_request, "\"values\" must be an object", "/values");
  }
  return std::nullopt;
}

}  // namespace

void add_record_routes(Router& router, ApiContext& api) {
  Engine& engine = api.engine;
  router.add(http::verb::get, "/api/tables", Permission::kRead, [&engine](const ApiRequest&) -> Reply {
    std::vector<Value> names;
    for (const std::string& t : engine.tables()) names.emplace_back(t);
    return json_response(http::status::ok, Value::object({{"tables", Value::array(std::move(names))}}));
  });
  router.add(http::verb::post, "/api/tables/{table}/records", Permission::kOperate,
             [&engine](const ApiRequest& req) -> Reply {
               Response error;
               std::optional<Value> values = object_body(req, &error, "the record's values");
               if (!values) return error;
               Result<Value> r = engine.insert(req.param("table"), *values, req.caller.name);
               if (!r) return engine_error(r.message());
               Response res = json_response(http::status::created, *r);
               res.set(http::field::location, "/api/tables/" + encode_path_segment(req.param("table")) + "/records/" +
                                                  encode_path_segment((*r)["sys_id"].as_string()));
               return res;
             });
  router.add(http::verb::get, "/api/tables/{table}/records", Permission::kRead,
             [&engine](const ApiRequest& req) { return list_records(engine, req); });
  router.add(http::verb::get, "/api/tables/{table}/records/{sys_id}", Permission::kRead,
             [&engine](const ApiRequest& req) -> Reply {
               Value r = engine.record(req.param("table"), req.param("sys_id"));
               if (r.is_null()) {
                 return error_response(http::status::not_found, "no record in " + req.param("table") + " with sys_id " +
                                                                    req.param("sys_id"));
               }
               return json_response(http::status::ok, r);
             });
  router.add(http::verb::patch, "/api/tables/{table}/records/{sys_id}", Permission::kOperate,
             [&engine](const ApiRequest& req) -> Reply {
               Response error;
               std::optional<Value> values = object_body(req, &error, "the values to change");
               if (!values) return error;
               Result<Value> r = engine.update(req.param("table"), req.param("sys_id"), *values, req.caller.name);
               if (!r) return engine_error(r.message());
               return json_response(http::status::ok, *r);
             });
  router.add(http::verb::delete_, "/api/tables/{table}/records/{sys_id}", Permission::kOperate,
             [&engine](const ApiRequest& req) -> Reply {
               Result<Value> r = engine.remove(req.param("table"), req.param("sys_id"), req.caller.name);
               if (!r) return engine_error(r.message());
               return json_response(http::status::ok, Value::object({{"deleted", *r}}));
             });
  // Update and delete where: a body {"where": CONDITION, "values": {...}}.
  router.add(http::verb::post, "/api/tables/{table}/records/update", Permission::kOperate,
             [&engine](const ApiRequest& req) -> Reply {
               Value where, values;
               if (std::optional<Response> bad = read_where(req, &where, &values, true)) return std::move(*bad);
               Result<size_t> n = engine.update_where(req.param("table"), where, values, req.caller.name);
               if (!n) return engine_error(n.message());
               return json_response(http::status::ok, Value::object({{"updated", Value(*n)}}));
             });
  router.add(http::verb::post, "/api/tables/{table}/records/delete", Permission::kOperate,
             [&engine](const ApiRequest& req) -> Reply {
               Value where, values;
               if (std::optional<Response> bad = read_where(req, &where, &values, false)) return std::move(*bad);
               Result<size_t> n = engine.remove_where(req.param("table"), where, req.caller.name);
               if (!n) return engine_error(n.message());
               return json_response(http::status::ok, Value::object({{"deleted", Value(*n)}}));
             });
  router.add(http::verb::post, "/api/events/{name}", Permission::kOperate, [&engine](const ApiRequest& req) -> Reply {
    Response error;
    std::optional<Value> payload = json_body(req, &error, Value::empty_object());
    if (!payload) return error;
    Status s = engine.fire_event(req.param("name"), *payload, req.caller.name);
    if (!s) return engine_error(s.message());
    return json_response(http::status::accepted, Value::object({{"event", Value(req.param("name"))}}));
  });
}

}  // namespace flowrt::server
