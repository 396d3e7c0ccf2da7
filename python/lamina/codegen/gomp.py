"""lamina-omp-to-gomp (L5): run the CPU kernels' parallel loops on torch's OpenMP thread pool.

MLIR's OpenMP translation calls LLVM's libomp (`__kmpc_fork_call`), while torch's CPU
wheels run ATen on GNU libgomp. Two runtimes mean two thread pools on the same cores: after
an eager op, libgomp's workers still spin while a lamina kernel forks libomp's, and the
other way round, so a program that mixes eager ops (a fallback, a graph break, the rest
of the model) with lamina graphs oversubscribes the cores (512^3 matmul interleaved with
eager calls: 82 -> 96 GFLOP/s with one runtime; measured by preloading libomp as both).

This pass, run on the LLVM-dialect module after the lowering pipeline, rewrites every

    omp.parallel { omp.wsloop { omp.loop_nest (ivs) = (lbs) to (ubs) step (steps) {body} } }

into an outlined `llvm.func internal @<func>_omp_<n>(%ctx: !llvm.ptr)` and a call
`GOMP_parallel(@<func>_omp_<n>, %ctx, 0, 0)` (libgomp's entry for `#pragma omp parallel`,
the one ATen's own parallel loops use; 0 threads = the team size torch.set_num_threads
set). `%ctx` points to a struct of the values the region uses from outside it (constants
are cloned instead, so loop bounds stay constants for LLVM). Each thread takes one
contiguous chunk of the collapsed iteration space (`schedule(static)`, as the wsloop
asked) from omp_get_thread_num/omp_get_num_threads. Regions with anything else (reduction
clauses, a schedule, ops around the wsloop that are not side-effect free) are left to
libomp.

Enabled when the process has loaded a libgomp exporting GOMP_parallel (torch's wheels do:
`host_gomp_library()`); LAMINA_OPENMP=libomp keeps libomp for everything.
"""
from __future__ import annotations

import ctypes
import functools
import os

from mlir import ir

from ..transforms.registry import register_pass

_CLONED_CONSTANTS = ("llvm.mlir.constant", "llvm.mlir.zero", "llvm.mlir.undef", "llvm.mlir.poison",
                     "llvm.mlir.addressof")


def host_gomp_library() -> str | None:
    """The libgomp this process has loaded (torch's), if it exports GOMP_parallel, else None
    (a compile worker: the user process's answer, codegen/host.py)."""
    from .host import fact

    return fact("gomp", _probe_gomp_library)


@functools.lru_cache(maxsize=None)
def _probe_gomp_library() -> str | None:
    if os.environ.get("LAMINA_OPENMP", "").strip().lower() == "libomp":
        return None
    try:
        import torch  # noqa: F401 - loads torch's libgomp
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libgomp" in line and "/" in line}
    except (ImportError, OSError):
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            lib.GOMP_parallel, lib.omp_get_thread_num, lib.omp_get_num_threads  # noqa: B018
        except (OSError, AttributeError):
            continue
        return path
    return None


def _last(block):
    ops = block.operations
    return ops[len(ops) - 1]


def _in_function(op, func) -> bool:
    while op is not None:
        if op.name == "llvm.func":
            return op == func
        op = op.parent
    return False


def _defining_op(v: ir.Value):
    owner = v.owner
    if isinstance(owner, ir.Block):
        return owner.owner  # the op whose region holds the block
    return owner


def _parallel_loop(par):
    """(wsloop, loop_nest, ops before the wsloop) when `par` has the shape this pass handles."""
    if len(par.regions) != 1 or len(par.regions[0].blocks) != 1 or len(par.operands) != 0:
        return None
    ops = list(par.regions[0].blocks[0].operations)
    if len(ops) < 2 or ops[-1].name != "omp.terminator" or ops[-2].name != "omp.wsloop":
        return None
    pre = ops[:-2]
    if any(o.name not in _CLONED_CONSTANTS or len(o.regions) for o in pre):
        return None
    ws = ops[-2]
    if len(ws.operands) or any(a != "operandSegmentSizes" for a in ws.attributes):
        return None
    inner = list(ws.regions[0].blocks[0].operations)
    if len(inner) != 1 or inner[0].name != "omp.loop_nest":
        return None
    nest = inner[0]
    dims = len(nest.operands) // 3
    if len(nest.operands) % 3 or any(a != "collapse_num_loops" for a in nest.attributes):
        return None
    if "collapse_num_loops" in nest.attributes and ir.IntegerAttr(nest.attributes["collapse_num_loops"]).value != dims:
        return None
    return ws, nest, pre


def _captured(par) -> list[ir.Value]:
    """Values used inside `par` but defined outside it, in first-use order (one walk that
    collects both the operands and the values defined inside)."""
    inside, used = set(), {}

    def visit(o):
        for v in o.operands:
            used.setdefault(v, None)
        inside.update(o.results)
        for region in o.regions:
            for b in region.blocks:
                inside.update(b.arguments)
        return ir.WalkResult.ADVANCE

    par.walk(visit)
    return [v for v in used if v not in inside]


def _struct(types) -> str:
    return "!llvm.struct<(" + ", ".join(str(t) for t in types) + ")>"


def _outlined_text(name: str, fields: list[ir.Type], dims: int) -> str:
    """The outlined function: load the captured values, take this thread's chunk of the
    collapsed iteration space, and loop; ^pre ends in a placeholder branch to ^latch that
    the rewrite points at the loop body. Field k*dims.. of the struct: lbs, ubs, steps."""
    st = _struct(fields)
    n = len(fields)
    lines = [f"llvm.func internal @{name}(%ctx: !llvm.ptr) attributes {{no_unwind}} {{",
             "  %one = llvm.mlir.constant(1 : i64) : i64",
             "  %zero = llvm.mlir.constant(0 : i64) : i64"]
    for i, t in enumerate(fields):
        lines.append(f"  %p{i} = llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {st}")
        lines.append(f"  %v{i} = llvm.load %p{i} : !llvm.ptr -> {t}")
    lb = [f"%v{n - 3 * dims + d}" for d in range(dims)]
    ub = [f"%v{n - 2 * dims + d}" for d in range(dims)]
    step = [f"%v{n - dims + d}" for d in range(dims)]
    lines += ["  %tid32 = llvm.call @omp_get_thread_num() : () -> i32",
              "  %nt32 = llvm.call @omp_get_num_threads() : () -> i32",
              "  %tid = llvm.sext %tid32 : i32 to i64",
              "  %nt = llvm.sext %nt32 : i32 to i64"]
    total = "%one"
    for d in range(dims):
        lines += [f"  %span{d} = llvm.sub {ub[d]}, {lb[d]} : i64",
                  f"  %sm{d} = llvm.sub {step[d]}, %one : i64",
                  f"  %sp{d} = llvm.add %span{d}, %sm{d} : i64",
                  f"  %q{d} = llvm.sdiv %sp{d}, {step[d]} : i64",
                  f"  %trip{d} = llvm.intr.smax(%q{d}, %zero) : (i64, i64) -> i64",
                  f"  %tot{d} = llvm.mul {total}, %trip{d} : i64"]
        total = f"%tot{d}"
    lines += ["  %ntm = llvm.sub %nt, %one : i64",
              f"  %tn = llvm.add {total}, %ntm : i64",
              "  %chunk = llvm.sdiv %tn, %nt : i64",
              "  %b0 = llvm.mul %tid, %chunk : i64",
              f"  %begin = llvm.intr.smin(%b0, {total}) : (i64, i64) -> i64",
              "  %e0 = llvm.add %begin, %chunk : i64",
              f"  %end = llvm.intr.smin(%e0, {total}) : (i64, i64) -> i64",
              "  llvm.br ^header(%begin : i64)",
              "^header(%k: i64):",
              "  %go = llvm.icmp \"slt\" %k, %end : i64",
              "  llvm.cond_br %go, ^pre, ^exit",
              "^pre:"]
    rest = "%k"
    for d in reversed(range(dims)):  # row-major: the last loop varies fastest
        if d:
            lines += [f"  %idx{d} = llvm.srem {rest}, %trip{d} : i64",
                      f"  %rest{d} = llvm.sdiv {rest}, %trip{d} : i64"]
            idx, rest = f"%idx{d}", f"%rest{d}"
        else:
            idx = rest
        lines += [f"  %off{d} = llvm.mul {idx}, {step[d]} : i64",
                  f"  %iv{d} = llvm.add {lb[d]}, %off{d} : i64"]
    lines += ["  llvm.br ^latch",
              "^latch:",
              "  %k1 = llvm.add %k, %one : i64",
              "  llvm.br ^header(%k1 : i64)",
              "^exit:",
              "  llvm.return",
              "}"]
    return "\n".join(lines)


_DECLARATIONS = {
    "GOMP_parallel": "llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)",
    "omp_get_thread_num": "llvm.func @omp_get_thread_num() -> i32",
    "omp_get_num_threads": "llvm.func @omp_get_num_threads() -> i32",
}


def _parse_into(module: ir.Module, text: str, with_declarations: bool = True):
    """Parse a top-level op (it may call the runtime functions) and append it to `module`."""
    decls = "\n".join(_DECLARATIONS.values()) + "\n" if with_declarations else ""
    tmp = ir.Module.parse(decls + text, context=module.context)
    op = tmp.body.operations[len(tmp.body.operations) - 1]
    op.detach_from_parent()
    module.body.append(op)
    return module.body.operations[len(module.body.operations) - 1]


def _declare(module: ir.Module) -> None:
    have = {ir.StringAttr(o.attributes["sym_name"]).value for o in module.body.operations
            if "sym_name" in o.attributes}
    for name, text in _DECLARATIONS.items():
        if name not in have:
            _parse_into(module, text, with_declarations=False)


def _create(name, operands=(), results=(), attributes=None, successors=None):
    return ir.Operation.create(name, results=list(results), operands=list(operands),
                               attributes=attributes or {}, successors=successors)


def _int(v: int, width: int):
    t = ir.IntegerType.get_signless(width)
    return _create("llvm.mlir.constant", results=[t], attributes={"value": ir.IntegerAttr.get(t, v)}).result


def _team_size(bounds: list, dims: int):
    """GOMP_parallel's num_threads: 1 when the loop has at most one iteration (a symbolic
    kernel whose size this call is below its grain: no thread is woken), else 0 (torch's
    team size)."""
    i64 = ir.IntegerType.get_signless(64)
    lbs, ubs, steps = bounds[:dims], bounds[dims:2 * dims], bounds[2 * dims:]
    one = _int(1, 64)
    total = one
    for lb, ub, step in zip(lbs, ubs, steps):
        span = _create("llvm.sub", operands=[ub, lb], results=[i64]).result
        up = _create("llvm.add", operands=[span, _create("llvm.sub", operands=[step, one], results=[i64]).result],
                     results=[i64]).result
        trip = _create("llvm.sdiv", operands=[up, step], results=[i64]).result
        total = _create("llvm.mul", operands=[total, trip], results=[i64]).result
    single = _create("llvm.icmp", operands=[total, one], results=[ir.IntegerType.get_signless(1)],
                     attributes={"predicate": ir.IntegerAttr.get(i64, 3)}).result   # sle
    return _create("llvm.select", operands=[single, _int(1, 32), _int(0, 32)],
                   results=[ir.IntegerType.get_signless(32)]).result


def _outline(module: ir.Module, func, par, ws, nest, pre, name: str) -> None:
    ptr = ir.Type.parse("!llvm.ptr")
    dims = len(nest.operands) // 3
    bounds = list(nest.operands)
    captured = _captured(par)
    passed = [v for v in captured if _defining_op(v).name not in _CLONED_CONSTANTS]
    fields = passed + bounds
    outlined = _parse_into(module, _outlined_text(name, [v.type for v in fields], dims))
    blocks = list(outlined.regions[0].blocks)
    entry, pre_block, latch = blocks[0], blocks[2], blocks[3]
    loads = [o for o in entry.operations if o.name == "llvm.load"]
    mapping = {v: loads[i].result for i, v in enumerate(passed)}

    # Constants the region uses: cloned at the top of the outlined function.
    first = entry.operations[0]
    for v in captured:
        d = _defining_op(v)
        if d.name in _CLONED_CONSTANTS and v not in mapping:
            with ir.InsertionPoint(first):
                mapping[v] = d.clone().results[0]
    # Ops of the parallel region before the wsloop (constants): once per thread.
    entry_term = _last(entry)
    for o in pre:
        o.move_before(entry_term)

    # The loop body: its blocks move over; ^pre branches to its entry with the ivs; every
    # omp.yield becomes a branch to ^latch.
    body_blocks = list(nest.regions[0].blocks)
    body_entry = body_blocks[0]
    for b in body_blocks:
        b.append_to(outlined.regions[0])
    ivs = [o.result for o in pre_block.operations if o.name == "llvm.add"][-dims:]
    # The ivs were computed innermost first (reversed dims): put them in loop order.
    ivs = list(reversed(ivs))
    placeholder = _last(pre_block)
    with ir.InsertionPoint(placeholder), placeholder.location:
        _create("llvm.br", operands=ivs, successors=[body_entry])
    placeholder.erase()
    for b in body_blocks:
        term = _last(b)
        if term.name == "omp.yield":
            with ir.InsertionPoint(term), term.location:
                _create("llvm.br", successors=[latch])
            term.erase()

    # Uses of the captured values that moved into the outlined function now read its
    # loads and clones (through the uses lists: cheaper than walking the moved body).
    for old, new in mapping.items():
        for use in list(old.uses):
            if _in_function(use.owner, outlined):
                use.owner.operands[use.operand_number] = new

    # The caller: a context struct (allocated once, in the entry block), the captured
    # values stored into it, and one GOMP_parallel call in place of omp.parallel.
    st = ir.Type.parse(_struct([v.type for v in fields]))
    fentry = func.regions[0].blocks[0]
    with ir.InsertionPoint(fentry.operations[0]), par.location:
        one = _int(1, 64)
        ctx = _create("llvm.alloca", operands=[one], results=[ptr],
                      attributes={"elem_type": ir.TypeAttr.get(st),
                                  "alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 16)}).result
    with ir.InsertionPoint(par), par.location:
        for i, v in enumerate(fields):
            p = _create("llvm.getelementptr", operands=[ctx], results=[ptr],
                        attributes={"rawConstantIndices": ir.DenseI32ArrayAttr.get([0, i]),
                                    "elem_type": ir.TypeAttr.get(st)}).result
            _create("llvm.store", operands=[v, p])
        fn = _create("llvm.mlir.addressof", results=[ptr],
                     attributes={"global_name": ir.FlatSymbolRefAttr.get(name)}).result
        zero = _int(0, 32)
        threads = _team_size(bounds, dims)
        _create("llvm.call", operands=[fn, ctx, threads, zero],
                attributes={"callee": ir.FlatSymbolRefAttr.get("GOMP_parallel"),
                            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([4, 0]),
                            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([])})
    par.erase()


def omp_to_gomp(module: ir.Module) -> int:
    """Rewrite every omp.parallel of the shape above into a GOMP_parallel call; returns how many."""
    found = []
    for func in module.body.operations:
        if func.name != "llvm.func" or not len(func.regions[0].blocks):
            continue

        def collect(o, func=func):
            if o.name == "omp.parallel":
                found.append((func, o))
                return ir.WalkResult.SKIP
            return ir.WalkResult.ADVANCE

        func.walk(collect)
    done = 0
    with module.context, ir.Location.unknown(module.context):
        for func, par in found:
            shape = _parallel_loop(par)
            if shape is None:
                continue
            if not done:
                _declare(module)
            fname = ir.StringAttr(func.attributes["sym_name"]).value
            _outline(module, func, par, *shape, name=f"{fname}_omp_{done}")
            done += 1
    return done


@register_pass("lamina-omp-to-gomp", level="L5",
               description="OpenMP parallel loops (omp dialect, after the LLVM lowering) -> outlined functions "
                           "run by GOMP_parallel on torch's libgomp thread pool")
def omp_to_gomp_pass(module: ir.Module, **options) -> None:
    omp_to_gomp(module)
