# RUN: lamina-opt --help > %t
# RUN: %PYTHON %s %t | FileCheck %s
# Every pass of the registry (lamina.transforms, lamina.lowering, lamina.codegen) is in --help.
import sys

from lamina.transforms import registry

text = open(sys.argv[1]).read()
missing = [p.name for p in registry.all_passes() if f"--{p.name} " not in text or p.description not in text]
print(f"{len(registry.all_passes())} passes, missing: {missing}")
# CHECK: passes, missing: []
