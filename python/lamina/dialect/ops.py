"""Python builders for lamina ops, derived from dialects/lamina.irdl.mlir.

Each IRDL operation becomes a function of this module with its operand names as
positional parameters and its attribute names as keyword parameters, e.g.

    with ctx, loc, ir.InsertionPoint(block):
        y = ops.add(a, b)                       # result type inferred (infer.py)
        s = ops.reduce_sum(y, dims=[1], keepdim=True)
        r = ops.reshape(s, result_type=tensor_type([4], "f32"))

Attribute values are plain Python (int, bool, float, str, list[int]) or ir.Attribute;
the IRDL base of each attribute picks the conversion. Builders return the result
Value; `build(name, operands, attrs, result_type)` is the generic entry point.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from mlir import ir

from . import infer


@dataclass(frozen=True)
class OpSpec:
    name: str                 # without the "lamina." prefix
    operands: tuple[str, ...]
    attributes: dict          # attribute name -> IRDL base, e.g. "#builtin.dense_array" ("any": irdl.any)
    doc: str = ""


def _attr_python_value(attr: ir.Attribute):
    """ir.Attribute -> the Python value infer.py rules take."""
    # Attributes come back downcast to their concrete class (bindings >= 19).
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return [int(x) for x in attr]
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.StringAttr):
        return attr.value
    return attr


def _to_attribute(base: str, value) -> ir.Attribute:
    if isinstance(value, ir.Attribute):
        return value
    if base == "any":   # (an attribute of several kinds: the Python value's picks it)
        base = "#builtin.string" if isinstance(value, str) else "#builtin.float" if isinstance(value, float) \
            else "#builtin.integer"
    if base == "#builtin.dense_array":
        return ir.DenseI64ArrayAttr.get([int(v) for v in value])
    if base == "#builtin.integer":
        if isinstance(value, bool):
            return ir.BoolAttr.get(value)
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
    if base == "#builtin.float":
        return ir.FloatAttr.get(ir.F64Type.get(), float(value))
    if base == "#builtin.string":
        return ir.StringAttr.get(str(value))
    raise TypeError(f"cannot make a {base} attribute from {value!r}")


def attributes_of(op: ir.Operation) -> dict:
    """The op's attributes as Python values (dims -> list[int], keepdim -> bool, ...)."""
    return {k: _attr_python_value(op.attributes[k]) for k in op.attributes}


@functools.lru_cache(maxsize=None)
def op_specs() -> dict[str, OpSpec]:
    """Parse the IRDL file once (in a private context) into OpSpecs."""
    from .._assets import asset_path

    path = asset_path("dialects", "lamina.irdl.mlir")
    text = path.read_text()
    docs = _op_docs(text)
    specs: dict[str, OpSpec] = {}
    with ir.Context(load_on_create_dialects=[]):   # (irdl loads as the text is parsed)
        module = ir.Module.parse(text)
        dialect = module.body.operations[0]
        for op in dialect.regions[0].blocks[0].operations:
            name = ir.StringAttr(op.attributes["sym_name"]).value
            operands: tuple[str, ...] = ()
            attributes: dict = {}
            for inner in op.regions[0].blocks[0].operations:
                if inner.name == "irdl.operands":
                    operands = tuple(ir.StringAttr(a).value for a in ir.ArrayAttr(inner.attributes["names"]))
                elif inner.name == "irdl.attributes":
                    names = [ir.StringAttr(a).value for a in ir.ArrayAttr(inner.attributes["attributeValueNames"])]
                    for attr_name, value in zip(names, inner.operands):
                        owner = value.owner
                        attributes[attr_name] = "any" if owner.name == "irdl.any" else \
                            ir.StringAttr(owner.attributes["base_name"]).value
            specs[name] = OpSpec(name, operands, attributes, docs.get(name, ""))
    return specs


def _op_docs(text: str) -> dict[str, str]:
    """The `// ...` comment line right above each irdl.operation."""
    docs, last = {}, ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("//"):
            last = s[2:].strip()
        elif s.startswith("irdl.operation @"):
            docs[s.split("@")[1].split()[0]] = last
    return docs


def build(name: str, operands: list[ir.Value], attrs: dict | None = None,
          result_type: ir.Type | None = None) -> ir.Value:
    """Create `lamina.<name>` at the current insertion point and return its result.

    The result type is inferred (infer.py) unless given; a given one is checked.
    """
    spec = op_specs().get(name)
    if spec is None:
        raise ValueError(f"unknown lamina op {name!r}")
    attrs = dict(attrs or {})
    missing = set(spec.attributes) - set(attrs)
    extra = set(attrs) - set(spec.attributes)
    if missing or extra:
        raise TypeError(f"lamina.{name}: missing attributes {sorted(missing)}, unexpected {sorted(extra)}")
    if len(operands) != len(spec.operands):
        raise TypeError(f"lamina.{name} takes {len(spec.operands)} operands ({', '.join(spec.operands)}), got {len(operands)}")
    ir_attrs = {k: _to_attribute(spec.attributes[k], v) for k, v in attrs.items()}
    py_attrs = {k: _attr_python_value(v) for k, v in ir_attrs.items()}
    operand_types = [v.type for v in operands]
    if result_type is None:
        result_type = infer.infer_result_type(name, operand_types, py_attrs)
    else:
        infer.check_result_type(name, operand_types, py_attrs, result_type)
    op = ir.Operation.create(f"lamina.{name}", results=[result_type], operands=list(operands), attributes=ir_attrs)
    return op.result


def infer_for(op: ir.Operation) -> ir.Type:
    """Re-infer an existing op's result type (used by verification and rewrites)."""
    name = op.name.split(".", 1)[1]
    if name in infer.RESULT_GIVEN_OPS:
        return op.results[0].type
    return infer.infer_result_type(name, [v.type for v in op.operands], attributes_of(op))


def verify_op(op: ir.Operation) -> None:
    """Check an op's result type against its rule; raises infer.ShapeError."""
    name = op.name.split(".", 1)[1]
    infer.check_result_type(name, [v.type for v in op.operands], attributes_of(op), op.results[0].type)


def _make_builder(spec: OpSpec):
    def builder(*operands, result_type=None, **attrs):
        return build(spec.name, list(operands), attrs, result_type)
    builder.__name__ = spec.name
    params = ", ".join(spec.operands + tuple(f"{a}=" for a in spec.attributes))
    builder.__doc__ = f"lamina.{spec.name}({params}) -> Value. {spec.doc}"
    return builder


def __getattr__(name: str):
    # Builders are made on first use from the IRDL specs: ops.add, ops.reduce_sum, ...
    specs = op_specs()
    if name in specs:
        fn = _make_builder(specs[name])
        globals()[name] = fn
        return fn
    raise AttributeError(name)
