# RUN: %PYTHON %s | FileCheck %s
# Nodes the importer cannot convert are reported (never a crash); import_graph raises
# LaminaImportError naming the ATen op and the user's source line; locations point at it.
import torch

from lamina import dialect
from lamina.importer import LaminaImportError, import_graph, unsupported_nodes
from lamina.importer.testing import aten_graph, print_imported, run


def report(gm):
    for node, reason in unsupported_nodes(gm):
        print(f"unsupported {node.name}: {reason}")


# CHECK-LABEL: unsupported_ops
# CHECK: unsupported histogram: no lamina converter for aten.histogram.bin_ct
# CHECK: unsupported getitem: getitem of an unsupported node histogram
# CHECK: unsupported getitem_1: getitem of an unsupported node histogram
# CHECK: error: aten.histogram.bin_ct (node histogram): unsupported: no lamina converter for aten.histogram.bin_ct
# CHECK-NEXT: at {{.*}}unsupported.py:[[LINE:[0-9]+]]: hist, edges = torch.histogram(x, bins=4)
@run
def unsupported_ops():
    def f(x, i):
        hist, edges = torch.histogram(x, bins=4)
        return hist, edges, x.sort(1), x.cumsum(0), i << 3, i & 3   # (sorts, scans, shifts and bitwise ops compile)
    gm = aten_graph(f, torch.randn(4, 8), torch.arange(4))
    report(gm)
    try:
        import_graph(gm, dialect.make_context())
    except LaminaImportError as e:
        print("error:", e)


# CHECK-LABEL: unsupported_dtype
# CHECK: unsupported {{.*}}: {{.*}}dtype torch.complex64, which lamina does not support
@run
def unsupported_dtype():
    report(aten_graph(lambda x: (x * 2).real, torch.randn(4, dtype=torch.complex64)))


# CHECK-LABEL: data_dependent_sizes
# A size known only after an op runs (nonzero) is refused per op; symbolic sizes are not.
# CHECK-NOT: unsupported mul
# CHECK: unsupported nonzero: no lamina converter
# CHECK: unsupported sym_size_int{{.*}}: result has a data-dependent size or value
@run
def data_dependent_sizes():
    import torch._dynamo.config as dc
    with dc.patch(capture_dynamic_output_shape_ops=True):
        report(aten_graph(lambda x: torch.nonzero(x * 2), torch.randn(4, 8), dynamic=True))


# CHECK-LABEL: empty_read
# empty() holds any value, so zeros (functionalized programs overwrite what they read:
# copy_ into it, slice_scatter); fill_ of an empty one is the filled constant
# CHECK-NOT: unsupported
# CHECK: "lamina.constant"() {value = dense<0.000000e+00> : tensor<3xf32>}
# CHECK: "lamina.constant"() {value = dense<2.000000e+00> : tensor<3xf32>}
@run
def empty_read():
    report(aten_graph(lambda x: torch.empty(3) + x, torch.randn(3)))
    print_imported(lambda x: torch.empty(3) + x, torch.randn(3), name="empty_add")
    print_imported(lambda x: torch.empty(3).fill_(2) + x, torch.randn(3), name="empty_fill")


# CHECK-LABEL: locations
# CHECK: "lamina.add"{{.*}} loc(#[[LOC:.*]])
# CHECK: #[[FILE:.*]] = loc("{{.*}}unsupported.py":[[#]]:16)
# CHECK: #[[LOC]] = loc("add"(#[[FILE]]))
@run
def locations():
    def f(x):
        return x + 1
    print_imported(f, torch.randn(2), debug_info=True)
