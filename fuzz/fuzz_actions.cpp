#include "fuzz/fuzz_actions.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

namespace flowrt::fuzz {
namespace {

void add(Engine& engine, CustomActionType type) {
  const std::string name = type.name;
  Status s = engine.register_action(std::move(type));
  if (!s) {
    std::fprintf(stderr, "events_fuzz: cannot register %s: %s\n", name.c_str(), s.message().c_str());
    std::abort();
  }
}

}  // namespace

void register_fuzz_actions(Engine& engine) {
  CustomActionType outputs;
  outputs.name = "fz.outputs";
  outputs.inputs = {{"x", ParamType::kAny, false}};
  outputs.outputs = {{"y", ParamType::kAny, false}, {"n", ParamType::kInteger, false}};
  outputs.run = [](CustomActionContext& ctx) -> Result<Value> {
    ctx.log("outputs for " + ctx.input("x").to_json());
    return Value::object({{"y", ctx.input("x")}, {"n", Value(1)}, {"undeclared", Value(true)}});
  };
  add(engine, std::move(outputs));

  CustomActionType thrower;
  thrower.name = "fz.throw";
  thrower.inputs = {{"why", ParamType::kString, false}};
  thrower.run = [](CustomActionContext& ctx) -> Result<Value> {
    throw std::runtime_error("fz.throw: " + std::string(ctx.input("why").as_string()));
  };
  add(engine, std::move(thrower));

  CustomActionType error;
  error.name = "fz.error";
  error.inputs = {{"why", ParamType::kString, false}};
  error.run = [](CustomActionContext& ctx) -> Result<Value> {
    return Error{"fz.error: " + std::string(ctx.input("why").as_string())};
  };
  add(engine, std::move(error));

  CustomActionType writer;
  writer.name = "fz.write";
  writer.inputs = {{"table", ParamType::kString, true}, {"n", ParamType::kInteger, false}, {"hold", ParamType::kString, false}};
  writer.outputs = {{"sys_id", ParamType::kString, false}};
  writer.run = [](CustomActionContext& ctx) -> Result<Value> {
    Value values = Value::object({{"n", ctx.input("n")}, {"s", Value("open")}, {"by", ctx.context_id()}});
    Result<Value> written = ctx.host().create_record(ctx.input("table"), values, ctx.input("hold"));
    if (!written) return written.error();
    return Value::object({{"sys_id", (*written)["sys_id"]}});
  };
  add(engine, std::move(writer));
}

}  // namespace flowrt::fuzz
