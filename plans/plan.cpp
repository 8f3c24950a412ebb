#include "plans/plan.h"

namespace flowrt {
namespace {

// Visits `block` and every block nested in it, depth first, nodes in order.
// BlockT is Block or const Block.
template <class BlockT, class Fn>
void walk(BlockT& block, const Fn& fn) {
  for (auto& node : block) {
    fn(node);
    if (auto* n = std::get_if<IfNode>(&node.op)) {
      for (auto& b : n->branches) walk(b, fn);
      walk(n->else_block, fn);
    } else if (auto* l = std::get_if<ForEachNode>(&node.op)) {
      walk(l->body, fn);
    } else if (auto* t = std::get_if<TryNode>(&node.op)) {
      walk(t->body, fn);
      walk(t->handler, fn);
    }
  }
}

}  // namespace

void number_nodes(Plan& plan) {
  uint32_t next = 0;
  for (PlanUnit& unit : plan.units) walk(unit.body, [&](Node& n) { n.ordinal = next++; });
}

std::vector<const Node*> nodes_of(const Plan& plan) {
  std::vector<const Node*> out;
  for (const PlanUnit& unit : plan.units) walk(unit.body, [&](const Node& n) { out.push_back(&n); });
  return out;
}

}  // namespace flowrt
