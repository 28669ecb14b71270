#!/usr/bin/env bash
# Issue 20's table: Python (ModelNew) candidates judged end to end. Run on the GPU machine after
# scripts/dist.sh, with KernelBench's files in $KERNELBENCH (a checkout of
# github.com/ScalingIntelligence/KernelBench; default bench/kernelbench/upstream, which is not
# committed: `git clone --depth 1 https://github.com/ScalingIntelligence/KernelBench bench/kernelbench/upstream`):
#   bench/python_candidates.sh OUT [triton] [overhead] [examples] [level1]   (default: all four; run in the order given)
#   EXAMPLES="words" / LEVEL1="names": only those solutions (a solution name ending in a word) / problems
# 1. triton: a new Triton softmax on problems/softmax (4096 x 65536), JIT included (a fresh
#    source each run), then the same source again with its build cached.
# 2. overhead: one CUDA kernel as a kf_forward candidate (bench/python/softmax_rows.cu) and as a
#    load_inline ModelNew (tests/gpu/data/softmax_load_inline.py) on tests/gpu/problems/softmax_small;
#    the difference in medians is what the Python path costs per timed call.
# 3. examples: KernelBench's own example problems with their example solutions.
# 4. level1: ten level-1 problems with the ModelNew files of bench/kernelbench/model_new (and one
#    too large for the device path).
# KFORGE=dist/kforge by default; KFORGE_CACHE is kept so reference builds are cached.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/python_candidates.sh OUT [triton] [overhead] [examples] [level1]}
shift
parts=${*:-triton overhead examples level1}
mkdir -p "$out"
K=$(realpath "${KFORGE:-dist/kforge}")
KB=${KERNELBENCH:-bench/kernelbench/upstream}
export KFORGE_CACHE=${KFORGE_CACHE:-/tmp/kforge-cache} KFORGE_WORKER=${KFORGE_WORKER:-$(dirname "$K")/kforge-worker}
export KFORGE_DB=${KFORGE_DB:-$out/kforge.db}

# One row from an eval's JSON: status, wall, medians, speedups, build, the failed check, what ran.
row() { # json wall label
  python3 - "$@" <<'PY'
import json, sys
path, wall, label = sys.argv[1], float(sys.argv[2]), sys.argv[3]
try:
    j = json.load(open(path))
except Exception as e:
    err = ""
    try:  # a timed-out eval wrote no JSON: its last progress lines say where it was
        err = " / ".join(l.strip() for l in open(path + ".err").read().splitlines()[-3:])[:300].replace("|", "/")
    except OSError:
        pass
    print(f"| {label} | no JSON after {wall:.0f} s ({e}); last said: {err or '-'} |"); sys.exit()
t = j.get("timing") or {}
med = lambda s: f"{t[s]['median_s'] * 1e3:.3f}" if isinstance(t.get(s), dict) and "median_s" in t[s] else "-"
over = t.get("speedup_over") or {}
sp = " ".join(f"{k} {v:.2f}x" for k, v in over.items()) or "-"
b = next((b for b in j.get("builds", []) if b.get("role") == "candidate"), {})
build = f"{b.get('duration_s', 0):.1f}{' cached' if b.get('cached') else ''}"
f = j.get("failure") or {}
why = ""
if f:
    why = f"{f.get('check', '?')}"
    if f.get("case"): why += f" case={f['case']}"
    if f.get("worst"): w = f["worst"]; why += f" worst [{w.get('index')}] got {w.get('got')} expected {w.get('expected')}"
    why += ": " + (f.get("message") or "")[:160].replace("|", "/").replace("\n", " ")
k = (j.get("kernels") or {}).get("candidate") or []
ran = "; ".join(f"{x['name'][:40]}{'[' + x['library'] + ']' if x.get('library') else ''} {x['gpu_s'] * 1e6:.1f}us" for x in k[:3])
print(f"| {label} | {j.get('status')} | {wall:.1f} | {build} | {med('candidate')} | {med('reference')} | {sp} | {ran or '-'} | {why or '-'} |")
ph = j.get("phases", {})
print(f"  {label} phases:", {k: round(v, 2) for k, v in ph.items() if isinstance(v, (int, float))}, file=sys.stderr)
for name, at, took in ph.get("steps", []):  # where the seconds went, the call worker's start split
    if took >= 0.05 or name.startswith("verify: call worker load"):
        print(f"    {label} step {name}: {took:.2f} s (at {at:.2f})", file=sys.stderr)
PY
}
header() { echo "| $1 | status | wall s | build s | candidate ms | reference ms | speedups | what ran (top 3, per call) | failed check |"; echo "|---|---|---|---|---|---|---|---|---|"; }
ev() { # problem candidate label [extra args]
  local p=$1 c=$2 label=$3; shift 3
  local j="$out/$(echo "$label" | tr -c 'A-Za-z0-9_.\n-' _).json"
  local t0=$(date +%s.%N)
  timeout "${EVAL_TIMEOUT:-300}" "$K" eval "$p" "$c" --json "$@" > "$j" 2> "$j.err"
  row "$j" "$(awk "BEGIN{print $(date +%s.%N) - $t0}")" "$label"
}

part_triton() {
  echo "=== triton: a new Triton softmax on problems/softmax (4096 x 65536)"
  "$K" eval problems/softmax problems/softmax/seed.cu --time-budget 0.2 > /dev/null 2>&1 # reference and oracle builds
  # Two fresh copies (new content hashes, so new builds): the first is also this cache's first
  # Python candidate (it probes torch once for the machine); the second is a new candidate on a
  # machine that has run one before, the target's case.
  first="$out/softmax_online_first_$(date +%s).py" fresh="$out/softmax_online_$(date +%s).py"
  { cat bench/python/softmax_online.py; echo "# fresh copy $(date +%s.%N): a new content hash, so a new build"; } > "$first"
  { cat bench/python/softmax_online.py; echo "# fresh copy $(date +%s.%N)-2: a new content hash, so a new build"; } > "$fresh"
  header candidate
  ev problems/softmax "$first" "softmax_online (new: JIT; first Python build here)"
  ev problems/softmax "$fresh" "softmax_online (new: JIT)"
  ev problems/softmax "$fresh" "softmax_online (build cached)"
  ev problems/softmax problems/softmax/seed.cu "seed.cu (kf_forward)"
  "$K" eval problems/softmax "$fresh" 2>&1 | tail -12
}

part_overhead() {
  echo "=== overhead: the same kernel as kf_forward and as load_inline, tests/gpu/problems/softmax_small (512 x 4096)"
  # Timing workers that sleep between samples (0: KFORGE_HOST_SPIN_US=0), that poll (default:
  # on a machine with 4 CPUs or more; worker/command_input.hpp), and that poll with their
  # timing threads pinned to CPUs of their own (pin: KFORGE_TIMING_CPUS=$PIN_CPUS, default 3,5).
  # OVERHEAD_MODES picks (default "0 default"), OVERHEAD_RUNS how many runs each (default 2).
  for spin in ${OVERHEAD_MODES:-0 default}; do
    case $spin in
      0) echo "--- timing workers' wait between samples: sleep (KFORGE_HOST_SPIN_US=0)" ;;
      pin) echo "--- timing workers' wait between samples: poll, timing threads pinned (KFORGE_TIMING_CPUS=${PIN_CPUS:-3,5})" ;;
      *) echo "--- timing workers' wait between samples: poll (default)" ;;
    esac
    header candidate
    for i in $(seq 1 "${OVERHEAD_RUNS:-2}"); do
      if [[ $spin == 0 ]]; then export KFORGE_HOST_SPIN_US=0; else unset KFORGE_HOST_SPIN_US; fi
      if [[ $spin == pin ]]; then export KFORGE_TIMING_CPUS=${PIN_CPUS:-3,5}; else unset KFORGE_TIMING_CPUS; fi
      ev tests/gpu/problems/softmax_small bench/python/softmax_rows.cu "kf_forward spin $spin run $i" --time-budget 2
      ev tests/gpu/problems/softmax_small tests/gpu/data/softmax_load_inline.py "load_inline spin $spin run $i" --time-budget 2
    done
    unset KFORGE_HOST_SPIN_US KFORGE_TIMING_CPUS
    python3 - "$out" "$spin" <<'PY'
import json, sys, glob, statistics
out, spin = sys.argv[1], sys.argv[2]
def load(pat):
    r = []
    for p in sorted(glob.glob(f"{out}/{pat}")):
        try: r.append(json.load(open(p)))
        except Exception: pass
    return r
cu, py = load(f"kf_forward_spin_{spin}_run_*.json"), load(f"load_inline_spin_{spin}_run_*.json")
m = lambda js: [j["timing"]["candidate"]["median_s"] for j in js if j.get("timing")]
if m(cu) and m(py):
    a, b = statistics.median(m(cu)), statistics.median(m(py))
    waits = {j.get("engine", {}).get("host_spin_us") for j in cu + py}
    pins = {tuple(j.get("engine", {}).get("timing_cpus") or ()) for j in cu + py}
    spread = lambda js: "; ".join(f"{j['timing']['candidate']['min_s'] * 1e6:.1f}/{j['timing']['candidate']['p10_s'] * 1e6:.1f}/"
                                  f"{j['timing']['candidate']['p90_s'] * 1e6:.1f}" for j in js if j.get("timing"))
    print(f"  min/p10/p90 us: kf_forward {spread(cu)}; ModelNew {spread(py)}; timing_cpus {sorted(pins)}")
    print(f"spin {spin} (host_spin_us {sorted(w for w in waits if w is not None)}): kf_forward median {a * 1e6:.1f} us "
          f"(runs {', '.join(f'{x * 1e6:.1f}' for x in m(cu))}), load_inline ModelNew {b * 1e6:.1f} us "
          f"(runs {', '.join(f'{x * 1e6:.1f}' for x in m(py))}): Python path +{(b - a) * 1e6:.1f} us per call")
    for j in py[:1]:
        for k in (j.get("kernels") or {}).get("candidate", []):
            print(f"  ModelNew call kernel: {k['name'][:70]} [{k.get('library') or 'custom'}] {k['gpu_s'] * 1e6:.2f} us, {k['launches']} launches")
    for j in cu[:1]:
        for k in (j.get("kernels") or {}).get("candidate", []):
            print(f"  kf_forward call kernel: {k['name'][:70]} {k['gpu_s'] * 1e6:.2f} us, {k['launches']} launches")
PY
  done
  # Where the host time goes, step by step, outside kforge (the bridge's Python); SKIP_HOST_OVERHEAD=1 skips it.
  [[ -n ${SKIP_HOST_OVERHEAD:-} ]] && return
  timeout 300 "${KFORGE_PYTHON:-python3}" bench/python/host_overhead.py tests/gpu/data/softmax_load_inline.py
  timeout 120 "${KFORGE_PYTHON:-python3}" bench/python/host_overhead.py tests/gpu/data/softmax_triton.py
}

part_examples() {
  echo "=== examples: KernelBench's example problems and solutions ($KB, $(cat "$KB/COMMIT" 2>/dev/null | cut -c1-12))"
  P=$KB/src/kernelbench/prompts
  mkdir -p "$out/kb_examples"
  local pairs=() pair prob sol d
  for pair in model_ex_add:model_new_ex_add model_ex_add:model_new_ex_add_triton model_ex_add:model_new_ex_add_cute \
              model_ex_add:model_new_ex_add_tilelang few_shot/model_ex_fuse_gelu:few_shot/model_new_ex_fuse_gelu \
              few_shot/model_ex_tiled_matmul:few_shot/model_new_ex_tiled_matmul few_shot/model_ex_mnist2:few_shot/model_new_ex_mnist2 \
              few_shot/model_ex_flash_attn:few_shot/model_new_ex_flash_attn; do
    prob=${pair%%:*} sol=${pair##*:}
    # EXAMPLES="ex_add fuse_gelu": only the solutions whose name holds one of these words.
    if [ -n "${EXAMPLES:-}" ]; then keep=""; for w in $EXAMPLES; do [[ $sol == *"$w" ]] && keep=1; done; [ -n "$keep" ] || continue; fi
    d="$out/kb_examples/$(basename "$prob")"
    [ -d "$d" ] || "$K" import kernelbench "$P/$prob.py" --out "$d" --force > "$d.import.txt" 2>&1 || { echo "| $(basename "$prob") | import failed: $(tail -1 "$d.import.txt") |"; continue; }
    pairs+=("$pair")
  done
  # The builds first, all at once (a load_inline build is ~50 s of torch's extension build,
  # CPU-bound), verification only; then each example evaluated alone, its build cached, so that
  # nothing else shares the GPU while it is timed. The first builds' times are printed after.
  if [ -z "${EXAMPLES_SERIAL:-}" ]; then
    for pair in "${pairs[@]}"; do
      prob=${pair%%:*} sol=${pair##*:}
      timeout "${EVAL_TIMEOUT:-300}" "$K" eval "$out/kb_examples/$(basename "$prob")" "$P/$sol.py" --no-time --json \
        > "$out/kb_examples/prebuild_$(basename "$sol").json" 2>/dev/null &
    done
    wait
    for pair in "${pairs[@]}"; do
      sol=${pair##*:}
      python3 - "$out/kb_examples/prebuild_$(basename "$sol").json" "$(basename "$sol")" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"  first build of {sys.argv[2]}: no JSON ({e})"); sys.exit()
b = next((b for b in j.get("builds", []) if b.get("role") == "candidate"), {})
print(f"  first build of {sys.argv[2]} (builds in parallel): {b.get('duration_s', 0):.1f} s{' cached' if b.get('cached') else ''}, then {j.get('status')}")
PY
    done
  fi
  header "problem / solution"
  for pair in "${pairs[@]}"; do
    prob=${pair%%:*} sol=${pair##*:}
    ev "$out/kb_examples/$(basename "$prob")" "$P/$sol.py" "$(basename "$prob") / $(basename "$sol")"
  done
}

part_level1() {
  echo "=== level1: ten KernelBench level-1 problems with bench/kernelbench/model_new"
  mkdir -p "$out/kb_level1"
  header problem
  # Ten that fit the GPU-resident path on an H200 (bench/kernelbench/device_memory.py), then one
  # that does not (19_ReLU: 6 GiB a tensor, ~180 GiB of truth and sets), which goes through the
  # host and says so; LEVEL1_HUGE=1 adds the other too-large ones.
  huge=""; [ -n "${LEVEL1_HUGE:-}" ] && huge="20_LeakyReLU 21_Sigmoid 23_Softmax 26_GELU_ 36_RMSNorm_ 5_Matrix_scalar_multiplication"
  for n in 1_Square_matrix_multiplication_ 3_Batched_matrix_multiplication 12_Matmul_with_diagonal_matrices_ \
           40_LayerNorm 50_conv_standard_2D__square_input__square_kernel 88_MinGPTNewGelu 95_CrossEntropyLoss \
           98_KLDivLoss 100_HingeLoss 47_Sum_reduction_over_a_dimension 19_ReLU $huge; do
    # LEVEL1="95_CrossEntropyLoss 47_Sum_reduction_over_a_dimension": only these.
    [ -z "${LEVEL1:-}" ] || [[ " $LEVEL1 " == *" $n "* ]] || continue
    c=bench/kernelbench/model_new/$n.py
    [ -f "$c" ] || continue
    d="$out/kb_level1/$n"
    "$K" import kernelbench "$KB/KernelBench/level1/$n.py" --out "$d" --force > "$d.import.txt" 2>&1 || { echo "| $n | import failed: $(tail -1 "$d.import.txt") |"; continue; }
    ev "$d" "$c" "$n"
  done
}

# The parts in the order asked (the slow example builds can go last, after the level-1 verdicts).
for part in $parts; do
  case $part in triton|overhead|examples|level1) "part_$part" ;; *) echo "unknown part: $part (triton, overhead, examples, level1)" >&2; exit 2 ;; esac
done
