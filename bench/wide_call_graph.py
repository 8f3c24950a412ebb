#!/usr/bin/env python3
"""Writes a project whose subflows form a wide, layered call graph, to time checking it.

    python3 bench/wide_call_graph.py DIR [LAYERS [WIDTH]]
    build/release/cli/flowrt validate DIR/flows

LAYERS layers of WIDTH subflows (40 and 20 by default), each calling every subflow of the
layer below, and one flow calling the first: a definition's closure is everything below
it, so checking each definition with its whole closure is quadratic in the definitions.
"""
import json
import os
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    flows = os.path.join(out, "flows")
    os.makedirs(flows, exist_ok=True)
    for layer in range(layers):
        for w in range(width):
            if layer + 1 < layers:
                actions = [{"action": "call_subflow", "inputs": {"subflow": f"s{layer + 1}_{v}"}} for v in range(width)]
            else:
                actions = [{"action": "log", "inputs": {"message": "leaf"}}]
            unit = {"id": f"s{layer}_{w}", "type": "subflow", "actions": actions}
            with open(os.path.join(flows, f"s{layer}_{w}.json"), "w") as f:
                json.dump(unit, f)
    root = {"id": "root", "trigger": {"type": "api"},
            "actions": [{"action": "call_subflow", "inputs": {"subflow": "s0_0"}}]}
    with open(os.path.join(flows, "root.json"), "w") as f:
        json.dump(root, f)


if __name__ == "__main__":
    main()
