"""FX importer: ATen FX graphs (after AOTAutograd + core-ATen decompositions) -> lamina.

    from lamina.importer import import_graph, unsupported_nodes, is_node_supported, LaminaImportError
    unsupported_nodes(gm)            # [(node, reason)]: what the backend must run eagerly
    imported = import_graph(gm, ctx, name="graph")
    imported.module                  # ir.Module with func.func @<name> attributes {lamina.graph}
    imported.func_name, imported.input_names, imported.outputs   # outputs: [OutputSpec | None]

`LaminaOperatorSupport()` wraps is_node_supported for CapabilityBasedPartitioner.
`ImportError_` is an alias of LaminaImportError. The op table: aten_ops.CONVERTERS.
"""
from .fx_importer import (  # noqa: F401
    ImportedGraph,
    ImportError_,
    LaminaImportError,
    LaminaOperatorSupport,
    OutputSpec,
    import_graph,
    is_node_supported,
    node_location,
    source_line,
    unsupported_nodes,
)

__all__ = ["import_graph", "unsupported_nodes", "is_node_supported", "LaminaImportError", "ImportError_",
           "ImportedGraph", "OutputSpec", "LaminaOperatorSupport", "node_location", "source_line"]
