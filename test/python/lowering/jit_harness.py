"""JIT harness for the lowering numerics tests: lamina funcs -> lamina-to-linalg -> LLVM -> run.

The upstream pipeline the lowered IR needs is PIPELINE, the CPU target's function-boundary
variant of passes/cpu.pipeline (lamina.codegen.cpu.function_boundary_pipeline_text():
bufferization also converts the tensor signatures of these test functions), run by
lamina.codegen.cpu.lower_to_llvm, which adds the Python step that turns strided
memref.copy into loops, so the JIT needs only the CPU target's runtime libraries (libomp).
"""
from __future__ import annotations

import ctypes

import torch
from mlir import ir
from mlir.dialects import func
from mlir.execution_engine import ExecutionEngine

from lamina.dialect import make_context
from lamina.dialect import types as T
from lamina.codegen.cpu import check_loadable, function_boundary_pipeline_text, lower_to_llvm, runtime_libraries
from lamina.lowering.to_linalg import lower_to_linalg
from lamina.runtime.memref import descriptor, descriptor_class

# One source for the pipeline and the JIT's libraries: the CPU target's function-boundary
# variant of its pipeline, and its runtime libraries.
PIPELINE = function_boundary_pipeline_text()


def shared_libs() -> list[str]:
    return check_loadable(runtime_libraries())


_DTYPE = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
          "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "i1": torch.bool}


def _from_descriptor(d, rank: int, dtype: torch.dtype) -> torch.Tensor:
    shape = [d.sizes[i] for i in range(rank)]
    strides = [d.strides[i] for i in range(rank)]
    itemsize = torch.empty((), dtype=dtype).element_size()
    n = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0
    buf = (ctypes.c_uint8 * max(n * itemsize, 1)).from_address(d.aligned + d.offset * itemsize) if n else None
    if not n:
        return torch.empty(shape, dtype=dtype)
    raw = torch.frombuffer(bytearray(bytes(buf)), dtype=torch.uint8)
    flat = raw.view(dtype)
    return torch.as_strided(flat, shape, strides).clone()


class Compiled:
    def __init__(self, engine, sigs, module_text):
        self.engine, self.sigs, self.module_text = engine, sigs, module_text
        self._keep = []

    def __call__(self, name: str, *args: torch.Tensor) -> torch.Tensor:
        rank, dtype = self.sigs[name]
        args = [a.contiguous() for a in args]
        res = descriptor_class(rank)()
        descs = [descriptor(a) for a in args]
        ptrs = [ctypes.pointer(ctypes.pointer(res))] + [ctypes.pointer(ctypes.pointer(d)) for d in descs]
        self.engine.invoke(name, *ptrs)
        return _from_descriptor(res, rank, dtype)


def compile_cases(cases) -> Compiled:
    """cases: list of (name, [arg tensor types as (shape, dtype-name)], build(*args) -> Value)."""
    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        sigs = {}
        with ir.InsertionPoint(module.body):
            for name, arg_types, build in cases:
                types = [T.tensor_type(s, e) for s, e in arg_types]
                fop = func.FuncOp(name, (types, []))
                block = fop.add_entry_block()
                with ir.InsertionPoint(block):
                    result = build(*block.arguments)
                    func.ReturnOp([result])
                fop.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(types, [result.type]))
                fop.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
                rt = ir.RankedTensorType(fop.type.results[0])
                sigs[name] = (rt.rank, _DTYPE[str(rt.element_type)])
        lower_to_linalg(module)
        module.operation.verify()
        text = str(module)
        for op in module.body.operations:
            for blk in op.regions[0].blocks:
                for inner in blk.operations:
                    assert not inner.operation.name.startswith("lamina."), inner
        lower_to_llvm(module, pipeline=PIPELINE)
        engine = ExecutionEngine(module, opt_level=2, shared_libs=shared_libs())
    c = Compiled(engine, sigs, text)
    c.ctx = ctx
    c.module = module
    return c
