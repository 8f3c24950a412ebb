#include "store/record_layout.h"

#include <algorithm>
#include <array>
#include <string_view>

#include <boost/container/small_vector.hpp>

namespace flowrt::record_layout {
namespace {

using From = FieldSource::From;
constexpr uint32_t kNone = FieldSource::kNone;

constexpr std::string_view kEngineFields[] = {"sys_id",        "sys_created_on", "sys_updated_on",
                                              "sys_mod_count", "sys_created_by", "sys_updated_by"};

const Value kSysId("sys_id");
const Value kCreatedOn("sys_created_on");
const Value kUpdatedOn("sys_updated_on");
const Value kModCount("sys_mod_count");
const Value kCreatedBy("sys_created_by");
const Value kUpdatedBy("sys_updated_by");

// Builds one layout: its fields and keys, then the shape of those keys.
class LayoutBuilder {
 public:
  explicit LayoutBuilder(RecordLayout& out) : out_(out) {
    out_.fields.clear();
    out_.given_sys_id = kNone;
  }
  void add(const Value& key, FieldSource source) {
    keys_.push_back(key);
    out_.fields.push_back(source);
  }
  void finish() { out_.shape = record_shape(std::span<const Value>(keys_.data(), keys_.size())); }

 private:
  RecordLayout& out_;
  boost::container::small_vector<Value, 16> keys_;
};

uint32_t index_of(const Value& object, std::string_view key) {
  const MemberRange members = object.members();
  for (uint32_t i = 0; i < members.size(); ++i) {
    if (members[i].key.as_string() == key) return i;
  }
  return kNone;
}

void work_out_insert(const Value& values, bool with_caller, RecordLayout& out) {
  LayoutBuilder b(out);
  b.add(kSysId, {From::kSysId});  // first: the id index reads it there
  const MemberRange members = values.members();
  for (uint32_t i = 0; i < members.size(); ++i) {
    const std::string_view key = members[i].key.as_string();
    if (key == "sys_id") out.given_sys_id = i;
    if (!engine_field(key)) b.add(members[i].key, {From::kGiven, i});
  }
  b.add(kCreatedOn, {From::kNow});
  b.add(kUpdatedOn, {From::kNow});
  b.add(kModCount, {From::kModCountZero});
  if (with_caller) {
    b.add(kCreatedBy, {From::kCaller});
    b.add(kUpdatedBy, {From::kCaller});
  }
  b.finish();
}

void work_out_update(const Value& previous, const Value& patch, bool with_caller, RecordLayout& out) {
  LayoutBuilder b(out);
  uint32_t created_on = kNone, mod_count = kNone, created_by = kNone;
  const MemberRange before = previous.members();
  // Existing fields keep their place; the stamps are written again at the end.
  for (uint32_t i = 0; i < before.size(); ++i) {
    const std::string_view key = before[i].key.as_string();
    if (key == "sys_created_on") {
      created_on = i;
    } else if (key == "sys_mod_count") {
      mod_count = i;
    } else if (key == "sys_created_by") {
      created_by = i;
    } else if (key != "sys_updated_on" && key != "sys_updated_by") {
      const uint32_t given = engine_field(key) ? kNone : index_of(patch, key);
      b.add(before[i].key, given == kNone ? FieldSource{From::kPrevious, kNone, i} : FieldSource{From::kReplaced, given, i});
    }
  }
  // New fields, in the patch's order, before the stamps.
  const MemberRange members = patch.members();
  for (uint32_t j = 0; j < members.size(); ++j) {
    const std::string_view key = members[j].key.as_string();
    if (key == "sys_id") out.given_sys_id = j;
    if (engine_field(key) || index_of(previous, key) != kNone) continue;
    b.add(members[j].key, {From::kGiven, j});
  }
  b.add(kCreatedOn, {From::kCreatedOnBefore, kNone, created_on});
  b.add(kUpdatedOn, {From::kNow});
  b.add(kModCount, {From::kModCountNext, kNone, mod_count});
  // Who: the creator stays; the updater is this write's caller, none for a write without one.
  if (created_by != kNone) b.add(kCreatedBy, {From::kCreatedByBefore, kNone, created_by});
  if (with_caller) b.add(kUpdatedBy, {From::kCaller});
  b.finish();
}

// What a layout is a function of: the keys of the objects it reads, and flags.
constexpr uint8_t kUpdate = 1, kWithCaller = 2;

// The keys of `v` as an array: its shape when it has one (no copy), else a new array.
Value keys_of(const Value& v) {
  if (!v.is_object() || v.size() == 0) return Value();
  if (Value shape = v.shape(); !shape.is_null()) return shape;
  std::vector<Value> keys;
  keys.reserve(v.size());
  for (const auto& m : v.members()) keys.push_back(m.key);
  return Value::array(std::move(keys));
}

// Whether `v` has exactly `keys` (keys_of), null standing for none: at once when `v` was
// built from that shape, else key by key.
bool has_keys(const Value& v, const Value& keys) {
  if (!v.is_object() || v.size() == 0) return keys.is_null();
  return v.has_keys(keys);
}

// The last few layouts one thread worked out, by the keys they were worked out from. An
// entry holds those key arrays, so a shape it names cannot be freed (and its address reused
// by another) while the entry lives.
class LayoutCache {
 public:
  template <typename WorkOut>
  const RecordLayout& get(const Value& first, const Value& second, uint8_t flags, WorkOut work_out) {
    // Most recently used first: a hit moves to the front, a miss takes the last place.
    for (size_t i = 0; i < entries_.size(); ++i) {
      Entry& e = entries_[i];
      if (e.used && e.flags == flags && has_keys(first, e.first) && has_keys(second, e.second)) {
        if (i > 0) std::rotate(entries_.begin(), entries_.begin() + i, entries_.begin() + i + 1);
        return entries_.front().layout;
      }
    }
    std::rotate(entries_.begin(), entries_.end() - 1, entries_.end());
    Entry& e = entries_.front();
    e.used = true;
    e.flags = flags;
    e.first = keys_of(first);
    e.second = keys_of(second);
    work_out(e.layout);
    return e.layout;
  }

 private:
  struct Entry {
    bool used = false;
    uint8_t flags = 0;
    Value first;   // the keys of the insert's values, or of the updated record
    Value second;  // the keys of the update's patch
    RecordLayout layout;
  };
  std::array<Entry, 8> entries_;
};

LayoutCache& cache() {
  thread_local LayoutCache c;
  return c;
}

}  // namespace

bool engine_field(std::string_view name) {
  return std::find(std::begin(kEngineFields), std::end(kEngineFields), name) != std::end(kEngineFields);
}

Value record_shape(std::span<const Value> keys) {
  thread_local Value recent[8];
  return shape_for(keys, recent);
}

const RecordLayout& insert_layout(const Value& values, bool with_caller) {
  return cache().get(values, Value(), with_caller ? kWithCaller : 0,
                     [&](RecordLayout& out) { work_out_insert(values, with_caller, out); });
}

const RecordLayout& update_layout(const Value& previous, const Value& patch, bool with_caller) {
  return cache().get(previous, patch, kUpdate | (with_caller ? kWithCaller : 0),
                     [&](RecordLayout& out) { work_out_update(previous, patch, with_caller, out); });
}

}  // namespace flowrt::record_layout
