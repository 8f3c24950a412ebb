#include "plans/value.h"

#include <cstring>

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>
#include <unordered_map>

#include "plans/value_json.h"
#include "plans/value_nodes.h"

namespace flowrt {
namespace detail {

// Frees nodes whose count reached zero, and the nodes only they held, from a worklist
// rather than by recursion: a value built in C++ may nest a million deep, and freeing it
// must take no more stack than freeing a flat one. Releasing a node's children frees a
// string that dies at once and puts an array or object that dies on the worklist (last
// in, first out). The worklist keeps its first kSlots nodes on the stack, so that the
// usual value (a record, a context: a few dozen nodes) frees without allocating; a deeper
// or wider one spills into a vector, whose growth costs little beside the frees of the
// nodes it holds.
class NodeFreer {
 public:
  // Frees `node` and every node only it held. REQUIRES: nothing else holds `node`.
  void run(HeapNode* node) noexcept {
    do free_node(node);
    while ((node = pop()) != nullptr);
  }

  static void free_string(HeapNode* node) noexcept {
    auto* s = static_cast<StringNode*>(node);
    s->~StringNode();
    ::operator delete(s);
  }

 private:
  static constexpr size_t kSlots = 32;

  // Drops one reference to `node`, as Value::release_node does.
  void release_node(HeapNode* node) noexcept {
    if (node->immortal || node->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (node->type == ValueType::kString) free_string(node);
    else push(node);
  }
  // Drops `v`'s reference; `v` is not used again (its storage is freed next, unread).
  void release(const Value& v) noexcept {
    if (v.is_heap()) release_node(v.node());
  }

  void push(HeapNode* node) noexcept {
    if (used_ < kSlots) {
      slots_[used_++] = node;
      return;
    }
    try {
      spill_.push_back(node);
    } catch (...) {
      NodeFreer fallback;  // out of memory: this node recursively, on a worklist of its own
      fallback.run(node);
    }
  }
  // The last node queued (the spill holds nodes only while the slots are full), or null.
  HeapNode* pop() noexcept {
    if (!spill_.empty()) {
      HeapNode* node = spill_.back();
      spill_.pop_back();
      return node;
    }
    return used_ == 0 ? nullptr : slots_[--used_];
  }

  // Releases what `node` holds, then frees it.
  void free_node(HeapNode* node) noexcept {
    switch (node->type) {
      case ValueType::kString: free_string(node); break;
      case ValueType::kArray: free_array(static_cast<ArrayNode*>(node)); break;
      case ValueType::kObject: free_object(static_cast<ObjectNode*>(node)); break;
      default: break;
    }
  }
  void free_array(ArrayNode* a) noexcept {
    for (uint32_t i = 0; i < a->size; ++i) release(a->items()[i]);
    a->~ArrayNode();
    ::operator delete(a);
  }
  void free_object(ObjectNode* o) noexcept {
    if (o->shaped) {
      for (uint32_t i = 0; i < o->size; ++i) release(o->values()[i]);
      release_node(o->keys);
    } else {
      for (uint32_t i = 0; i < o->size; ++i) {
        release(o->members()[i].key);
        release(o->members()[i].value);
      }
      delete o->index;
    }
    o->~ObjectNode();
    ::operator delete(o);
  }

  HeapNode* slots_[kSlots];
  size_t used_ = 0;
  std::vector<HeapNode*> spill_;
};

void destroy(HeapNode* node) noexcept {
  if (node->type == ValueType::kString) {
    NodeFreer::free_string(node);  // the most common node: no worklist to set up
    return;
  }
  NodeFreer freer;  // default-initialized: the slots are written before they are read
  freer.run(node);
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

void Value::retain_node() const noexcept {
  HeapNode* n = node();
  if (!n->immortal) n->refs.fetch_add(1, std::memory_order_relaxed);
}

void Value::release_node() const noexcept {
  HeapNode* n = node();
  if (!n->immortal && n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) detail::destroy(n);
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
  ArrayBuilder b(items.size());
  for (Value& item : items) b.add(std::move(item));
  return b.build();
}

Value Value::array(std::initializer_list<Value> items) {
  ArrayBuilder b(items.size());
  for (const Value& item : items) b.add(item);
  return b.build();
}

Value Value::array(std::span<const Value> items) {
  ArrayBuilder b(items.size());
  for (const Value& item : items) b.add(item);
  return b.build();
}

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
  return object_from_unique(std::move(members));
}

Value Value::object(std::initializer_list<std::pair<std::string_view, Value>> members) {
  bool unique = true;
  for (auto a = members.begin(); a != members.end() && unique; ++a) {
    for (auto b = members.begin(); b != a; ++b) unique = unique && a->first != b->first;
  }
  if (!unique) {
    std::vector<Member> m;
    for (const auto& [k, val] : members) m.push_back(Member{Value(k), val});
    return object(std::move(m));
  }
  ObjectBuilder b(members.size());
  for (const auto& [k, val] : members) b.add(Value(k), val);
  return b.build();
}

Value Value::object(const Value& shape, std::initializer_list<Value> values) {
  ObjectBuilder b(shape);
  for (const Value& v : values) b.add_value(v);
  return b.build();
}

Value Value::empty_object() {
  Value v;
  v.raw_[0] = static_cast<unsigned char>(ValueType::kObject);
  return v;
}

Value Value::empty_array() {
  Value v;
  v.raw_[0] = static_cast<unsigned char>(ValueType::kArray);
  return v;
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
  if (!is_heap()) return 0;
  if (is_array()) return static_cast<const ArrayNode*>(node())->size;
  if (is_object()) return static_cast<const ObjectNode*>(node())->size;
  return 0;
}

std::span<const Value> Value::items() const noexcept {
  if (!is_array() || !is_heap()) return {};
  const auto* a = static_cast<const ArrayNode*>(node());
  return {a->items(), a->size};
}

MemberRange Value::members() const noexcept {
  if (!is_object() || !is_heap()) return {};
  return static_cast<const ObjectNode*>(node())->range();
}

bool Value::has_keys(const Value& keys) const noexcept {
  if (!is_object() || !keys.is_array()) return false;
  if (is_heap() && keys.is_heap()) {
    const auto* o = static_cast<const ObjectNode*>(node());
    if (o->shaped && o->keys == keys.node()) return true;
  }
  const std::span<const Value> names = keys.items();
  if (size() != names.size()) return false;
  size_t i = 0;
  for (const auto& m : members()) {
    const Value& name = names[i++];
    if (!m.key.same_storage(name) && !(name.is_string() && m.key.as_string() == name.as_string())) return false;
  }
  return true;
}

Value Value::shape() const noexcept {
  if (!is_object() || !is_heap()) return {};
  const auto* o = static_cast<const ObjectNode*>(node());
  if (!o->shaped) return {};
  Value v;
  o->keys->refs.fetch_add(1, std::memory_order_relaxed);
  v.set_node(ValueType::kArray, o->keys);
  return v;
}

const Value& Value::at(size_t index) const noexcept {
  auto list = items();
  return index < list.size() ? list[index] : null_value();
}

const Value* Value::find(std::string_view key) const noexcept {
  if (!is_object() || !is_heap()) return nullptr;
  return static_cast<const ObjectNode*>(node())->find(key);
}

const Value& Value::operator[](std::string_view key) const noexcept {
  const Value* v = find(key);
  return v ? *v : null_value();
}

Value Value::with(std::string_view key, Value value) const {
  const bool present = find(key) != nullptr;
  ObjectBuilder b(size() + (present ? 0 : 1));
  for (const auto& m : members()) b.add(m.key, m.key.as_string() == key ? value : m.value);
  if (!present) b.add(Value(key), std::move(value));
  return b.build();
}

Value Value::merged(const Value& patch) const {
  const auto* self = is_object() && is_heap() ? static_cast<const ObjectNode*>(node()) : nullptr;
  size_t added = 0;
  for (const auto& p : patch.members()) added += !self || self->find_index(p.key.as_string()) < 0;
  ObjectBuilder b(size() + added);
  for (const auto& m : members()) {
    const Value* replacement = patch.find(m.key.as_string());
    b.add(m.key, replacement ? *replacement : m.value);
  }
  for (const auto& p : patch.members()) {
    if (!self || self->find_index(p.key.as_string()) < 0) b.add(p.key, p.value);  // patch keys are unique
  }
  return b.build();
}

Value Value::without(std::string_view key) const {
  ObjectBuilder b(size());
  for (const auto& m : members()) {
    if (m.key.as_string() != key) b.add(m.key, m.value);
  }
  return b.build();
}

Value Value::object_from_unique(std::vector<Member> members) {
  ObjectBuilder b(members.size());
  for (Member& m : members) b.add(std::move(m.key), std::move(m.value));
  return b.build();
}

// ---- builders ----

ArrayBuilder::ArrayBuilder(size_t capacity) : node_(ArrayNode::make(capacity)) {}

ArrayBuilder::~ArrayBuilder() {
  if (node_) detail::destroy(node_);
}

void ArrayBuilder::add(Value item) {
  auto* a = static_cast<ArrayNode*>(node_);
  new (&a->items()[a->size]) Value(std::move(item));
  ++a->size;
}

size_t ArrayBuilder::size() const { return static_cast<const ArrayNode*>(node_)->size; }

Value ArrayBuilder::build() {
  if (static_cast<ArrayNode*>(node_)->size == 0) return Value::empty_array();
  Value v;
  v.set_node(ValueType::kArray, node_);
  node_ = nullptr;
  return v;
}

ObjectBuilder::ObjectBuilder(size_t capacity) : node_(ObjectNode::make(capacity)) {}

ObjectBuilder::ObjectBuilder(const Value& shape) {
  const std::span<const Value> keys = shape.items();
  if (keys.empty() || keys.size() > ObjectNode::kIndexThreshold) {
    node_ = ObjectNode::make(keys.size());
    shape_keys_ = keys.data();
  } else {
    node_ = ObjectNode::make_shaped(static_cast<ArrayNode*>(shape.node()));
  }
}

ObjectBuilder::~ObjectBuilder() {
  if (node_) detail::destroy(node_);
}

void ObjectBuilder::add(Value key, Value value) {
  auto* o = static_cast<ObjectNode*>(node_);
  new (&o->members()[o->size]) Member{std::move(key), std::move(value)};
  ++o->size;
}

void ObjectBuilder::add_value(Value value) {
  auto* o = static_cast<ObjectNode*>(node_);
  if (!o->shaped) {
    add(shape_keys_[o->size], std::move(value));
    return;
  }
  new (&o->values()[o->size]) Value(std::move(value));
  ++o->size;
}

size_t ObjectBuilder::size() const { return static_cast<const ObjectNode*>(node_)->size; }

namespace {

// The interned shapes, by their keys, each written after its length (keys may hold NUL
// bytes, so no separator would tell ["a\0b"] from ["a", "b"]).
struct ShapeRegistry {
  std::shared_mutex mu;
  std::unordered_map<std::string, Value> shapes;  // guarded by mu
};

ShapeRegistry& shape_registry() {
  static ShapeRegistry* registry = new ShapeRegistry();  // never destroyed: shapes outlive statics
  return *registry;
}

std::string shape_key(std::span<const Value> keys) {
  std::string key;
  for (const Value& k : keys) {
    const std::string_view text = k.as_string();
    const uint64_t size = text.size();
    key.append(reinterpret_cast<const char*>(&size), sizeof size);
    key.append(text);
  }
  return key;
}

}  // namespace

Value intern_shape(std::span<const Value> keys) {
  if (keys.empty()) return Value::array(keys);  // the shared empty array: not ours to mark
  ShapeRegistry& r = shape_registry();
  const std::string key = shape_key(keys);
  {
    std::shared_lock lock(r.mu);
    if (auto it = r.shapes.find(key); it != r.shapes.end()) return it->second;
  }
  std::unique_lock lock(r.mu);
  if (auto it = r.shapes.find(key); it != r.shapes.end()) return it->second;
  if (r.shapes.size() >= kMaxInternedShapes) return Value::array(keys);
  // Fresh nodes for the array and its keys, marked before anyone else can see them.
  ArrayBuilder array(keys.size());
  for (const Value& k : keys) {
    Value copy(k.as_string());
    if (copy.is_heap()) copy.node()->immortal = true;
    array.add(std::move(copy));
  }
  Value shape = array.build();
  if (shape.is_heap()) shape.node()->immortal = true;
  r.shapes.emplace(key, shape);
  return shape;
}

Value intern_shape(std::initializer_list<std::string_view> keys) {
  std::vector<Value> values;
  values.reserve(keys.size());
  for (std::string_view k : keys) values.emplace_back(k);
  return intern_shape(values);
}

Value shape_for(std::span<const Value> keys, std::span<Value> cache) {
  for (const Value& shape : cache) {
    const std::span<const Value> cached = shape.items();
    bool same = shape.is_array() && cached.size() == keys.size();
    for (size_t i = 0; same && i < keys.size(); ++i) {
      same = cached[i].same_storage(keys[i]) || cached[i].as_string() == keys[i].as_string();
    }
    if (same) return shape;
  }
  Value made = intern_shape(keys);
  if (!cache.empty()) {
    std::move_backward(cache.begin(), cache.end() - 1, cache.end());
    cache.front() = made;
  }
  return made;
}

Value ObjectBuilder::build() {
  auto* o = static_cast<ObjectNode*>(node_);
  if (o->size == 0) return Value::empty_object();
  o->finish();
  Value v;
  v.set_node(ValueType::kObject, node_);
  node_ = nullptr;
  return v;
}

namespace {

// Values nested at most this deep (the usual record or context) are compared by recursion;
// below it, from an explicit stack (equal_nested), so that comparing values built in C++
// nested a million deep takes no more of the thread's stack than comparing shallow ones.
constexpr size_t kEqualRecursionDepth = 64;

enum class Likeness : uint8_t { kEqual, kUnequal, kChildren };

// Compares `a` and `b` as far as it can without looking into their items or members:
// kChildren when both are arrays or both objects, of one size, not the same storage.
Likeness compare_outside(const Value& a, const Value& b) noexcept {
  if (a.is_number() && b.is_number()) {
    const bool equal = a.is_int() && b.is_int() ? a.as_int() == b.as_int() : a.as_double() == b.as_double();
    return equal ? Likeness::kEqual : Likeness::kUnequal;
  }
  if (a.type() != b.type()) return Likeness::kUnequal;
  switch (a.type()) {
    case ValueType::kNull: return Likeness::kEqual;
    case ValueType::kBool: return a.as_bool() == b.as_bool() ? Likeness::kEqual : Likeness::kUnequal;
    case ValueType::kString: return a.as_string() == b.as_string() ? Likeness::kEqual : Likeness::kUnequal;
    case ValueType::kArray:
    case ValueType::kObject:
      if (a.same_storage(b)) return Likeness::kEqual;
      return a.size() == b.size() ? Likeness::kChildren : Likeness::kUnequal;
    default: return Likeness::kUnequal;
  }
}

// a == b, for two arrays or two objects of one size, from an explicit stack of the pairs
// still to compare (the same answer as the recursion of values_equal).
bool equal_nested(const Value& a, const Value& b) {
  std::vector<std::pair<const Value*, const Value*>> pending{{&a, &b}};
  while (!pending.empty()) {
    const auto [x, y] = pending.back();
    pending.pop_back();
    auto visit = [&](const Value& p, const Value& q) {
      const Likeness l = compare_outside(p, q);
      if (l == Likeness::kChildren) pending.emplace_back(&p, &q);
      return l != Likeness::kUnequal;
    };
    if (x->is_array()) {
      const auto xs = x->items(), ys = y->items();
      for (size_t i = 0; i < xs.size(); ++i) {
        if (!visit(xs[i], ys[i])) return false;
      }
    } else {
      for (const auto& m : x->members()) {
        const Value* other = y->find(m.key.as_string());
        if (!other || !visit(m.value, *other)) return false;
      }
    }
  }
  return true;
}

// a == b, where `a` lies `depth` deep in the values first compared.
bool values_equal(const Value& a, const Value& b, size_t depth) {
  switch (compare_outside(a, b)) {
    case Likeness::kEqual: return true;
    case Likeness::kUnequal: return false;
    case Likeness::kChildren: break;
  }
  if (depth >= kEqualRecursionDepth) return equal_nested(a, b);
  if (a.is_array()) {
    const auto x = a.items(), y = b.items();
    for (size_t i = 0; i < x.size(); ++i) {
      if (!values_equal(x[i], y[i], depth + 1)) return false;
    }
    return true;
  }
  for (const auto& m : a.members()) {
    const Value* other = b.find(m.key.as_string());
    if (!other || !values_equal(m.value, *other, depth + 1)) return false;
  }
  return true;
}

}  // namespace

bool operator==(const Value& a, const Value& b) noexcept { return values_equal(a, b, 0); }

std::string Value::to_json() const {
  std::string out;
  write_json(*this, out);
  return out;
}

}  // namespace flowrt
