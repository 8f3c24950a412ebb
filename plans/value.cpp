#include "plans/value.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <unordered_map>

#include "plans/value_json.h"

namespace flowrt {
namespace detail {

// Reference-counted storage for long strings, arrays and objects. Immutable once shared.
struct HeapNode {
  explicit HeapNode(ValueType t) : type(t) {}
  std::atomic<uint32_t> refs{1};
  ValueType type;
};

struct StringNode : HeapNode {
  StringNode() : HeapNode(ValueType::kString) {}
  uint32_t size = 0;
  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }

  static StringNode* make(std::string_view s) {
    void* mem = ::operator new(sizeof(StringNode) + s.size());
    auto* node = new (mem) StringNode();
    node->size = static_cast<uint32_t>(s.size());
    if (!s.empty()) std::memcpy(node->data(), s.data(), s.size());
    return node;
  }
};

struct ArrayNode : HeapNode {
  explicit ArrayNode(std::vector<Value> v) : HeapNode(ValueType::kArray), items(std::move(v)) {}
  std::vector<Value> items;
};

// Objects with many members get a hash index so that lookups stay O(1).
struct ObjectNode : HeapNode {
  static constexpr size_t kIndexThreshold = 24;
  explicit ObjectNode(std::vector<Member> m) : HeapNode(ValueType::kObject), members(std::move(m)) {
    if (members.size() > kIndexThreshold) build_index();
  }
  void build_index() {
    index = std::make_unique<std::unordered_map<std::string_view, uint32_t>>();
    index->reserve(members.size());
    for (uint32_t i = 0; i < members.size(); ++i) (*index)[members[i].key.as_string()] = i;
  }
  // Position of `key` in members, or -1.
  long find_index(std::string_view key) const {
    if (index) {
      auto it = index->find(key);
      return it == index->end() ? -1 : static_cast<long>(it->second);
    }
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].key.as_string() == key) return static_cast<long>(i);
    }
    return -1;
  }
  const Value* find(std::string_view key) const {
    long i = find_index(key);
    return i < 0 ? nullptr : &members[static_cast<size_t>(i)].value;
  }
  std::vector<Member> members;
  std::unique_ptr<std::unordered_map<std::string_view, uint32_t>> index;
};

void destroy(HeapNode* node) noexcept {
  switch (node->type) {
    case ValueType::kString: {
      auto* s = static_cast<StringNode*>(node);
      s->~StringNode();
      ::operator delete(s);
      break;
    }
    case ValueType::kArray:
      delete static_cast<ArrayNode*>(node);
      break;
    case ValueType::kObject:
      delete static_cast<ObjectNode*>(node);
      break;
    default:
      break;
  }
}

}  // namespace detail

using detail::ArrayNode;
using detail::HeapNode;
using detail::ObjectNode;
using detail::StringNode;

std::string_view type_name(ValueType type) {
  switch (type) {
    case ValueType::kNull: return "null";
    case ValueType::kBool: return "boolean";
    case ValueType::kInt: return "integer";
    case ValueType::kDouble: return "number";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kObject: return "object";
  }
  return "unknown";
}

const Value& null_value() noexcept {
  static const Value kNull;
  return kNull;
}

bool Value::is_heap() const noexcept {
  switch (type()) {
    case ValueType::kString: return raw_[1] == kHeapFlag;
    case ValueType::kArray:
    case ValueType::kObject: return true;
    default: return false;
  }
}

HeapNode* Value::node() const noexcept {
  HeapNode* n;
  std::memcpy(&n, raw_ + 8, sizeof n);
  return n;
}

void Value::set_node(ValueType type, HeapNode* n) noexcept {
  clear_raw();
  raw_[0] = static_cast<unsigned char>(type);
  raw_[1] = kHeapFlag;
  std::memcpy(raw_ + 8, &n, sizeof n);
}

void Value::retain() const noexcept {
  if (is_heap()) node()->refs.fetch_add(1, std::memory_order_relaxed);
}

void Value::release() noexcept {
  if (is_heap()) {
    HeapNode* n = node();
    if (n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) detail::destroy(n);
  }
}

Value::Value(const Value& other) noexcept {
  std::memcpy(raw_, other.raw_, sizeof raw_);
  retain();
}

Value::Value(Value&& other) noexcept {
  std::memcpy(raw_, other.raw_, sizeof raw_);
  other.clear_raw();
}

Value& Value::operator=(const Value& other) noexcept {
  if (this != &other) {
    other.retain();
    release();
    std::memcpy(raw_, other.raw_, sizeof raw_);
  }
  return *this;
}

Value& Value::operator=(Value&& other) noexcept {
  if (this != &other) {
    release();
    std::memcpy(raw_, other.raw_, sizeof raw_);
    other.clear_raw();
  }
  return *this;
}

Value::Value(bool b) noexcept {
  clear_raw();
  raw_[0] = static_cast<unsigned char>(ValueType::kBool);
  raw_[8] = b ? 1 : 0;
}

Value::Value(long long v) noexcept {
  clear_raw();
  raw_[0] = static_cast<unsigned char>(ValueType::kInt);
  int64_t i = v;
  std::memcpy(raw_ + 8, &i, sizeof i);
}

Value::Value(double v) noexcept {
  clear_raw();
  raw_[0] = static_cast<unsigned char>(ValueType::kDouble);
  std::memcpy(raw_ + 8, &v, sizeof v);
}

Value::Value(std::string_view s) {
  clear_raw();
  if (s.size() <= kInlineCapacity) {
    raw_[0] = static_cast<unsigned char>(ValueType::kString);
    raw_[1] = static_cast<unsigned char>(s.size());
    if (!s.empty()) std::memcpy(raw_ + 2, s.data(), s.size());
  } else {
    set_node(ValueType::kString, StringNode::make(s));
  }
}

Value Value::array(std::vector<Value> items) {
  Value v;
  v.set_node(ValueType::kArray, new ArrayNode(std::move(items)));
  return v;
}

Value Value::array(std::initializer_list<Value> items) { return array(std::vector<Value>(items)); }

Value Value::object(std::vector<Member> members) {
  // Enforce unique keys: a later duplicate replaces the earlier one, in place.
  if (members.size() > 1) {
    bool dup = false;
    if (members.size() <= ObjectNode::kIndexThreshold) {
      for (size_t i = 1; i < members.size() && !dup; ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (members[i].key.as_string() == members[j].key.as_string()) { dup = true; break; }
        }
      }
    } else {
      std::unordered_map<std::string_view, size_t> seen;
      seen.reserve(members.size());
      for (size_t i = 0; i < members.size() && !dup; ++i) {
        dup = !seen.emplace(members[i].key.as_string(), i).second;
      }
    }
    if (dup) {
      std::vector<Member> unique;
      std::unordered_map<std::string, size_t> pos;
      for (Member& m : members) {
        auto [it, fresh] = pos.emplace(std::string(m.key.as_string()), unique.size());
        if (fresh) unique.push_back(std::move(m));
        else unique[it->second].value = std::move(m.value);
      }
      members = std::move(unique);
    }
  }
  Value v;
  v.set_node(ValueType::kObject, new ObjectNode(std::move(members)));
  return v;
}

Value Value::object(std::initializer_list<std::pair<std::string_view, Value>> members) {
  std::vector<Member> m;
  m.reserve(members.size());
  for (const auto& [k, val] : members) m.push_back(Member{Value(k), val});
  return object(std::move(m));
}

Value Value::empty_object() {
  static const Value kEmpty = object(std::vector<Member>{});
  return kEmpty;
}

Value Value::empty_array() {
  static const Value kEmpty = array(std::vector<Value>{});
  return kEmpty;
}

bool Value::as_bool() const noexcept { return is_bool() && raw_[8] != 0; }

int64_t Value::as_int() const noexcept {
  if (is_int()) {
    int64_t i;
    std::memcpy(&i, raw_ + 8, sizeof i);
    return i;
  }
  if (is_double()) {
    double d = as_double();
    if (!(d >= -9.2e18 && d <= 9.2e18)) return 0;  // NaN or out of range
    return static_cast<int64_t>(d);
  }
  return 0;
}

double Value::as_double() const noexcept {
  if (is_double()) {
    double d;
    std::memcpy(&d, raw_ + 8, sizeof d);
    return d;
  }
  if (is_int()) return static_cast<double>(as_int());
  return 0.0;
}

std::string_view Value::as_string() const noexcept {
  if (!is_string()) return {};
  if (raw_[1] == kHeapFlag) {
    auto* s = static_cast<const StringNode*>(node());
    return {s->data(), s->size};
  }
  return {reinterpret_cast<const char*>(raw_ + 2), raw_[1]};
}

size_t Value::size() const noexcept {
  if (is_array()) return static_cast<const ArrayNode*>(node())->items.size();
  if (is_object()) return static_cast<const ObjectNode*>(node())->members.size();
  return 0;
}

std::span<const Value> Value::items() const noexcept {
  if (!is_array()) return {};
  return static_cast<const ArrayNode*>(node())->items;
}

std::span<const Member> Value::members() const noexcept {
  if (!is_object()) return {};
  return static_cast<const ObjectNode*>(node())->members;
}

const Value& Value::at(size_t index) const noexcept {
  auto list = items();
  return index < list.size() ? list[index] : null_value();
}

const Value* Value::find(std::string_view key) const noexcept {
  if (!is_object()) return nullptr;
  return static_cast<const ObjectNode*>(node())->find(key);
}

const Value& Value::operator[](std::string_view key) const noexcept {
  const Value* v = find(key);
  return v ? *v : null_value();
}

Value Value::with(std::string_view key, Value value) const {
  std::vector<Member> m(members().begin(), members().end());
  for (Member& existing : m) {
    if (existing.key.as_string() == key) {
      existing.value = std::move(value);
      return object_from_unique(std::move(m));
    }
  }
  m.push_back(Member{Value(key), std::move(value)});
  return object_from_unique(std::move(m));
}

Value Value::merged(const Value& patch) const {
  std::vector<Member> m;
  m.reserve(size() + patch.size());
  m.assign(members().begin(), members().end());
  const auto* self = is_object() ? static_cast<const ObjectNode*>(node()) : nullptr;
  for (const Member& p : patch.members()) {
    const long i = self ? self->find_index(p.key.as_string()) : -1;
    if (i >= 0) {
      m[static_cast<size_t>(i)].value = p.value;
      continue;
    }
    m.push_back(p);  // patch keys are unique, so a new key is appended once
  }
  return object_from_unique(std::move(m));
}

Value Value::without(std::string_view key) const {
  std::vector<Member> m;
  m.reserve(size());
  for (const Member& existing : members()) {
    if (existing.key.as_string() != key) m.push_back(existing);
  }
  return object_from_unique(std::move(m));
}

Value Value::object_from_unique(std::vector<Member> members) {
  Value v;
  v.set_node(ValueType::kObject, new ObjectNode(std::move(members)));
  return v;
}

bool operator==(const Value& a, const Value& b) noexcept {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case ValueType::kNull: return true;
    case ValueType::kBool: return a.as_bool() == b.as_bool();
    case ValueType::kString: return a.as_string() == b.as_string();
    case ValueType::kArray: {
      if (a.same_storage(b)) return true;
      auto x = a.items(), y = b.items();
      return std::equal(x.begin(), x.end(), y.begin(), y.end());
    }
    case ValueType::kObject: {
      if (a.same_storage(b)) return true;
      if (a.size() != b.size()) return false;
      for (const Member& m : a.members()) {
        const Value* other = b.find(m.key.as_string());
        if (!other || !(m.value == *other)) return false;
      }
      return true;
    }
    default: return false;
  }
}

std::string Value::to_json() const {
  std::string out;
  write_json(*this, out);
  return out;
}

}  // namespace flowrt
