#include "store/record_store.h"

#include <charconv>

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "plans/value_json.h"
#include "store/record_layout.h"

namespace flowrt {
namespace {

using record_layout::FieldSource;
using record_layout::RecordLayout;
using From = FieldSource::From;

// The fields of a record read back as key/value pairs, built again on its table's shape.
class Fields {
 public:
  void add(const Value& key, Value value) {
    keys_.push_back(key);
    values_.push_back(std::move(value));
  }
  Value build() {
    ObjectBuilder record(record_layout::record_shape(std::span<const Value>(keys_.data(), keys_.size())));
    for (Value& v : values_) record.add_value(std::move(v));
    return record.build();
  }

 private:
  boost::container::small_vector<Value, 16> keys_;
  boost::container::small_vector<Value, 16> values_;
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int type_rank(const Value& v) {
  switch (v.type()) {
    case ValueType::kNull: return 0;
    case ValueType::kBool: return 1;
    case ValueType::kInt:
    case ValueType::kDouble: return 2;
    case ValueType::kString: return 3;
    case ValueType::kArray: return 4;
    case ValueType::kObject: return 5;
  }
  return 6;
}

}  // namespace

int order_values(const Value& a, const Value& b) {
  const int ra = type_rank(a), rb = type_rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 1: return static_cast<int>(a.as_bool()) - static_cast<int>(b.as_bool());
    case 2: {
      if (a.is_int() && b.is_int()) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    case 3: {
      const int c = a.as_string().compare(b.as_string());
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case 4:
    case 5: {
      const std::string x = a.to_json(), y = b.to_json();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    default: return 0;
  }
}

namespace {
std::atomic<uint64_t> next_store_instance{1};
}  // namespace

RecordStore::RecordStore(uint64_t seed)
    : seed_(seed), instance_(next_store_instance.fetch_add(1, std::memory_order_relaxed)) {}

RecordStore::Table& RecordStore::table(std::string_view name) {
  if (Table* t = find_table(name)) return *t;
  WriterLock lock(tables_mu_);
  auto it = tables_.find(name);
  if (it != tables_.end()) return *it->second;
  auto t = std::make_unique<Table>();
  t->name = std::string(name);
  Table* raw = t.get();
  tables_.emplace(t->name, std::move(t));
  order_.push_back(raw);
  return *raw;
}

RecordStore::Table* RecordStore::find_table(std::string_view name) const {
  // Tables are never removed, so each thread remembers the few it used last and finds
  // them again without touching the shared map's lock. The instance number tells stores
  // apart (a new store may reuse a destroyed one's address).
  struct Recent {
    uint64_t instance = 0;
    Table* table = nullptr;
  };
  thread_local Recent recent[4];
  thread_local unsigned next = 0;
  for (const Recent& r : recent) {
    if (r.instance == instance_ && r.table->name == name) return r.table;
  }
  Table* found = nullptr;
  {
    ReaderLock lock(tables_mu_);
    auto it = tables_.find(name);
    if (it == tables_.end()) return nullptr;
    found = it->second.get();
  }
  recent[next++ % 4] = Recent{instance_, found};
  return found;
}

Value RecordStore::sys_id_number(uint64_t n) const {
  static constexpr char kHex[] = "0123456789abcdef";
  const uint64_t hi = splitmix64(seed_ ^ (n * 2)), lo = splitmix64(seed_ ^ (n * 2 + 1));
  char buf[32];
  for (int i = 0; i < 16; ++i) {
    buf[i] = kHex[(hi >> (60 - 4 * i)) & 15];
    buf[16 + i] = kHex[(lo >> (60 - 4 * i)) & 15];
  }
  return Value(std::string_view(buf, 32));
}

Value RecordStore::time_value(TimeMs t) {
  // One cached string per thread: records written in the same millisecond share it, and
  // its reference count is not bounced between cores.
  thread_local TimeMs cached = -1;
  thread_local Value cached_value;
  if (t != cached) {
    cached = t;
    cached_value = Value(std::string_view(format_time(t)));
  }
  return cached_value;
}

FieldIndex& RecordStore::index(Table& t, std::string_view field) {
  auto it = t.indexes.find(field);
  if (it != t.indexes.end()) return it->second;
  FieldIndex& idx = t.indexes[std::string(field)];
  for (uint32_t row = 0; row < t.rows.size(); ++row) {
    if (!t.rows[row].is_null()) idx.add(t.rows[row][field], row);
  }
  return idx;
}

void RecordStore::ensure_index(Table& t, std::string_view field) {
  {
    ReaderLock lock(t.mu);
    if (t.indexes.find(field) != t.indexes.end()) return;
  }
  WriterLock lock(t.mu);
  index(t, field);
}

void RecordStore::index_row(Table& t, const Value* before, const Value* after, uint32_t row) {
  for (auto& [field, idx] : t.indexes) {
    const Value* b = before ? &(*before)[field] : nullptr;
    const Value* a = after ? &(*after)[field] : nullptr;
    if (b && a && (b->same_storage(*a) || *b == *a)) continue;
    if (b) idx.remove(*b, row);
    if (a) idx.add(*a, row);
  }
}

Result<Value> RecordStore::build_insert(const Value& values, TimeMs now, uint64_t* id_number, const Value& by) {
  if (!values.is_null() && !values.is_object()) {
    return Error{"record values must be an object, not " + std::string(type_name(values.type()))};
  }
  const RecordLayout& layout = record_layout::insert_layout(values, by.is_string());
  const Value* given = layout.given_sys_id == FieldSource::kNone ? nullptr : &values.members()[layout.given_sys_id].value;
  Value sys_id;
  if (given && !given->is_null()) {
    if (!given->is_string() || given->as_string().empty() || given->as_string().size() > 256) {
      return Error{"sys_id must be a non-empty string of at most 256 characters"};
    }
    // A key the stores keep as text (a PostgreSQL server refuses any other): JSON text is
    // UTF-8 already; a C++ caller's bytes may not be.
    if (!is_well_formed_utf8(given->as_string())) return Error{"sys_id must be UTF-8"};
    sys_id = *given;
    if (id_number) *id_number = 0;
  } else {
    // The next number, if no other insert commits one first (commit_insert checks).
    const uint64_t n = ids_.load(std::memory_order_acquire) + 1;
    sys_id = sys_id_number(n);
    if (id_number) *id_number = n;
  }
  const Value stamp = time_value(now);
  ObjectBuilder record(layout.shape);
  const MemberRange members = values.members();
  for (const FieldSource& f : layout.fields) {
    switch (f.from) {
      case From::kSysId: record.add_value(std::move(sys_id)); break;
      case From::kGiven: record.add_value(members[f.given].value); break;
      case From::kNow: record.add_value(stamp); break;
      case From::kModCountZero: record.add_value(Value(0)); break;
      case From::kCaller: record.add_value(by); break;
      default: record.add_value(Value()); break;  // not in an insert's layout
    }
  }
  return record.build();
}

Result<bool> RecordStore::commit_insert(std::string_view table_name, const Value& record, uint64_t id_number,
                                        uint64_t position, uint32_t* row_out) {
  if (table_name.empty()) return Error{"a table name cannot be empty"};
  // Writes are serialized: no other commit moves ids_ while this one runs.
  const uint64_t committed = ids_.load(std::memory_order_relaxed);
  if (id_number != 0 && id_number != committed + 1) return false;  // numbered before another commit
  Table& t = table(table_name);
  WriterLock lock(t.mu);
  const std::string_view sys_id = record.members()[0].value.as_string();
  // Looked up and indexed in one probe; the row is appended below when it was not there.
  const auto row = static_cast<uint32_t>(t.rows.size());
  if (t.by_id.insert_unique(sys_id, row) != IdIndex::kNone) {
    if (id_number != 0) {
      // A record given this id earlier holds it: skip the number and build again.
      ids_.store(id_number, std::memory_order_release);
      return false;
    }
    return Error{"table " + t.name + " already has a record with sys_id " + std::string(sys_id)};
  }
  if (id_number != 0) ids_.store(id_number, std::memory_order_release);
  t.rows.push_back(record);
  t.positions.push_back(position);
  ++t.live;
  total_.fetch_add(1, std::memory_order_relaxed);
  index_row(t, nullptr, &record, row);
  if (row_out) *row_out = row;
  return true;
}

Result<Value> RecordStore::insert(std::string_view table_name, const Value& values, TimeMs now) {
  while (true) {
    uint64_t id_number = 0;
    Result<Value> record = build_insert(values, now, &id_number);
    if (!record) return record;
    Result<bool> done = commit_insert(table_name, *record, id_number);
    if (!done) return done.error();
    if (*done) return record;
  }
}

Result<RecordChange> RecordStore::build_update(const Value& previous, std::string_view sys_id, const Value& patch,
                                               TimeMs now, const Value& by) {
  if (!patch.is_null() && !patch.is_object()) {
    return Error{"record values must be an object, not " + std::string(type_name(patch.type()))};
  }
  const RecordLayout& layout = record_layout::update_layout(previous, patch, by.is_string());
  const MemberRange before = previous.members();
  const MemberRange given = patch.members();
  if (layout.given_sys_id != FieldSource::kNone && !(given[layout.given_sys_id].value == Value(sys_id))) {
    return Error{"sys_id cannot be changed"};
  }
  ObjectBuilder record(layout.shape);
  bool changed = false;
  for (const FieldSource& f : layout.fields) {
    switch (f.from) {
      case From::kPrevious: record.add_value(before[f.previous].value); break;
      case From::kReplaced: {
        const Value& now_value = given[f.given].value;
        const Value& was = before[f.previous].value;
        if (!(now_value.same_storage(was) || now_value == was)) changed = true;
        record.add_value(now_value);
        break;
      }
      case From::kGiven:
        if (!given[f.given].value.is_null()) changed = true;  // a new field set to null changes no value
        record.add_value(given[f.given].value);
        break;
      case From::kNow: record.add_value(time_value(now)); break;
      case From::kCreatedOnBefore:
      case From::kCreatedByBefore:
        record.add_value(f.previous == FieldSource::kNone ? Value() : before[f.previous].value);
        break;
      case From::kModCountNext: {
        const int64_t was = f.previous == FieldSource::kNone ? 0 : before[f.previous].value.as_int();
        record.add_value(Value(static_cast<long long>(was + 1)));
        break;
      }
      case From::kCaller: record.add_value(by); break;
      default: record.add_value(Value()); break;  // not in an update's layout
    }
  }
  return RecordChange{record.build(), previous, changed};
}

bool RecordStore::commit_update(std::string_view table_name, std::string_view sys_id, const RecordChange& change,
                                uint64_t* position, uint32_t* row_out) {
  Table* t = find_table(table_name);
  if (!t) return false;
  WriterLock lock(t->mu);
  // The hint is right when its row still holds the very version read (`previous` keeps that
  // storage alive, so no other record can have it): then no lookup by sys_id is needed.
  uint32_t row = change.row_hint;
  if (row >= t->rows.size() || !t->rows[row].same_storage(change.previous)) row = t->by_id.find(sys_id);
  if (row == IdIndex::kNone || !t->rows[row].same_storage(change.previous)) return false;
  t->rows[row] = change.record;
  if (position) *position = t->positions[row];
  if (row_out) *row_out = row;
  index_row(*t, &change.previous, &change.record, row);
  return true;
}

Result<RecordChange> RecordStore::update(std::string_view table_name, std::string_view sys_id, const Value& patch,
                                         TimeMs now) {
  Value current = get(table_name, sys_id);
  if (current.is_null()) {
    return Error{"no record in " + std::string(table_name) + " with sys_id " + std::string(sys_id)};
  }
  Result<RecordChange> change = build_update(current, sys_id, patch, now);
  if (!change) return change;
  commit_update(table_name, sys_id, *change);  // nothing ran in between: it is current
  return change;
}

namespace {

// Compact JSON length of `v`, or some number past `cap` once it is known to be larger.
size_t json_bytes(const Value& v, size_t cap) {
  switch (v.type()) {
    case ValueType::kNull: return 4;
    case ValueType::kBool: return v.as_bool() ? 4 : 5;
    case ValueType::kInt: {
      char buf[24];
      return static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v.as_int()).ptr - buf);
    }
    case ValueType::kDouble: {
      char buf[32];
      return static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v.as_double()).ptr - buf);
    }
    case ValueType::kString: return v.as_string().size() + 2;
    case ValueType::kArray: {
      size_t n = v.size() > 0 ? v.size() + 1 : 2;  // brackets and commas
      for (const Value& item : v.items()) {
        n += json_bytes(item, cap);
        if (n > cap) break;
      }
      return n;
    }
    case ValueType::kObject: {
      size_t n = v.size() > 0 ? v.size() + 1 : 2;
      for (const auto& m : v.members()) {
        n += m.key.as_string().size() + 3 + json_bytes(m.value, cap);  // "key":
        if (n > cap) break;
      }
      return n;
    }
  }
  return 0;
}

}  // namespace

Status RecordStore::check_value_sizes(const Value& values, size_t max_bytes) {
  if (!values.is_object()) return Status::ok();
  for (const auto& m : values.members()) {
    const Value& v = m.value;
    if (v.is_null() || v.is_bool() || v.is_int() || v.is_double()) continue;
    const size_t n = v.is_string() ? v.as_string().size() : json_bytes(v, max_bytes);
    if (n > max_bytes) {
      return Error{"field '" + std::string(m.key.as_string()) + "' is " +
                   (v.is_string() ? "a string of " + std::to_string(n) + " bytes"
                                  : "an " + std::string(type_name(v.type())) + " of more than " +
                                        std::to_string(max_bytes) + " bytes of JSON") +
                   ", larger than the limit of " + std::to_string(max_bytes) + " bytes (max_record_value_bytes)"};
    }
  }
  return Status::ok();
}

Result<Value> RecordStore::remove(std::string_view table_name, std::string_view sys_id, uint64_t* position) {
  Table* t = find_table(table_name);
  if (!t) return Error{"no record in " + std::string(table_name) + " with sys_id " + std::string(sys_id)};
  WriterLock lock(t->mu);
  const uint32_t row = t->by_id.find(sys_id);
  if (row == IdIndex::kNone) {
    return Error{"no record in " + std::string(table_name) + " with sys_id " + std::string(sys_id)};
  }
  t->by_id.erase(sys_id);
  if (position) *position = t->positions[row];
  Value previous = std::move(t->rows[row]);
  t->rows[row] = Value();
  --t->live;
  total_.fetch_sub(1, std::memory_order_relaxed);
  index_row(*t, &previous, nullptr, row);
  if (t->rows.size() > 1024 && t->live < t->rows.size() / 2) compact(*t);
  return previous;
}

void RecordStore::compact(Table& t) {
  std::deque<Value> rows;
  std::deque<uint64_t> positions;
  t.by_id.clear();
  for (size_t i = 0; i < t.rows.size(); ++i) {
    if (t.rows[i].is_null()) continue;
    rows.push_back(std::move(t.rows[i]));
    positions.push_back(t.positions[i]);
  }
  t.rows = std::move(rows);
  t.positions = std::move(positions);
  for (uint32_t row = 0; row < t.rows.size(); ++row) t.by_id.insert(t.rows[row]["sys_id"].as_string(), row);
  std::vector<std::string> fields;
  for (auto& [field, idx] : t.indexes) fields.push_back(field);
  t.indexes.clear();
  for (const std::string& f : fields) index(t, f);
}

Value RecordStore::get(std::string_view table_name, std::string_view sys_id, uint32_t* row_out, RowHint hint) const {
  const Table* t = find_table(table_name);
  if (!t) return Value();
  ReaderLock lock(t->mu);
  // The hinted row answers when it holds the very version hinted (alive in the caller, so
  // no other record has its storage) and that version has this sys_id (its first member):
  // then it is the row the lookup would find, as sys_ids are unique in a table.
  const bool hinted = hint.version && hint.version->is_object() && hint.version->size() != 0 &&
                      hint.row < t->rows.size() && t->rows[hint.row].same_storage(*hint.version) &&
                      hint.version->members()[0].value.as_string() == sys_id;
  const uint32_t row = hinted ? hint.row : t->by_id.find(sys_id);
  if (row_out) *row_out = row;
  return row == IdIndex::kNone ? Value() : t->rows[row];
}

Result<Value> RecordStore::find(const RecordQuery& q) {
  Table* found = find_table(q.table);
  if (!found) return Value::empty_array();
  Table& t = *found;

  // Use a field index when the condition is, or starts with, "field eq value".
  const Condition* eq = nullptr;
  if (q.condition) {
    auto indexable = [](const Condition& c) {
      return c.kind == Condition::Kind::kCompare && c.op == CompareOp::kEq && c.subject.root == PillRoot::kField &&
             c.subject.path.size() == 1 && c.subject.transforms.empty();
    };
    if (indexable(*q.condition)) {
      eq = q.condition;
    } else if (q.condition->kind == Condition::Kind::kAll) {
      for (const Condition& child : q.condition->children) {
        if (indexable(child)) {
          eq = &child;
          break;
        }
      }
    }
  }
  Scope scope = q.scope ? *q.scope : Scope{};
  scope.previous = nullptr;
  // The equality's value before the table is read; an index is used when its value can key one.
  Value eq_value;
  std::string_view eq_field;
  if (eq) {
    Result<Value> v = render(eq->value, scope);
    if (!v) return v.error();
    eq_value = std::move(v).value();
    std::string key;
    if (FieldIndex::key_of(eq_value, &key)) eq_field = eq->subject.path.front().key.as_string();
  }
  // One reader lock when the index is there (indexes are never dropped); building one
  // takes the table's lock exclusively, once, and then the table is read again.
  {
    ReaderLock lock(t.mu);
    if (eq_field.empty()) return matching(t, q, eq_value, scope, nullptr);
    if (auto it = t.indexes.find(eq_field); it != t.indexes.end()) {
      return matching(t, q, eq_value, scope, &it->second);
    }
  }
  ensure_index(t, eq_field);
  ReaderLock lock(t.mu);
  return matching(t, q, eq_value, scope, &t.indexes.find(eq_field)->second);
}

Result<Value> RecordStore::matching(const Table& t, const RecordQuery& q, const Value& eq_value, Scope scope,
                                    const FieldIndex* index) {
  std::vector<Value> matches;
  const bool early_stop = q.limit > 0 && q.order_by.empty();
  auto consider = [&](uint32_t row) NO_THREAD_SAFETY_ANALYSIS -> Result<bool> {
    const Value& r = t.rows[row];
    if (r.is_null()) return false;
    if (q.condition) {
      scope.record = &r;
      Result<bool> ok = evaluate(*q.condition, scope);
      if (!ok) return ok;
      if (!*ok) return false;
    }
    matches.push_back(r);
    return early_stop && matches.size() >= q.limit;
  };

  if (index) {
    if (const std::vector<uint32_t>* bucket = index->rows(eq_value)) {
      for (uint32_t row : *bucket) {
        Result<bool> stop = consider(row);
        if (!stop) return stop.error();
        if (*stop) break;
      }
    }
  } else {
    for (uint32_t row = 0; row < t.rows.size(); ++row) {
      Result<bool> stop = consider(row);
      if (!stop) return stop.error();
      if (*stop) break;
    }
  }
  if (!q.order_by.empty()) {
    const bool desc = q.order_by.front() == '-';
    const std::string_view field = desc ? q.order_by.substr(1) : q.order_by;
    std::stable_sort(matches.begin(), matches.end(), [&](const Value& a, const Value& b) {
      const int c = order_values(a[field], b[field]);
      return desc ? c > 0 : c < 0;
    });
    if (q.limit > 0 && matches.size() > q.limit) matches.resize(q.limit);
  }
  return Value::array(std::move(matches));
}

std::vector<std::string> RecordStore::table_names() const {
  ReaderLock lock(tables_mu_);
  std::vector<std::string> names;
  for (const Table* t : order_) names.push_back(t->name);
  return names;
}

void RecordStore::restore(uint64_t seed, uint64_t generated, std::vector<RestoredTable> tables) {
  seed_ = seed;
  ids_.store(generated, std::memory_order_relaxed);
  for (RestoredTable& restored : tables) {
    Table& t = table(restored.name);
    WriterLock lock(t.mu);
    for (size_t i = 0; i < restored.records.size(); ++i) {
      Value& record = restored.records[i];
      const std::string_view sys_id = record.members()[0].value.as_string();
      const auto row = static_cast<uint32_t>(t.rows.size());
      // A store holds one record per sys_id; the row is appended below when it was not there.
      if (t.by_id.insert_unique(sys_id, row) != IdIndex::kNone) continue;
      t.positions.push_back(i < restored.positions.size() ? restored.positions[i] : i + 1);
      if (record.shape().is_null()) {
        // Read back from a store as key/value pairs: the table's shape again, as when written.
        Fields fields;
        for (const auto& m : record.members()) fields.add(m.key, m.value);
        record = fields.build();
      }
      t.rows.push_back(std::move(record));
      ++t.live;
      total_.fetch_add(1, std::memory_order_relaxed);
      index_row(t, nullptr, &t.rows.back(), row);
    }
  }
}

std::vector<Value> RecordStore::records(std::string_view table_name) const {
  std::vector<Value> out;
  if (const Table* t = find_table(table_name)) {
    ReaderLock lock(t->mu);
    out.reserve(t->live);
    for (const Value& r : t->rows) {
      if (!r.is_null()) out.push_back(r);
    }
  }
  return out;
}

}  // namespace flowrt
