#!/usr/bin/env bash
# lamina's two entry points, set-up included (see README.md):
#   ./dev.sh demo   compile a GPT-style block with lamina, check it against eager, show timings and stages
#   ./dev.sh test   run every test: lit (FileCheck IR tests) and pytest (e2e numerics), then the op
#                   suites again on the cuda target (Triton's interpreter, no GPU needed)
# Uses the active virtualenv if there is one, else creates .venv/ here. Installs lamina
# (editable) with its test extras the first time, or again when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")"

if [[ -n "${VIRTUAL_ENV:-}" ]]; then
  PY="$VIRTUAL_ENV/bin/python"
else
  [[ -x .venv/bin/python ]] || python3 -m venv .venv
  PY=.venv/bin/python
fi

stamp="$("$PY" -c 'import sys; print(sys.prefix)')/.lamina-installed"
if [[ ! -f "$stamp" || pyproject.toml -nt "$stamp" || setup.py -nt "$stamp" ]]; then
  # Install torch first, pinned, so pip does not resolve `torch>=2.5` to a CUDA build
  # (on the project's CPU machines `torch==2.13.0` is a local CPU wheel).
  "$PY" -c "import torch" 2>/dev/null || "$PY" -m pip install -q "${LAMINA_TORCH_SPEC:-torch==2.13.0}"
  "$PY" -m pip install -q -e ".[test]"
  touch "$stamp"
fi

case "${1:-}" in
  demo) shift; exec "$PY" -m lamina.demo "$@" ;;
  test) shift
        # pytest runs on LAMINA_TEST_JOBS processes (pytest-xdist; default 2, CI's cores): a
        # test is mostly one thread of tracing and one compile worker's
        jobs=(-n "${LAMINA_TEST_JOBS:-2}")
        "$(dirname "$PY")/lit" -sv test
        "$PY" -m pytest -q -p no:cacheprovider "${jobs[@]}" test/python "$@"
        # the op suites again on the cuda target: its Triton programs in Triton's interpreter
        TRITON_INTERPRET=1 LAMINA_TARGET=cuda exec "$PY" -m pytest -q -p no:cacheprovider "${jobs[@]}" \
          test/python/e2e/test_ops.py test/python/e2e/test_edge_cases.py test/python/e2e/test_zero_size.py \
          test/python/e2e/test_storage_views.py test/python/e2e/test_convolution.py test/python/e2e/test_indexing.py \
          test/python/e2e/test_division_modes.py test/python/e2e/test_scatter.py test/python/e2e/test_trig.py \
          test/python/e2e/test_sorting.py test/python/e2e/test_quantization.py test/python/e2e/test_special_functions.py \
          test/python/e2e/test_linalg_library.py test/python/e2e/test_complex.py test/python/e2e/test_reduction_layouts.py \
          test/python/e2e/test_low_precision.py test/python/e2e/test_dynamic_shapes.py test/python/e2e/test_pooling.py \
          test/python/e2e/test_reshape_epilogues.py "$@" ;;
  *) echo "usage: ./dev.sh demo | ./dev.sh test" >&2; exit 2 ;;
esac
