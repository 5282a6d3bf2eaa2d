"""The op tables of the IR: every unary and binary op name, declared once, with its dtype rule.

Codegen maps each name to an emitter (kael/codegen/lowering.py); the frontend maps
each to a public function. A name missing from a backend's table fails loudly.
"""

# Result kinds: "same" keeps the operand dtype, "bool" gives bool (comparisons, predicates).
UNARY_OPS: dict[str, str] = {
    "neg": "same",
    "abs": "same",
    "not": "bool",
}

BINARY_OPS: dict[str, str] = {
    "add": "same",
    "sub": "same",
    "mul": "same",
    "max": "same",
    "min": "same",
    "eq": "bool",
    "ne": "bool",
    "lt": "bool",
    "le": "bool",
    "gt": "bool",
    "ge": "bool",
    "and": "bool",
    "or": "bool",
}

REDUCE_OPS = ("sum", "prod", "max", "min")
