#!/usr/bin/env bash
# lamina's cuda target on a GPU machine: the e2e tests on the GPU, then the harness.
#
# The lent GPU machines have Python 3.12, torch and triton but no MLIR and no package access:
# MLIR comes from the bundle `../shared/device/make-bundle.sh` builds into .device/ (carry it),
# lamina from this working tree (PYTHONPATH). Anyone with a GPU box and the bundle can repeat:
#   bash benchmarks/gpu.sh [OUTDIR] [harness options...]
# Results (test log, harness table and JSON, GPU description) go to OUTDIR ($OUT, else /tmp/lamina-gpu).
# The harness runs twice: with its default cuda timer, `gpu` (CUDA events around each call after
# an L2 flush, as triton.testing.do_bench: kernel time) into harness.{txt,json}, then with
# `--timer wall` (back-to-back calls closed by a synchronize: end-to-end time with the host's
# launch overhead) into harness_wall.{txt,json}; then lamina with CUDA graphs.
# Then lamina with the NVVM code generator (LAMINA_GPU_CODEGEN=nvvm: MLIR's gpu -> NVVM path for
# the kernels it maps, Triton for the rest) into harness_nvvm.{txt,json}, and its tests.
# Set SKIP_TESTS, SKIP_WALL, SKIP_CUDAGRAPHS or SKIP_NVVM (to anything) to leave that step out.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/lamina-gpu}}
shift || true
mkdir -p "$out" /tmp/site
if [[ -f .device/mlir-py312.tar.xz && ! -d /tmp/site/mlir ]]; then
  python3 -c "import tarfile; tarfile.open('.device/mlir-py312.tar.xz').extractall('/tmp/site')"
fi
export PYTHONPATH=/tmp/site:$PWD/python${PYTHONPATH:+:$PYTHONPATH}
# bytecode for lamina and the bindings, as an install writes it: a fresh tree otherwise
# compiles ~150 modules from source inside the first timed compile (0.7 s on an H100 host)
python3 -m compileall -q -j 0 python /tmp/site/mlir > /dev/null 2>&1 || true
export LAMINA_CACHE_DIR=${LAMINA_CACHE_DIR:-/tmp/lamina-cache}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)" >> "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
if [[ -z "${SKIP_TESTS:-}" ]]; then
  python3 -m pytest -q -p no:cacheprovider test/python/e2e/test_cuda_target.py > "$out/tests.txt" 2>&1
  echo "tests: $(tail -1 "$out/tests.txt")"
fi
python3 benchmarks/run.py --device cuda --json "$out/harness.json" "$@" > "$out/harness.txt" 2>&1
echo "harness rc=$?"
grep -E "^\||geomean|copy bandwidth|compile s" "$out/harness.txt"
if [[ -z "${SKIP_WALL:-}" ]]; then
  # the same rows by wall time (host launch and dispatch overhead included: what a launch-bound
  # program sees); --timer after "$@" so that it wins
  python3 benchmarks/run.py --device cuda --json "$out/harness_wall.json" "$@" --timer wall \
    > "$out/harness_wall.txt" 2>&1
  echo "wall-timer harness rc=$?"
  grep -E "^\||geomean|copy bandwidth|compile s" "$out/harness_wall.txt"
fi
if [[ -z "${SKIP_CUDAGRAPHS:-}" ]]; then
  # launch-bound graphs replayed from CUDA graphs (options={"cudagraphs": True}), lamina only
  LAMINA_CUDAGRAPHS=1 python3 benchmarks/run.py --device cuda --sizes small,large --no-inductor --timer wall \
    --json "$out/harness_cudagraphs.json" > "$out/harness_cudagraphs.txt" 2>&1
  echo "cudagraphs harness rc=$?"
  grep -E "^\||geomean" "$out/harness_cudagraphs.txt"
fi
if [[ -z "${SKIP_NVVM:-}" ]]; then
  # the second GPU code generator: same cases, lamina only (eager and the copy reference rerun)
  if [[ -z "${SKIP_TESTS:-}" ]]; then
    python3 -m pytest -q -p no:cacheprovider test/python/e2e/test_nvvm_codegen.py > "$out/tests_nvvm.txt" 2>&1
    echo "nvvm tests: $(tail -1 "$out/tests_nvvm.txt")"
  fi
  LAMINA_GPU_CODEGEN=nvvm python3 benchmarks/run.py --device cuda --json "$out/harness_nvvm.json" "$@" --no-inductor \
    > "$out/harness_nvvm.txt" 2>&1
  echo "nvvm harness rc=$?"
  grep -E "^\||geomean|copy bandwidth|compile s" "$out/harness_nvvm.txt"
fi
