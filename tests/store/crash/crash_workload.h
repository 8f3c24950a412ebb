// The seeded workload of the kill -9 crash test (tests/store/crash_test.cpp): the flow
// definitions, the custom action, and the numbered operations a seed makes. The child
// (crash_child.cpp) runs it on a data file; the test computes from the same seed what the
// operations themselves must have left in the store (the op model).
//
// Operations write only the tables `item` and `request` (the op tables); flows write
// `audit`, `note`, `grant`, `outcome` and `tick` and never touch the op tables, so what
// the op tables hold depends on the acknowledged operations alone.
// Pure functions and plain data; no state; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plans/time.h"
#include "plans/value.h"

namespace flowrt::crash {

enum class OpKind : uint8_t {
  kInsertItem,     // insert item i<n> {op, v}: audit_item runs (a subflow call)
  kUpdateItem,     // update an existing item {v, last_op}
  kDeleteItem,     // delete an existing item
  kInsertRequest,  // insert request q<n> {op, res, approval: "pending"}: hold_request runs
  kDecide,         // update a pending request {approval: yes|no, last_op}
  kPing,           // fire_event ping {op}: ping_wait waits 20m
  kCallJob,        // call_flow api_job {op}: the custom action runs
  kAdvance,        // advance the virtual clock to start + `at`
};
const char* op_kind_name(OpKind k);

struct Op {
  int n = 0;                 // 1-based
  OpKind kind = OpKind::kAdvance;
  std::string table;         // item | request for record operations
  std::string sys_id;        // the record an insert/update/delete names
  Value values;              // what an insert or update writes
  DurationMs at = 0;         // kAdvance: the clock target, from the start time
};

// The op tables as the operations leave them: table -> sys_id -> record fields the
// operations wrote (sys_id included).
using OpTables = std::map<std::string, std::map<std::string, Value>>;

// An object's members, copied.
std::vector<Member> members_of(const Value& object);

// The operations of `seed`, numbered 1..count.
std::vector<Op> make_workload(uint64_t seed, int count);
// What ops[0..done) leave in the op tables.
OpTables model_after(const std::vector<Op>& ops, int done);
// Where the clock stands at the end (after the last advance, the final advance goes here).
DurationMs final_target(const std::vector<Op>& ops);

// The definitions (one JSON array) and the names the flows use.
const char* definitions();
inline constexpr const char* kSideEffectAction = "crash_side_effect";
inline constexpr TimeMs kStart = kDefaultVirtualStart;
inline constexpr DurationMs kTickEvery = 30 * 60 * 1000;  // the schedule flow `tick`
// Tables the flows write, and each one's field that identifies what a row is for (a row
// written twice for the same thing is a repeated write).
struct FlowTable {
  const char* name;
  std::vector<const char*> key_fields;
};
const std::vector<FlowTable>& flow_tables();

}  // namespace flowrt::crash
