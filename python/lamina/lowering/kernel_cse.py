"""Work that a kernel computes twice is computed once (L3, right after lamina-to-linalg).

Lowering is op by op, so composite ops that share a sub-computation each build their own:
batch norm in training reads `reduce_mean(x)`, `var(x, correction=0)` and (for the running
variance) `var(x, correction=1)`, and each lowers to its own sum of x (and each var to its
own sum of squared deviations). lamina-cse cannot see this at L1, where they are different
ops. Upstream `cse` over the kernel bodies merges the identical linalg generics (the three
sums of x become one, the two sums of squares one), so the kernel reads its input twice
instead of five times, on every target.

CSE also merges equal destinations, which the schedules must not see shared: two
reductions accumulating in one `linalg.fill` buffer (a tiled fusion then fuses one fill
into both loops), and `tensor.empty` outputs that bufferization would have to copy to keep
apart. So afterwards every `linalg.fill` and `tensor.empty` with several users is cloned
before each further user: destinations are one per user again, as lowering built them.

The schedules' own cse merges them again, and a shared destination is then a wrong result,
not only a copy: two reductions accumulating from one fill, each stored into an output of its
own, get the first output's buffer from `eliminate-empty-tensors` (a `to_tensor restrict` of
it) for both, and one-shot bufferization, which cannot see the conflict with the memref-side
store of the first output, copies the first sums over the second before they are stored
(`a.sum(0), (a * 2).sum(0)` returned the first sums twice; InstanceNorm's weight gradient was
its bias gradient). So the lowerings unshare them once more right before that elimination
(`lamina-unshare-destinations`: codegen/cpu.py's pipeline steps, the NVVM generator's
bufferization).
"""
from __future__ import annotations

from mlir import ir
from mlir.passmanager import PassManager

from ..transforms.common import walk_ops
from ..transforms.registry import register_pass
from .kernel_abi import kernel_functions

_DESTINATIONS = ("linalg.fill", "tensor.empty")


def unshare_destinations(func_op) -> int:
    """Clone every fill / empty tensor with several users once per further user (in its
    place, so the clone dominates what the original did); returns how many clones were
    made. Fills go first: the empties their clones share are then unshared too."""
    made = 0
    for name in _DESTINATIONS:
        for op in [o for o in walk_ops(func_op.operation) if o.name == name and len(o.results)]:   # (not on memrefs)
            uses = [(u.owner, u.operand_number) for u in op.results[0].uses]
            for user, index in uses[1:]:
                user.operands[index] = op.clone(ip=ir.InsertionPoint(op)).results[0]
                made += 1
    return made


def unshare_for_bufferization(func_op) -> int:
    """Right before eliminate-empty-tensors: one destination per user, and a copy of every
    other tensor that several in-place writers or outputs start from, per further one (the
    linalg.copy is for bufferization: the Triton generator, which reads kernels before it,
    takes no copies). Returns how many clones and copies were made."""
    return unshare_destinations(func_op) + _copy_shared_chains(func_op)


def _written_in_place(user: ir.Operation, index: int) -> bool:
    """Operand `index` of `user` is a destination it writes in place (a DPS init, an
    insert's or transfer_write's destination, a loop's initial iter_arg), or a value it
    stores into an output buffer (materialize_in_destination's source)."""
    name = user.name
    if name in ("tensor.insert_slice", "vector.transfer_write"):
        return index == 1
    if name == "bufferization.materialize_in_destination":
        return index == 0
    if name == "scf.for":
        return index >= 3
    if name.startswith("linalg.") and "operandSegmentSizes" in user.attributes:
        sizes = list(ir.DenseI32ArrayAttr(user.attributes["operandSegmentSizes"]))
        return len(sizes) == 2 and index >= sizes[0]
    return False


def _copy_shared_chains(func_op) -> int:
    """A tensor that two in-place writers (or outputs) start from: `cat([x, y, z]),
    cat([x, y, w])` after cse, both inserts writing into the one [x, y] prefix. Left shared,
    eliminate-empty-tensors gives the prefix's empty root the first output's buffer (a
    `to_tensor restrict`), and one-shot bufferization, blind to the memref-side store of that
    output, wrote w in place into it and stored it as the first output (z), then copied that
    buffer into the second output: both outputs z. A copy of the tensor, made right after it
    (before either writer runs), into an empty of its own per further writer keeps the chains
    apart; each empty then becomes its output's buffer."""
    from mlir.dialects import arith, linalg, tensor

    made = 0
    for op in list(walk_ops(func_op.operation)):
        for value in op.results:
            if not isinstance(value.type, ir.RankedTensorType):
                continue
            writers = [(u.owner, u.operand_number) for u in value.uses if _written_in_place(u.owner, u.operand_number)]
            if len(writers) < 2:
                continue
            rt = ir.RankedTensorType(value.type)
            dynamic = ir.ShapedType.get_dynamic_size()
            for user, index in writers[1:]:
                with ir.InsertionPoint.after(op), op.location:
                    sizes = [tensor.dim(value, arith.constant(ir.IndexType.get(), i)) if d == dynamic else d
                             for i, d in enumerate(rt.shape)]
                    copy = linalg.copy(value, outs=[tensor.empty(sizes, rt.element_type)])
                user.operands[index] = copy
                made += 1
    return made


def merge_duplicate_work(module: ir.Module) -> None:
    """Upstream cse on every kernel function, then one destination per user."""
    kernels = kernel_functions(module)
    if not kernels:
        return
    pm = PassManager.parse("func.func(cse)", context=module.context)
    with module.context:
        for k in kernels:
            pm.run(k.operation)
            unshare_destinations(k)


@register_pass("lamina-kernel-cse", level="L3",
               description="upstream cse on kernel bodies (sums that composite ops each lowered are "
                           "computed once), then every fill / empty destination has one user again")
def kernel_cse_pass(module: ir.Module, **options) -> None:
    merge_duplicate_work(module)


@register_pass("lamina-unshare-destinations", level="L5",
               description="every linalg.fill / tensor.empty with several users is cloned once per further user, "
                           "and any other tensor several in-place writers or outputs start from is copied per "
                           "further one, so no two results start from, or bufferize into, one destination; run "
                           "right before eliminate-empty-tensors (shared, the first output's buffer was given to both)")
def unshare_destinations_pass(module: ir.Module, **options) -> None:
    unshare_for_bufferization(module)
