#include "runtime/engine.h"

#include <limits>

#include "compiler/input_checks.h"
#include "compiler/loader.h"
#include "compiler/plan_printer.h"
#include "plans/value_json.h"
#include "runtime/context_end_watch.h"
#include "runtime/context_reads.h"
#include "runtime/engine_core.h"
#include "runtime/flow_slot.h"
#include "runtime/keyed_writes.h"

namespace flowrt {

Engine::Engine(EngineOptions options) : core_(std::make_unique<EngineCore>(std::move(options))) {
  (void)core_->open_store();  // store_status() keeps the error; every operation reports it
  core_->start();
}

Result<std::unique_ptr<Engine>> Engine::open(EngineOptions options) {
  auto engine = std::make_unique<Engine>(std::move(options));
  if (!engine->core_->store_status()) return engine->core_->store_status().error();
  return engine;
}

Value Engine::recover() { return core_->recover(); }

ContextEndWatcher::ContextEndWatcher(std::shared_ptr<ContextEndWatch> watch, uint64_t token)
    : watch_(std::move(watch)), token_(token) {}

ContextEndWatcher::~ContextEndWatcher() { watch_->remove(token_); }

std::unique_ptr<ContextEndWatcher> Engine::on_context_end(std::string_view id, std::function<void()> fn) {
  const uint64_t token = core_->end_watch->add(std::string(id), std::move(fn));
  return std::make_unique<ContextEndWatcher>(core_->end_watch, token);
}

std::optional<Status> Engine::durable_state(uint64_t position) const {
  if (!core_->journal || position == 0) return Status::ok();
  return core_->journal->reached(position);
}

void Engine::when_durable(uint64_t position, std::function<void()> fn) {
  if (!core_->journal || position == 0) return fn();
  core_->journal->when_durable(position, std::move(fn));
}

Status Engine::wait_durable(uint64_t position) {
  if (!core_->journal || position == 0) return Status::ok();
  return core_->journal->wait_durable(position);
}

std::optional<Status> Engine::wait_durable_for(uint64_t position, std::chrono::milliseconds limit) {
  if (!core_->journal || position == 0) return Status::ok();
  return core_->journal->wait_durable_until(position, std::chrono::steady_clock::now() + limit);
}

Engine::~Engine() { core_->stop(); }

namespace {

// max_definitions counts every definition the engine would hold.
std::string too_many_definitions(size_t count, size_t max) {
  return std::to_string(count) + " definitions would be registered, more than the limit of " + std::to_string(max) +
         " (max_definitions)";
}

// Changes from outside are refused by an engine whose store did not open, or cannot be
// written now.
Status store_open(const EngineCore& core) {
  if (!core.store_status()) return core.store_status().error();
  if (core.journal) {
    if (Status f = core.journal->failure(); !f) {
      return Error{"refused, nothing was written: the engine cannot write its state now (" + f.message() + ")"};
    }
  }
  return Status::ok();
}

// Outside operations are refused as above, and once the engine is stopping (contexts' own
// go on).
Status intake_open(const EngineCore& core) {
  FLOWRT_RETURN_IF_ERROR(store_open(core));
  if (core.stop_requested()) return Error{"the engine is stopping: no new operations are accepted"};
  return Status::ok();
}

// Told by a write that starts a context (a call, a test run) before it commits: a keyed
// write's mark and a cluster operation's inbox entry then name the context its first commit
// queues (runtime/keyed_writes.h, runtime/commit.h).
void note_starts_context() {
  KeyedWrites::note_starts_context();
  OperationTag::note_starts_context();
}

// A value given to the API (a record's values, an event's payload, a flow's inputs) nests
// no deeper than max_json_depth, as the same value in an events line or a request body
// must: everything after (writing it as JSON, packing a record) walks it recursively.
Status value_within_depth(const EngineCore& core, const Value& v, std::string_view what) {
  const size_t depth = core.props().max_json_depth;
  if (bound_value(v, std::numeric_limits<size_t>::max(), depth) != ValueBound::kTooDeep) return Status::ok();
  return Error{std::string(what) + " nests deeper than the limit of " + std::to_string(depth) + " (max_json_depth)"};
}

// What a definition change leaves in the store, and the wait until it is durable.
Status journal_definitions(EngineCore& core, const std::vector<std::pair<UnitType, std::string>>& which) {
  if (!core.journal) return Status::ok();
  for (const auto& [type, id] : which) core.journal_definition(type, id);
  return core.wait_durable();
}

// Adds `defs` when they and everything they use compile. `diags` holds what reading them
// found already (syntax, shape): then they are still compiled, so that every error is
// reported at once, but nothing is added.
Diagnostics add_definitions(EngineCore& core, std::vector<Definition> defs, Diagnostics diags = {}) {
  const bool read_failed = !diags.empty();
  if (Status open = store_open(core); !open) {
    diags.add("", "", open.message());
    return diags;
  }
  // Check the whole set as it would be, in a scratch registry, so that a bad load changes
  // nothing.
  std::vector<Definition> all = core.flows.all_definitions();
  std::vector<Definition> merged;
  for (const Definition& existing : all) {
    bool replaced = false;
    for (const Definition& d : defs) {
      replaced = replaced || (d.type == existing.type && d.id == existing.id && d.status == existing.status);
    }
    if (!replaced) merged.push_back(existing);
  }
  merged.insert(merged.end(), defs.begin(), defs.end());
  if (const size_t max = core.props().max_definitions; merged.size() > max) {
    diags.add(defs.empty() ? std::string() : defs.back().file, "", too_many_definitions(merged.size(), max));
    return diags;
  }
  FlowRegistry scratch(&core.actions);
  scratch.add(merged);
  std::vector<std::pair<UnitType, std::string>> loaded;
  std::vector<FlowRegistry::VersionKey> versions;
  for (const Definition& d : defs) {
    loaded.emplace_back(d.type, d.id);
    versions.push_back(FlowRegistry::VersionKey{d.type, d.id, d.status});
  }
  scratch.check(versions, core.compile_options(), &diags);
  if (!diags.empty() || read_failed) return diags;

  std::vector<std::string> active;
  for (const Definition& d : defs) {
    if (d.type == UnitType::kFlow && d.status == DefinitionStatus::kPublished && d.active) active.push_back(d.id);
  }
  core.note_loaded(defs);
  core.flows.add(std::move(defs));
  for (const std::string& id : active) {
    // The version loaded is the one made active: a draft saved beside it (through the API)
    // stays a draft.
    Status s = core.flows.activate(id, core.compile_options(), core.clock.now(), FlowRegistry::Activating::kPublished);
    if (!s) diags.add("", "", s.message());
  }
  core.refresh_triggers();
  if (Status s = journal_definitions(core, loaded); !s) diags.add("", "", s.message());
  return diags;
}

// An operation from outside, made by `caller` ("" for none).
Origin origin_of(std::string_view caller) {
  Origin o;
  if (!caller.empty()) o.caller = Value(caller);
  return o;
}

Result<Definition> definition_from_value(const Value& v) {
  Diagnostics diags;
  Definition d;
  if (!read_definition(v, "", "", &d, &diags)) return Error{diags.describe()};
  if (!diags.empty()) return Error{diags.describe()};
  // It has no file: its compile errors (validate, publish) name it instead.
  d.file = d.label() + " (saved)";
  return d;
}

}  // namespace

LoadOptions Engine::load_options() const {
  const EngineProperties& p = core_->props();
  LoadOptions o;
  o.max_file_bytes = p.max_definition_file_bytes;
  o.json.max_bytes = p.max_definition_file_bytes;
  o.json.max_depth = p.max_json_depth;
  o.json.max_string_bytes = p.max_string_bytes;
  o.max_definitions = p.max_definitions;
  return o;
}

Diagnostics Engine::load(const std::vector<std::string>& paths) {
  Diagnostics diags;
  std::vector<Definition> defs = load_definitions(paths, &diags, load_options());
  return add_definitions(*core_, std::move(defs), std::move(diags));
}

Diagnostics Engine::load_text(std::string_view text, const std::string& file) {
  Diagnostics diags;
  const LoadOptions options = load_options();
  if (text.size() > options.max_file_bytes) {
    diags.add(file, "", "definitions of " + std::to_string(text.size()) + " bytes are larger than the limit of " +
                            std::to_string(options.max_file_bytes) + " bytes (max_definition_file_bytes)");
    return diags;
  }
  std::vector<Definition> defs;
  parse_definitions(text, file, &defs, &diags, options);
  check_unique_ids(defs, &diags);
  return add_definitions(*core_, std::move(defs), std::move(diags));
}

Status Engine::save(const Value& definition) {
  FLOWRT_RETURN_IF_ERROR(store_open(*core_));
  Result<Definition> d = definition_from_value(definition);
  if (!d) return d.error();
  const std::pair<UnitType, std::string> key{d->type, d->id};
  FLOWRT_RETURN_IF_ERROR(core_->flows.save(std::move(d).value(), core_->props().max_definitions));
  return journal_definitions(*core_, {key});
}

Engine::SaveOutcome Engine::save_if_revision(const Value& definition, std::string_view revision) {
  SaveOutcome out;
  if (Status open = store_open(*core_); !open) {
    out.status = open;
    return out;
  }
  Result<Definition> d = definition_from_value(definition);
  if (!d) {
    out.status = d.error();
    return out;
  }
  const std::pair<UnitType, std::string> key{d->type, d->id};
  out.status = core_->flows.save_if_revision(std::move(d).value(), revision, core_->props().max_definitions, &out.stale,
                                             &out.revision);
  if (out.status) out.status = journal_definitions(*core_, {key});
  return out;
}

namespace {

Value info_of(const StoredDefinition& d, std::string revision) {
  const bool flow = d.type == "flow";
  const std::string_view state = d.published.is_null() ? "draft"
                                 : flow               ? (d.active ? "active" : "inactive")
                                                      : "published";
  return Value::object({{"id", Value(d.id)},
                        {"type", Value(d.type)},
                        {"state", Value(state)},
                        {"revision", Value(revision)},
                        {"definition", d.draft.is_null() ? d.published : d.draft},
                        {"has_draft", Value(!d.draft.is_null())},
                        {"published", d.published}});
}

}  // namespace

Value Engine::definition_info(std::string_view id, std::optional<UnitType> only) const {
  for (UnitType type : {UnitType::kFlow, UnitType::kSubflow, UnitType::kAction}) {
    if (only && type != *only) continue;
    // The revision read before and after the versions: equal, it is theirs.
    while (true) {
      const std::string before = core_->flows.revision(type, id);
      std::optional<StoredDefinition> d = core_->flows.stored(type, id);
      if (!d || (d->draft.is_null() && d->published.is_null())) break;
      if (core_->flows.revision(type, id) == before) return info_of(*d, before);
    }
  }
  return Value();
}

std::vector<Value> Engine::definition_infos() const {
  std::vector<Value> out;
  for (const StoredDefinition& d : core_->flows.all_stored()) {
    if (d.draft.is_null() && d.published.is_null()) continue;
    const UnitType type = d.type == "flow" ? UnitType::kFlow : d.type == "subflow" ? UnitType::kSubflow : UnitType::kAction;
    out.push_back(info_of(d, core_->flows.revision(type, d.id)));
  }
  return out;
}

Result<Value> Engine::plan(std::string_view id) const {
  if (!core_->flows.slot(id)) return Error{"no flow '" + std::string(id) + "'"};
  FlowRegistry::PlanResult p = core_->flows.plan_for_test(id, core_->compile_options());
  if (!p.plan) return Error{"flow '" + std::string(id) + "' does not compile: " + p.error};
  return plan_to_value(*p.plan);
}

Status Engine::publish(std::string_view id, std::optional<UnitType> type) {
  FLOWRT_RETURN_IF_ERROR(store_open(*core_));
  FLOWRT_RETURN_IF_ERROR(core_->flows.publish(id, core_->compile_options(), type));
  core_->refresh_triggers();
  return journal_definitions(*core_, {{UnitType::kFlow, std::string(id)},
                                      {UnitType::kSubflow, std::string(id)},
                                      {UnitType::kAction, std::string(id)}});
}

Status Engine::activate(std::string_view id) {
  FLOWRT_RETURN_IF_ERROR(store_open(*core_));
  FLOWRT_RETURN_IF_ERROR(core_->flows.activate(id, core_->compile_options(), core_->clock.now()));
  core_->refresh_triggers();
  return journal_definitions(*core_, {{UnitType::kFlow, std::string(id)}});
}

Status Engine::deactivate(std::string_view id) {
  FLOWRT_RETURN_IF_ERROR(store_open(*core_));
  FLOWRT_RETURN_IF_ERROR(core_->flows.deactivate(id));
  // A call or a tick that found the flow active under the commit lock is admitted before
  // this returns; any later one finds it inactive (Dispatcher::start_flow).
  core_->dispatcher.wait_for_commits();
  core_->refresh_triggers();
  return journal_definitions(*core_, {{UnitType::kFlow, std::string(id)}});
}

Diagnostics Engine::validate() const {
  Diagnostics diags;
  core_->flows.check_all(core_->compile_options(), &diags);
  return diags;
}

Status Engine::register_action(CustomActionType type) {
  // An action definition of that id would take the steps of that name (it is looked up
  // first), and the type could never run. (Registering comes before loading in practice;
  // a definition loaded after is refused by its compile, unit_compiler.cpp.)
  if (core_->flows.definition(UnitType::kAction, type.name)) {
    return Error{"action type '" + type.name + "': an action definition has that id; give one of them another name"};
  }
  return core_->actions.add(std::move(type));
}

Status Engine::set_property(std::string_view name, const Value& value) { return core_->set_property(name, value); }

EngineProperties Engine::properties() const { return core_->properties(); }

Result<Value> Engine::insert(std::string_view table, const Value& values, std::string_view caller) {
  FLOWRT_RETURN_IF_ERROR(intake_open(*core_));
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, values, "values"));
  auto done = core_->dispatcher.insert(table, values, origin_of(caller));
  if (done) FLOWRT_RETURN_IF_ERROR(core_->wait_durable());
  return done;
}

Result<Value> Engine::update(std::string_view table, std::string_view sys_id, const Value& values,
                             std::string_view caller) {
  FLOWRT_RETURN_IF_ERROR(intake_open(*core_));
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, values, "values"));
  auto done = core_->dispatcher.update(table, sys_id, values, origin_of(caller));
  if (done) FLOWRT_RETURN_IF_ERROR(core_->wait_durable());
  return done;
}

Result<size_t> Engine::update_where(std::string_view table, const Value& where, const Value& values,
                                    std::string_view caller) {
  FLOWRT_RETURN_IF_ERROR(intake_open(*core_));
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, where, "where"));
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, values, "values"));
  Diagnostics diags;
  Condition c;
  if (!compile_record_condition(where, "where", "", &c, &diags)) return Error{diags.describe()};
  auto done = core_->dispatcher.update_where(table, c, values, origin_of(caller));
  if (done) FLOWRT_RETURN_IF_ERROR(core_->wait_durable());
  return done;
}

Result<Value> Engine::remove(std::string_view table, std::string_view sys_id, std::string_view caller) {
  FLOWRT_RETURN_IF_ERROR(intake_open(*core_));
  auto done = core_->dispatcher.remove(table, sys_id, origin_of(caller));
  if (done) FLOWRT_RETURN_IF_ERROR(core_->wait_durable());
  return done;
}

Result<size_t> Engine::remove_where(std::string_view table, const Value& where, std::string_view caller) {
  FLOWRT_RETURN_IF_ERROR(intake_open(*core_));
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, where, "where"));
  Diagnostics diags;
  Condition c;
  if (!compile_record_condition(where, "where", "", &c, &diags)) return Error{diags.describe()};
  auto done = core_->dispatcher.remove_where(table, c, origin_of(caller));
  if (done) FLOWRT_RETURN_IF_ERROR(core_->wait_durable());
  return done;
}

Status Engine::fire_event(std::string_view name, const Value& payload, std::string_view caller) {
  FLOWRT_RETURN_IF_ERROR(intake_open(*core_));
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, payload, "payload"));
  Status done = core_->dispatcher.fire_event(Value(name), payload, origin_of(caller));
  if (!done) return done;
  return core_->wait_durable();
}

Result<std::string> Engine::call_flow(std::string_view flow, const Value& inputs, std::string_view caller) {
  FLOWRT_RETURN_IF_ERROR(intake_open(*core_));
  note_starts_context();
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, inputs, "inputs"));
  Result<StartedFlow> started = core_->start_api_flow(flow, inputs, origin_of(caller));
  if (!started) return started.error();
  FLOWRT_RETURN_IF_ERROR(core_->wait_durable());
  if (started->skipped) return Error{"the start was skipped: " + std::string(started->reason.as_string())};
  return std::string(started->context_id.as_string());
}

Result<std::string> Engine::test_flow(std::string_view flow, const Value& record, const Value& inputs,
                                      std::string_view caller) {
  FLOWRT_RETURN_IF_ERROR(intake_open(*core_));
  note_starts_context();
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, record, "record"));
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, inputs, "inputs"));
  FlowSlot* slot = core_->flows.slot(flow);
  if (!slot) return Error{"no flow '" + std::string(flow) + "'"};
  // A version that does not compile starts all the same and ends in error with the compile
  // error, as a call of a flow that no longer compiles does (SPEC 9.6). Its trigger is then
  // the published version's, when that one has one.
  Value definition;  // kept with the context: a next engine runs the same version
  FlowRegistry::PlanResult p = core_->flows.plan_for_test(flow, core_->compile_options(), &definition);
  const std::shared_ptr<const TriggerSpec> published_trigger = p.plan ? nullptr : slot->trigger_spec();
  const TriggerSpec fallback_trigger;
  const Origin origin = origin_of(caller);
  TriggerData t;
  t.time = core_->clock.now();
  t.caller = origin.caller;
  const TriggerSpec& spec = p.plan ? p.plan->trigger : published_trigger ? *published_trigger : fallback_trigger;
  // Only a version that compiles has its trigger checked against the request: one that does
  // not may have changed its trigger, and ends in its compile error whatever it was given.
  const bool trigger_known = p.plan != nullptr;
  const std::string label = "flow '" + std::string(flow) + "'";
  // The request matches the trigger: a record-triggered flow is tested with a record of its
  // table, any other with inputs (or nothing), never with both.
  if (!record.is_null() && !inputs.is_null()) return Error{"test_flow takes a record or inputs, not both"};
  if (trigger_known && spec.type == TriggerType::kRecord && record.is_null()) {
    return Error{label + " has a record trigger: test it with a record of table '" + spec.table + "'"};
  }
  if (trigger_known && spec.type != TriggerType::kRecord && !record.is_null()) {
    return Error{label + " has " + (spec.type == TriggerType::kApi ? "an " : "a ") +
                 std::string(trigger_type_name(spec.type)) + " trigger: test it with inputs, not a record"};
  }
  if (!record.is_null()) {
    const Value& table = record["table"];
    const Value& sys_id = record["sys_id"];
    if (!table.is_string() || !sys_id.is_string()) return Error{"record needs \"table\" and \"sys_id\""};
    if (trigger_known && table.as_string() != spec.table) {
      return Error{label + " is triggered by records of table '" + spec.table + "', not '" +
                   std::string(table.as_string()) + "'"};
    }
    Value r = core_->dispatcher.get(table.as_string(), sys_id.as_string());
    if (r.is_null()) {
      return Error{"no record in " + std::string(table.as_string()) + " with sys_id " + std::string(sys_id.as_string())};
    }
    t.type = TriggerType::kRecord;
    t.table = table;
    t.sys_id = sys_id;
    t.record = r;
    t.operation = spec.when == RecordWhen::kCreated   ? RecordOperation::kInsert
                  : spec.when == RecordWhen::kDeleted ? RecordOperation::kDelete
                                                      : RecordOperation::kUpdate;
    if (t.operation == RecordOperation::kUpdate) {
      t.previous = r;
      t.has_previous = true;
    }
  } else {
    t.type = spec.type == TriggerType::kRecord ? TriggerType::kApi : spec.type;
    t.payload = t.type == TriggerType::kApi && inputs.is_null() ? Value::empty_object() : inputs;
    if (t.type == TriggerType::kEvent) t.event_name = Value(std::string_view(spec.event_name));
  }
  if (!inputs.is_null() && !inputs.is_object()) return Error{"inputs must be an object, got " + shown_value(inputs)};
  // Inputs are checked as call_flow checks them, against the version that runs (the draft
  // when there is one). A run with a record gives the flow no inputs to check.
  if (record.is_null() && p.plan) {
    FLOWRT_RETURN_IF_ERROR(check_api_inputs(p.plan->root(), inputs.is_null() ? Value::empty_object() : inputs));
  }
  Dispatcher::TestRun test;
  if (!p.plan) test.compile_error = "flow '" + std::string(flow) + "' does not compile: " + p.error;
  test.plan = std::move(p.plan);
  test.definition = std::move(definition);
  Result<StartedFlow> started =
      core_->dispatcher.start_flow(*slot, std::move(t), inputs.is_null() ? Value::empty_object() : inputs, origin, &test);
  if (!started) return started.error();
  FLOWRT_RETURN_IF_ERROR(core_->wait_durable());
  return std::string(started->context_id.as_string());
}

Status Engine::cancel(std::string_view context_id) { return core_->cancel(context_id); }

void Engine::request_stop() noexcept { core_->request_stop(); }
bool Engine::stop_requested() const noexcept { return core_->stop_requested(); }
size_t Engine::shutdown() { return core_->shutdown(); }

Status Engine::advance(DurationMs d) { return core_->advance(d); }
void Engine::settle(DurationMs until) { core_->settle(until); }
size_t Engine::run_queued_until(std::chrono::steady_clock::time_point until) { return core_->run_queued_until(until); }
TimeMs Engine::now() const { return core_->clock.now(); }

std::optional<ContextRecord> Engine::context(std::string_view id) const {
  std::optional<Value> record = read_context_record(*core_, id);
  if (!record) return std::nullopt;
  return ContextRecord(std::move(*record));
}

std::vector<ContextRecord> Engine::contexts(std::string_view flow) const {
  // With a durable store, the contexts that ended (before this engine, or in it and left
  // memory once durable) come from the store, in seq order with those in memory.
  std::vector<ContextRecord> out;
  for (Value& v : read_context_records(*core_, flow)) out.emplace_back(std::move(v));
  return out;
}

Result<std::vector<Value>> Engine::find_records(std::string_view table, const Value& where, size_t limit) const {
  FLOWRT_RETURN_IF_ERROR(value_within_depth(*core_, where, "where"));
  Condition c;
  RecordQuery q;
  q.table = table;
  q.limit = limit;
  if (!where.is_null()) {
    Diagnostics diags;
    if (!compile_record_condition(where, "where", "", &c, &diags)) return Error{diags.describe()};
    q.condition = &c;
  }
  Result<Value> found = core_->dispatcher.find(q);
  if (!found) return found.error();
  return std::vector<Value>(found->items().begin(), found->items().end());
}

std::vector<ContextRecord> Engine::context_page(std::string_view flow, std::string_view status, uint64_t before_seq,
                                                size_t limit) const {
  std::vector<ContextRecord> out;
  for (Value& v : read_context_page(*core_, flow, status, before_seq, limit)) out.emplace_back(std::move(v));
  return out;
}

std::vector<ContextRecord> Engine::unfinished_contexts(uint64_t before_seq, size_t limit) const {
  std::vector<ContextRecord> out;
  for (Value& v : read_unfinished_records(*core_, before_seq, limit)) out.emplace_back(std::move(v));
  return out;
}

std::vector<Value> Engine::skipped() const {
  std::vector<Value> out;
  for (const SkippedStart& s : core_->contexts.skipped()) {
    out.push_back(Value::object({{"flow", s.flow}, {"reason", s.reason}, {"event", s.event}, {"cause", s.cause}}));
  }
  return out;
}

Value Engine::record(std::string_view table, std::string_view sys_id) const {
  return core_->dispatcher.get(table, sys_id);
}

std::vector<Value> Engine::records(std::string_view table) const { return core_->dispatcher.records(table); }

std::vector<std::string> Engine::tables() const { return core_->dispatcher.table_names(); }

Value Engine::locks() const {
  std::vector<Value> out;
  for (const LockState& s : core_->dispatcher.lock_states()) out.push_back(lock_state_value(s));
  return Value::array(std::move(out));
}

uint64_t Engine::dropped_contexts() const { return core_->contexts.dropped(); }

uint64_t Engine::dropped_skipped() const { return core_->contexts.dropped_skipped(); }

EngineStats Engine::stats() const {
  EngineCore& c = *core_;
  EngineStats s;
  s.contexts_started = c.dispatcher.last_seq();
  s.commits = c.dispatcher.last_commit();
  s.queued_events = c.events.size_approx();
  s.waiting_contexts = c.waiting();
  s.resting_contexts = c.resting();
  s.runnable_contexts = c.runnable();
  s.contexts_kept = c.contexts.size();
  s.dropped_contexts = c.contexts.dropped();
  s.dropped_skipped = c.contexts.dropped_skipped();
  s.abandoned_calls = c.watchdog.abandoned();
  s.abandoned_threads = c.workers.abandoned_threads();
  s.worker_threads = c.workers.threads();
  s.lock_grants = c.dispatcher.lock_grants();
  s.lock_handoffs = c.dispatcher.lock_handoffs();
  if (c.store) {
    const StoreHealth h = c.store->health();
    s.store_checkpoints = h.checkpoints;
    s.store_checkpoint_failures = h.checkpoint_failures;
  }
  return s;
}

Value Engine::document(const std::vector<std::string>& errors) const {
  std::vector<Value> contexts_json;
  for (const ContextRecord& c : contexts()) contexts_json.push_back(c.value());
  std::vector<Member> tables_json;
  for (const std::string& t : tables()) {
    tables_json.push_back(Member{Value(std::string_view(t)), Value::array(records(t))});
  }
  std::vector<Value> errors_json;
  for (const std::string& e : errors) errors_json.push_back(Value(std::string_view(e)));
  return Value::object({{"contexts", Value::array(std::move(contexts_json))},
                        {"skipped", Value::array(skipped())},
                        {"records", Value::object(std::move(tables_json))},
                        {"locks", locks()},
                        {"errors", Value::array(std::move(errors_json))},
                        {"dropped_contexts", Value(static_cast<long long>(dropped_contexts()))},
                        {"dropped_skipped", Value(static_cast<long long>(dropped_skipped()))}});
}

}  // namespace flowrt
