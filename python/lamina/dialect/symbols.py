"""Symbolic sizes: torch's shape-environment expressions carried in lamina tensor types.

A dynamic dim is `?`; the tensor type's encoding lists, for each `?` in order, the
expression it stands for, in torch's Python syntax (what Inductor prints):

    tensor<?x64x?xf32, ["s77", "s27*s77"]>

so every value knows its symbolic shape, it prints and re-parses with the IR, and two
values of different symbols have different types. Expressions are built from symbols
(`s0`, `s77`), integer constants, `+ - * // %`, and `max`/`min` (a power with a small
integer exponent is written as a product). A `?` without an encoding is a size nothing is
known about (`UNKNOWN`).

Graph and kernel functions receive each symbol's value as an `index` argument with the
argument attribute `lamina.symbol = "<name>"`; `materialize` turns an expression into
`arith` ops on those values. lamina-to-linalg drops the encodings (bufferization and
the upstream passes do not accept them) once sizes are SSA values.
"""
from __future__ import annotations

import ast
import functools

from mlir import ir

SYMBOL_ATTR = "lamina.symbol"
DIMS_ATTR = "lamina.dims"   # a function argument's dims, kept when lamina-to-linalg drops encodings
UNKNOWN = "?"


class SymbolError(ValueError):
    """An expression outside the grammar above, or one whose symbols have no value."""


# ---- expressions -----------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _parse(expr: str) -> ast.expr:
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError as e:
        raise SymbolError(f"symbolic size {expr!r} is not an expression") from e
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Call, ast.Load,
                               ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.USub))
        if isinstance(node, ast.Constant) and not isinstance(node.value, int):
            ok = False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in ("max", "min")):
            ok = False
        if not ok:
            raise SymbolError(f"symbolic size {expr!r}: {type(node).__name__} is not allowed")
    return tree


def free_symbols(expr: str) -> set[str]:
    """Symbol names an expression uses ('s27*s77' -> {'s27', 's77'})."""
    calls = {id(n.func) for n in ast.walk(_parse(expr)) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(_parse(expr)) if isinstance(n, ast.Name) and id(n) not in calls}


_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


def _interpret(expr: str, const, name, binary, neg, minmax):
    """Fold an expression bottom-up in some algebra: Python ints, sympy, arith ops.
    const(int), name(symbol), binary(op, a, b) with op in + - * // %, neg(a),
    minmax("max" | "min", [args])."""
    def go(n):
        if isinstance(n, ast.Constant):
            return const(n.value)
        if isinstance(n, ast.Name):
            return name(n.id)
        if isinstance(n, ast.UnaryOp):
            return neg(go(n.operand))
        if isinstance(n, ast.Call):
            return minmax(n.func.id, [go(a) for a in n.args])
        return binary(_BINARY[type(n.op)], go(n.left), go(n.right))
    return go(_parse(expr))


_PY_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "//": lambda a, b: a // b, "%": lambda a, b: a % b}


def evaluate(expr: str, env: dict) -> int:
    """The value of an expression for symbol values `env` (Python ints)."""
    def name(n):
        try:
            return env[n]
        except KeyError:
            raise SymbolError(f"no value for symbol {n}") from None
    return _interpret(expr, int, name, lambda op, a, b: _PY_OPS[op](a, b), lambda a: -a,
                      lambda f, args: (max if f == "max" else min)(*args))


def _to_sympy(expr: str):
    import sympy
    from torch.utils._sympy.functions import FloorDiv, PythonMod

    def binary(op, a, b):
        return FloorDiv(a, b) if op == "//" else PythonMod(a, b) if op == "%" else _PY_OPS[op](a, b)
    return _interpret(expr, sympy.Integer, lambda n: sympy.Symbol(n, integer=True, positive=True), binary,
                      lambda a: -a, lambda f, args: (sympy.Max if f == "max" else sympy.Min)(*args))


def _through_floats(e):
    """A size torch computed through floats (a float scale factor: TruncToInt(1.5*ToFloat(s0)))
    as integer arithmetic where that is exact: ToFloat(x) is x, a dyadic float constant
    (1.5, 0.25: a product with it is exact in float64) is its rational, and TruncToInt /
    FloorToInt of p(s) / q is p(s) // q (sizes are non-negative: truncation is the floor).
    Anything else is left as it is (and refused by the grammar)."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv

    names = {type(f).__name__ for f in e.atoms(sympy.Function)}
    if not names & {"ToFloat", "TruncToInt", "FloorToInt", "CeilToInt"}:
        return e

    def exact(x):
        if isinstance(x, sympy.Float):
            r = sympy.Rational(float(x))
            if r.q & (r.q - 1) == 0 and r.q <= 2 ** 20:   # a power of two
                return r
        return x

    def to_int(arg):
        if type(arg).__name__ == "IntTrueDiv" and isinstance(arg.args[1], sympy.Integer) and arg.args[1] > 0:
            return FloorDiv(arg.args[0], arg.args[1])   # (sizes are non-negative: trunc is floor)
        arg = sympy.together(arg.replace(lambda x: isinstance(x, sympy.Float), exact))
        num, den = sympy.fraction(arg)
        if not (num.is_polynomial() and all(isinstance(c, sympy.Integer) for c in sympy.Poly(num).coeffs())) \
                or not isinstance(den, sympy.Integer):
            return None
        return num if den == 1 else FloorDiv(num, den)

    def ceil_to_int(arg):
        # CeilToInt(IntTrueDiv(p(s), q)) (a size padded to a multiple of q: attention's
        # logsumexp) is (p(s) + q - 1) // q for a positive integer q
        if type(arg).__name__ == "IntTrueDiv" and isinstance(arg.args[1], sympy.Integer) and arg.args[1] > 0:
            q = arg.args[1]
            return FloorDiv(arg.args[0] + q - 1, q)
        return None

    e = e.replace(lambda x: type(x).__name__ == "ToFloat", lambda x: x.args[0])
    for name in ("TruncToInt", "FloorToInt"):
        e = e.replace(lambda x: type(x).__name__ == name,
                      lambda x: to_int(x.args[0]) if to_int(x.args[0]) is not None else x)
    e = e.replace(lambda x: type(x).__name__ == "CeilToInt",
                  lambda x: ceil_to_int(x.args[0]) if ceil_to_int(x.args[0]) is not None else x)
    return e


def from_sympy(e) -> int | str:
    """A sympy expression (torch's SymInt.node.expr) -> an int or its canonical text."""
    import sympy

    if isinstance(e, (int, sympy.Integer)):
        return int(e)
    e = _through_floats(e)
    if isinstance(e, sympy.Integer):
        return int(e)
    return _size_printer().doprint(e)


def _size_printer_class():
    from torch.utils._sympy.printers import PythonPrinter

    class SizePrinter(PythonPrinter):
        """torch's printer with x**n (a positive integer n) as the product x*x*...: the grammar
        has no powers (x**2 comes from a size squared, two sizes duck-sized to one symbol)."""
        def _print_Pow(self, expr, rational=False):
            base, exp = expr.args
            if exp.is_Integer and 1 < int(exp) <= 16:
                return "*".join([self.parenthesize(base, 60)] * int(exp))   # (60: a product binds tighter)
            return super()._print_Pow(expr, rational)
    return SizePrinter


def _size_printer():
    global _SIZE_PRINTER
    if _SIZE_PRINTER is None:
        _SIZE_PRINTER = _size_printer_class()
    return _SIZE_PRINTER()


_SIZE_PRINTER = None


def dim_of(size) -> int | str:
    """A torch size (int or SymInt) as a lamina dim: an int, or its expression."""
    import torch

    if isinstance(size, torch.SymInt):
        return from_sympy(size.node.expr)
    return int(size)


def simplify(dim) -> int | str:
    """Canonical form of a dim (so equal sizes compare equal as text)."""
    if isinstance(dim, int) or dim == UNKNOWN:
        return dim
    return from_sympy(_to_sympy(dim))


def combine(op: str, a, b) -> int | str:
    """a op b on dims (ints or expressions), simplified; UNKNOWN if either is."""
    if UNKNOWN in (a, b):
        return UNKNOWN
    if isinstance(a, int) and isinstance(b, int):
        if op == "//":
            return a // b
        return {"+": a + b, "-": a - b, "*": a * b}[op]
    x, y = _to_sympy(str(a)), _to_sympy(str(b))
    if op == "//":
        from torch.utils._sympy.functions import FloorDiv
        return from_sympy(FloorDiv(x, y))
    return from_sympy({"+": x + y, "-": x - y, "*": x * y}[op])


def equivalent(a, b) -> bool:
    """Two dims of the same size: equal, or expressions sympy proves equal (torch's shape
    environment states a size as it simplified it under its guards; a rule may state it
    otherwise)."""
    if a == b:
        return True
    if UNKNOWN in (a, b):
        return False
    import sympy

    return sympy.simplify(_to_sympy(str(a)) - _to_sympy(str(b))) == 0


def product(dims) -> int | str:
    out: int | str = 1
    for d in dims:
        out = combine("*", out, d)
    return out


# ---- types -------------------------------------------------------------------------------------

def encoding(dims) -> ir.Attribute | None:
    """The encoding attribute of a type with these dims (None when none is symbolic)."""
    syms = [d for d in dims if isinstance(d, str)]
    if not syms or all(d == UNKNOWN for d in syms):
        return None
    return ir.ArrayAttr.get([ir.StringAttr.get(d) for d in syms])


def dims_of(t: ir.Type) -> list:
    """Per dim: its static size, or its expression (UNKNOWN when the type does not say)."""
    rt = ir.RankedTensorType(t)
    names = []
    enc = rt.encoding
    if enc is not None:
        try:
            names = [ir.StringAttr(a).value for a in ir.ArrayAttr(enc)]
        except (ValueError, TypeError):
            names = []
    out, k = [], 0
    for i in range(rt.rank):
        if rt.is_dynamic_dim(i):
            out.append(names[k] if k < len(names) else UNKNOWN)
            k += 1
        else:
            out.append(rt.get_dim_size(i))
    return out


def type_symbols(t: ir.Type) -> set[str]:
    """Symbols a (tensor) type's sizes use."""
    if not isinstance(t, ir.RankedTensorType):
        return set()
    out: set[str] = set()
    for d in dims_of(t):
        if isinstance(d, str) and d != UNKNOWN:
            out |= free_symbols(d)
    return out


def strip(t: ir.Type) -> ir.Type:
    """The type without its symbolic encoding."""
    if isinstance(t, ir.RankedTensorType):
        rt = t
        if rt.encoding is not None:
            return ir.RankedTensorType.get(rt.shape, rt.element_type)
    return t


def dims_attr(dims) -> ir.ArrayAttr:
    """The `lamina.dims` attribute of an argument with these dims (each as its text)."""
    return ir.ArrayAttr.get([ir.StringAttr.get(str(d)) for d in dims])


def dims_from_attr(attr: ir.Attribute) -> list:
    """The dims a `lamina.dims` attribute holds: ints, expressions, or UNKNOWN."""
    out = []
    for a in ir.ArrayAttr(attr):
        text = ir.StringAttr(a).value
        out.append(int(text) if text.lstrip("-").isdigit() else text)
    return out


def strip_function(func_op) -> None:
    """Drop the encodings of every type in a function: signature, block arguments, results.
    Arguments of symbolic shape keep their dims as a `lamina.dims` argument attribute, so
    later passes can tell sizes of one symbol from sizes of another."""
    ftype = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
    for i, t in enumerate(ftype.inputs):
        if isinstance(t, ir.RankedTensorType) and t.encoding is not None:
            set_argument_attr(func_op, i, DIMS_ATTR, dims_attr(dims_of(t)))
    func_op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        [strip(t) for t in ftype.inputs], [strip(t) for t in ftype.results]))

    def walk(region):
        for block in region.blocks:
            for arg in block.arguments:
                if strip(arg.type) != arg.type:
                    arg.set_type(strip(arg.type))
            for op in block.operations:
                for r in op.results:
                    if strip(r.type) != r.type:
                        r.set_type(strip(r.type))
                for reg in op.regions:
                    walk(reg)
    walk(func_op.regions[0])


def set_argument_attr(func_op, index: int, name: str, value: ir.Attribute, kind: str = "arg_attrs") -> None:
    """Set `name` in the attribute dictionary of argument (or, kind="res_attrs", result) `index`."""
    ftype = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
    n = len(ftype.inputs if kind == "arg_attrs" else ftype.results)
    old = list(ir.ArrayAttr(func_op.attributes[kind])) if kind in func_op.attributes \
        else [ir.DictAttr.get({})] * n
    entries = {a.name: a.attr for a in ir.DictAttr(old[index])}
    entries[name] = value
    old[index] = ir.DictAttr.get(entries)
    func_op.attributes[kind] = ir.ArrayAttr.get(old)


def argument_dims(func_op, index: int) -> list | None:
    """The `lamina.dims` of argument `index` (None when it has none)."""
    if "arg_attrs" not in func_op.attributes:
        return None
    attrs = list(ir.ArrayAttr(func_op.attributes["arg_attrs"]))
    if index >= len(attrs):
        return None
    d = ir.DictAttr(attrs[index])
    return dims_from_attr(d[DIMS_ATTR]) if DIMS_ATTR in d else None


# ---- values --------------------------------------------------------------------------------------

def symbol_args(func_op) -> dict[str, ir.Value]:
    """symbol name -> the function's `index` argument carrying it (lamina.symbol)."""
    out = {}
    if "arg_attrs" not in func_op.attributes:
        return out
    args = func_op.regions[0].blocks[0].arguments
    for i, d in enumerate(ir.ArrayAttr(func_op.attributes["arg_attrs"])):
        d = ir.DictAttr(d)
        if SYMBOL_ATTR in d and i < len(args):
            out[ir.StringAttr(d[SYMBOL_ATTR]).value] = args[i]
    return out


def symbol_values(func_op) -> dict[str, ir.Value]:
    """symbol name -> its index Value in a function: the `lamina.symbol` arguments, and
    ops of the entry block marked `lamina.symbol` (a graph reading a size of an input)."""
    out = symbol_args(func_op)
    if func_op.regions[0].blocks:
        for op in func_op.regions[0].blocks[0].operations:
            if SYMBOL_ATTR in op.attributes and len(op.results) == 1:
                out.setdefault(ir.StringAttr(op.attributes[SYMBOL_ATTR]).value, op.results[0])
    return out


class SymbolSourceError(ValueError):
    """A symbol some kernel needs that no graph input carries."""


class GraphSymbols:
    """symbol -> its index Value in the graph function (made on first request)."""

    def __init__(self, func_op):
        self.func_op = func_op
        self.block = func_op.regions[0].blocks[0]
        self.values = symbol_values(func_op)

    def __getitem__(self, name: str) -> ir.Value:
        if name not in self.values:
            self.values[name] = self._read_from_input(name)
        return self.values[name]

    def _read_from_input(self, name: str) -> ir.Value:
        for arg in self.block.arguments:
            if not isinstance(arg.type, ir.RankedTensorType):
                continue
            for d, size in enumerate(dims_of(arg.type)):
                if size == name:
                    from mlir.dialects import arith, tensor

                    with ir.InsertionPoint.at_block_begin(self.block), self.func_op.location:
                        index = ir.IndexType.get()
                        dim = tensor.dim(arg, arith.constant(index, ir.IntegerAttr.get(index, d)))
                        dim.owner.attributes[SYMBOL_ATTR] = ir.StringAttr.get(name)
                    return dim
        raise SymbolSourceError(f"symbol {name} is neither an index argument nor a dim of a graph input")


def materialize(dim, values: dict[str, ir.Value]) -> ir.Value:
    """An `index` Value of a dim (int or expression) from symbol values, as arith ops at
    the current insertion point."""
    from mlir.dialects import arith

    index = ir.IndexType.get()

    def const(v):
        return arith.constant(index, ir.IntegerAttr.get(index, v))

    def name(n):
        try:
            return values[n]
        except KeyError:
            raise SymbolError(f"no value for symbol {n} here (have {sorted(values)})") from None

    def binary(op, a, b):
        if op == "%":   # Python's % (the sign of b)
            return arith.remsi(arith.addi(arith.remsi(a, b), b), b)
        return {"+": arith.addi, "-": arith.subi, "*": arith.muli, "//": arith.floordivsi}[op](a, b)

    def minmax(f, args):
        out = args[0]
        for a in args[1:]:
            out = arith.maxsi(out, a) if f == "max" else arith.minsi(out, a)
        return out
    if isinstance(dim, int):
        return const(dim)
    if dim == UNKNOWN:
        raise SymbolError("a dynamic size with no expression cannot be materialized")
    return _interpret(dim, const, name, binary, lambda a: arith.subi(const(0), a), minmax)


def python_expr(dim) -> str:
    """Python source computing a dim from variables named after its symbols."""
    return str(dim) if isinstance(dim, int) else f"({dim})"
