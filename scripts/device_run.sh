#!/usr/bin/env bash
# What one call of the lent GPU runs (build here, carry dist/): the GPU tests, a
# calibration, kforge's own evaluation latency, and the GPU problems' seeds.
# Results go to $OUT (or ./device-out). Knobs: DEVICE_TORCH=1 (bridge tests, DEVICE_PARITY
# problems), DEVICE_SUITE=1 (bench/kernelbench), DEVICE_CHECK_SPEED=1 (bench/check_speed.sh; CHECK_HOST=0 skips the host path), SKIP_GPU_TESTS, SKIP_CALIBRATE, SKIP_LATENCY,
# DEVICE_DIAG=CANDIDATE:PROBLEM (one eval, with the process tree part way: DIAG_AT, DIAG_LIMIT s),
# DEVICE_PYTHON="triton overhead examples level1" (bench/python_candidates.sh, packed as py.tar.gz),
# SKIP_SANITIZE, GPU_FILTER/GPU_TIMEOUT (a gtest filter and limit for the GPU tests), DEVICE_PROBLEMS/OPTIMIZE/PROFILE/EXTRA/CHECK (see below), DEVICE_TOOL_PROBE=1
# (bench/tool_confinement/probe.sh; KFORGE_TOOL_SANDBOX=off runs the tools unconfined). Always: kforge doctor and
# bench_confine_start (what confinement is in force there, and what it costs per start).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
export KFORGE_SOURCE_DIR=$PWD KFORGE_CUOBJDUMP=$PWD/third_party/cudatools/bin/cuobjdump KFORGE_WORKER=$PWD/dist/kforge-worker KFORGE_CACHE=/tmp/kforge-cache KFORGE_DB=$OUT/kforge.db
nvidia-smi -L
echo "=== kforge doctor: the confinement layers candidate code runs under here"
dist/kforge doctor | tee "$OUT/doctor.txt"
[ -x dist/bench_confine_start ] && { echo "=== bench_confine_start 100"; dist/bench_confine_start 100 | tee "$OUT/bench_confine.txt"; }
# The GPU machine's torch lives in its own venv, not on PATH's python3.
[ -z "${KFORGE_PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ] && export KFORGE_PYTHON=/opt/torch/.venv/bin/python3
# kforge-nvrtc needs libnvrtc.so.13: found through its RUNPATH where the toolkit sits where it
# did on the build machine, else here.
if ! ldd dist/kforge-nvrtc | grep -q "libnvrtc.so.13 => /"; then
  nvrtc_dir=$(dirname "$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)")
  echo "libnvrtc.so.13 from $nvrtc_dir"
  export LD_LIBRARY_PATH=$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [ -n "${DEVICE_TOOL_PROBE:-}" ] && [ -x dist/tool_vecadd ]; then
  echo "=== what compute-sanitizer and ncu need under kforge-confine (bench/tool_confinement/probe.sh)"
  bench/tool_confinement/probe.sh dist/kforge-confine dist/tool_vecadd "$OUT" | tee "$OUT/tool_probe.txt" | grep -E " rc=|skip set"
fi
if [ -n "${DEVICE_TORCH:-}" ]; then
echo "=== torch"
dist/kforge calibrate | tail -3
"${KFORGE_PYTHON:-python3}" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available())"
echo "=== GPU tests: the PyTorch bridge"
timeout 300 dist/test_gpu --gtest_filter='gpu_torch_bridge*' 2>&1 | tee "$OUT/test_gpu_torch.log" | grep -E "^\[  |Failure|Which is|median|SKIP|skipped" | head -30
for p in ${DEVICE_PARITY:-}; do
  echo "=== parity $p: the seed timed by kforge's worker and by the bridge's timer"
  /usr/bin/time -f '%e s wall' timeout 300 dist/kforge eval problems/$p problems/$p/seed.cu --torch-parity --time-budget 2 | grep -E "parity|time  |verify"
done
fi
if [ -n "${DEVICE_CHECK_SPEED:-}" ]; then
echo "=== kforge check of KernelBench files: device path and host (bench/check_speed.sh)"
KFORGE=dist/kforge HOST=${CHECK_HOST:-1} timeout ${CHECK_TIMEOUT:-540} bench/check_speed.sh | tee "$OUT/check_speed.txt"
fi
if [ -n "${DEVICE_SUITE:-}" ]; then
echo "=== KernelBench-format suite"
KFORGE=dist/kforge /usr/bin/time -f '%e s wall' timeout ${SUITE_TIMEOUT:-540} bench/kernelbench/run.sh "$OUT/kb"
fi
if [ -n "${DEVICE_DIAG:-}" ]; then
# One Python candidate with a deadline; part way, the process tree and the build's stacks.
echo "=== diagnose: kforge eval ${DEVICE_DIAG#*:} ${DEVICE_DIAG%%:*} (limit ${DIAG_LIMIT:-100} s)"
( timeout ${DIAG_LIMIT:-100} dist/kforge eval ${DEVICE_DIAG#*:} ${DEVICE_DIAG%%:*} > "$OUT/diag_eval.txt" 2>&1; echo "rc=$?" >> "$OUT/diag_eval.txt" ) &
sleep ${DIAG_AT:-50}
ps -eo pid,ppid,etimes,stat,wchan:32,rss,args --forest | grep -vE " \[|ps -eo" | cut -c1-400 > "$OUT/diag_ps.txt"
find "$KFORGE_CACHE" -name build-stalled.txt -exec sh -c 'echo "== $1"; cat "$1"' _ {} \; >> "$OUT/diag_ps.txt" 2>&1
wait
tail -40 "$OUT/diag_eval.txt"
fi
[ -n "${SKIP_GPU_TESTS:-}" ] || {
echo "=== GPU tests"
timeout ${GPU_TIMEOUT:-420} dist/test_gpu ${GPU_FILTER:+--gtest_filter=$GPU_FILTER} 2>&1 | tee "$OUT/test_gpu.log" | grep -E "^\[  |Failure|Which is|status" | head -60
}
if [ -n "${DEVICE_PYTHON:-}" ]; then
echo "=== Python candidates (bench/python_candidates.sh $DEVICE_PYTHON)"
KFORGE=dist/kforge timeout ${PYTHON_TIMEOUT:-540} bench/python_candidates.sh "$OUT/py" $DEVICE_PYTHON 2> "$OUT/py-phases.txt" | tee "$OUT/python_candidates.txt"
tar -czf "$OUT/py.tar.gz" -C "$OUT" py py-phases.txt && rm -rf "$OUT/py"
fi
[ -n "${SKIP_CALIBRATE:-}" ] || { echo "=== calibrate"; dist/kforge calibrate; }
if [ -z "${SKIP_LATENCY:-}" ]; then
echo "=== latency: simple candidate, cold cache (reference + oracle + candidate built)"
KFORGE_CACHE=/tmp/kforge-cold /usr/bin/time -f '%e s wall' dist/kforge eval tests/gpu/problems/softmax_small problems/softmax/seed.cu --json > "$OUT/latency_cold.json"
echo "=== latency: new candidate, warm reference/oracle"
sed 's/THREADS = 256 in/THREADS = 512 in/' problems/softmax/seed.cu > /tmp/seed512.cu
/usr/bin/time -f '%e s wall' dist/kforge eval tests/gpu/problems/softmax_small /tmp/seed512.cu | tail -4
echo "=== latency: new kernel-only candidate (NVRTC), warm reference/oracle"
# Each a new source (not in the cache); the last with KFORGE_WORKER_LINGER=1 (workers waited for
# through their CUDA teardown, as before kill-on-done) to measure what that saves.
for th in 256 128 64; do
  sed "s/512/$th/g" examples/softmax_nvrtc.cu > /tmp/nvrtc$th.cu
  [ $th = 64 ] && { export KFORGE_WORKER_LINGER=1; echo "(KFORGE_WORKER_LINGER=1)"; }
  /usr/bin/time -f '%e s wall' dist/kforge eval tests/gpu/problems/softmax_small /tmp/nvrtc$th.cu --json > "$OUT/latency_nvrtc$th.json"
  unset KFORGE_WORKER_LINGER
  python3 -c "import json; j=json.load(open('$OUT/latency_nvrtc$th.json')); ph=j['phases']; print(j['status'], 'phases', {k: round(v, 3) for k, v in ph.items() if isinstance(v, float)}); print('steps', '; '.join(f'{n} {a:.2f}+{d:.2f}' for n, a, d in ph.get('steps', []))); print([(b['role'], b['toolchain'], b['cached'], round(b['duration_s'], 3)) for b in j['builds']])"
done
fi
if [ -z "${SKIP_SANITIZE:-}" ]; then
echo "=== sanitize: the softmax seed under compute-sanitizer (memcheck, racecheck, initcheck, synccheck)"
/usr/bin/time -f '%e s wall' dist/kforge eval tests/gpu/problems/softmax_small problems/softmax/seed.cu --sanitize --no-time | tail -6
fi
if [ -n "${DEVICE_OPTIMIZE:-}" ]; then
echo "=== optimize: tune the softmax seed's block size (problem softmax_small)"
/usr/bin/time -f '%e s wall' dist/kforge optimize tests/gpu/problems/softmax_small --strategy tune --trials 1 --time-budget 0.3
echo "=== optimize: a replayed branch search (problem softmax_small)"
/usr/bin/time -f '%e s wall' dist/kforge optimize tests/gpu/problems/softmax_small --llm replay:tests/gpu/data/softmax_branch.llm.jsonl \
  --ideas 2 --implementations 2 --keep 1 --rounds 2 --patience 0 --tune-budget 2 --trials 1 --time-budget 0.3
dist/kforge show run 2 | head -40
dist/kforge export 2 --out "$OUT/export-run2" && ls "$OUT/export-run2"
fi
for p in ${DEVICE_PROFILE:-}; do
  echo "=== profile $p: seed"
  /usr/bin/time -f '%e s wall' timeout 300 dist/kforge profile problems/$p problems/$p/seed.cu --raw --json > "$OUT/$p-profile.json"
  python3 -c "import json; j=json.load(open('$OUT/$p-profile.json')); print('ok', j['ok'], j['failure']); print(j['text'])"
done
for src in ${DEVICE_EXTRA:-}; do
  p=${src%%:*}; f=${src#*:}
  echo "=== problem $p: $f"
  /usr/bin/time -f '%e s wall, %M KB max RSS' timeout 400 dist/kforge eval problems/$p $f --json > "$OUT/$p-extra.json"
  python3 -c "import json; j=json.load(open('$OUT/$p-extra.json')); t=j['timing'] or {}; print(j['status'], j['message'][:200]); print('phases', j['phases']); print('timing', {k: (v['median_s'] if isinstance(v, dict) and 'median_s' in v else v) for k, v in t.items() if k not in ('roofline',)}); print('roofline', t.get('roofline'))"
done
for p in ${DEVICE_CHECK:-}; do
  echo "=== check $p (reference, seed, baselines judged)"
  timeout 300 dist/kforge check problems/$p | grep -E "^(reference|baseline|control|check|  verify|  time|           |  roofline)"
done
for p in ${DEVICE_PROBLEMS-matmul layernorm softmax}; do
  echo "=== problem $p: seed"
  /usr/bin/time -f '%e s wall, %M KB max RSS' timeout 400 dist/kforge eval problems/$p problems/$p/seed.cu --json > "$OUT/$p-seed.json"
  python3 -c "import json; j=json.load(open('$OUT/$p-seed.json')); t=j['timing'] or {}; print(j['status'], j['message'][:200]); print('phases', j['phases']); print('timing', {k: (v['median_s'] if isinstance(v, dict) and 'median_s' in v else v) for k, v in t.items() if k not in ('roofline',)}); print('roofline', t.get('roofline', {}) and {k: t['roofline'][k] for k in ('floor_s','bound','candidate_fraction','reference_fraction') if k in t['roofline']})"
done
