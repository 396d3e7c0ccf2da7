"""Random numbers in compiled graphs: a seed input drawn from torch's generator per call.

A graph with random ops (rand, randn, dropout, bernoulli, randint, ...) gets one more
placeholder, `lamina_rng_seed` (a 0-d int64 tensor); lamina's random ops are counter-based
(Philox, lowering/random.py) and read their numbers from (seed, their own counter range).
The compiled callable draws the seed at every call from torch's default generator of the
graph's device, as Inductor does, so:
  * torch.manual_seed(s) makes runs reproduce;
  * every call gets fresh numbers, and torch's generator state advances (eager ops after the
    graph see a different state than without the call, as with any random op);
  * the bits differ from eager's (a different generator), the distributions do not.
"""
from __future__ import annotations

import torch

from ..importer.random_ops import SEED_INPUT

RANDOM_OPS = {
    getattr(torch.ops.aten, name).default if overload == "default" else getattr(getattr(torch.ops.aten, name), overload)
    for name, overload in (("rand", "default"), ("rand_like", "default"), ("randn", "default"), ("randn_like", "default"),
                           ("bernoulli", "default"), ("bernoulli", "p"), ("bernoulli", "Tensor"),
                           ("native_dropout", "default"), ("randint", "default"), ("randint", "low"),
                           ("randint_like", "default"), ("randint_like", "low_dtype"), ("uniform", "default"),
                           ("normal", "Tensor_float"), ("normal", "float_Tensor"), ("normal", "Tensor_Tensor"))
}


def has_random_ops(gm: torch.fx.GraphModule) -> bool:
    return any(n.op == "call_function" and n.target in RANDOM_OPS for n in gm.graph.nodes)


def add_seed_input(gm: torch.fx.GraphModule, example_inputs, device: str):
    """gm with the seed placeholder appended (and an example seed), when it has random ops."""
    if not has_random_ops(gm):
        return gm, example_inputs, False
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    anchor = placeholders[-1] if placeholders else None
    ctx = gm.graph.inserting_after(anchor) if anchor is not None else gm.graph.inserting_before(next(iter(gm.graph.nodes)))
    example = torch.zeros((), dtype=torch.int64, device=device)
    with ctx:
        seed = gm.graph.placeholder(SEED_INPUT)
    fake_mode = next((n.meta["val"].fake_mode for n in placeholders
                      if isinstance(n.meta.get("val"), torch.Tensor) and hasattr(n.meta["val"], "fake_mode")), None)
    seed.meta["val"] = fake_mode.from_tensor(example) if fake_mode is not None else example
    gm.recompile()
    return gm, list(example_inputs) + [example], True


def seeded(fn, device: str):
    """fn(*args, seed) called as fn(*args) with a seed drawn from torch's generator."""
    dev = torch.device(device)
    low, high = -(2 ** 63), 2 ** 63 - 1

    def call(*args):
        return fn(*args, torch.randint(low, high, (), dtype=torch.int64, device=dev))

    call.compiled_graph = getattr(fn, "compiled_graph", None)
    return call
