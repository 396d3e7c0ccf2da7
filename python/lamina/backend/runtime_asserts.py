"""Assertions on values the graph computes (`aten._assert_async`: F.one_hot's "Class values
must be smaller than num_classes.", torch._assert_async in user code): eager raises them, so
a compiled graph must too. The condition becomes an extra output of the graph (the kernels
compute it with the rest), and the callable checks each one after the run with eager's own
op: on the CPU it raises eager's RuntimeError with eager's message; on a GPU it is eager's
device-side assertion (asynchronous, no synchronization per call).

The check runs after the whole graph instead of at the assert's place: what the graph
returns is then never seen, as in eager; only an input the graph mutates after the
assertion would already be written."""
from __future__ import annotations

import torch

_ASSERTS = {torch.ops.aten._assert_async.msg, torch.ops.aten._assert_async.default}


def hoist_asserts(gm: torch.fx.GraphModule) -> list[str | None]:
    """Turn `gm`'s tensor assertions into extra outputs (after the graph's own), in place;
    their messages, in output order (None: _assert_async's default message)."""
    asserts = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _ASSERTS]
    output = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    results = output.args[0] if output is not None else None
    if not asserts or not isinstance(results, (tuple, list)):
        return []   # (AOTAutograd's graphs return a tuple: a bare output keeps its asserts)
    conditions, messages = [], []
    for node in asserts:
        conditions.append(node.args[0])
        messages.append(node.args[1] if len(node.args) > 1 else node.kwargs.get("assert_msg"))
        gm.graph.erase_node(node)
    output.args = (type(results)(list(results) + conditions),)
    gm.graph.lint()
    gm.recompile()
    return messages


def checking_asserts(fn, messages: list[str | None]):
    """`fn` (returning the graph's outputs and then the hoisted conditions) checking each
    condition with eager's _assert_async and returning the graph's own outputs."""
    if not messages:
        return fn
    n = len(messages)

    def checked(*args):
        outs = fn(*args)
        for cond, msg in zip(outs[-n:], messages):
            if msg is None:
                torch._assert_async(cond)
            else:
                torch._assert_async(cond, msg)
        return outs[:-n]

    checked.compiled_graph = getattr(fn, "compiled_graph", None)
    return checked
