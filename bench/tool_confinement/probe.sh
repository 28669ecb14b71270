#!/usr/bin/env bash
# What compute-sanitizer and ncu need under kforge-confine: a vector add (vecadd.cu, built by
# scripts/dist.sh into dist/tool_vecadd) run under each tool inside kforge-confine with the tool
# profile, once with every layer and once per skipped layer. Prints one line per run and writes
# every run's output to <outdir>/probe_all.txt. Run on the GPU machine:
#   bench/tool_confinement/probe.sh dist/kforge-confine dist/tool_vecadd "$OUT"
set -u
CONF=$(readlink -f "$1"); VECADD=$(readlink -f "$2"); OUT=$3; HERE=$(dirname "$VECADD")
SAN=${SAN:-$(command -v compute-sanitizer || find /usr/local /opt /usr/bin -maxdepth 5 -name compute-sanitizer -type f 2>/dev/null | head -1)}
NCU=${NCU:-$(command -v ncu || find /usr/local /opt /usr/bin -maxdepth 5 -name ncu -type f 2>/dev/null | head -1)}
echo "sanitizer=$SAN ncu=$NCU"; ls -la "$SAN" "$NCU"; readlink -f "$SAN" "$NCU"
grep -i profil /proc/driver/nvidia/params 2>/dev/null; ls -la /dev/shm | head -5; ls /dev/nvidia*
"$NCU" --version | tail -1
mk_policy() { # $1 = tool, $2 = json list of layers to skip
python3 - "$1" "$2" "$HERE" <<'PY'
import json, os, sys, tempfile, glob
tool, skip, here = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
root = os.path.dirname(os.path.dirname(os.path.realpath(tool)))
reads = ["/usr","/lib","/lib32","/lib64","/bin","/sbin","/opt","/etc/ld.so.cache","/etc/ld.so.conf","/etc/ld.so.conf.d",
         "/etc/alternatives","/etc/localtime","/etc/nsswitch.conf","/etc/passwd","/etc/group","/etc/nvidia", here, root]
reads += [d for d in os.environ.get("LD_LIBRARY_PATH","").split(":") if d]
reads = [r for r in reads if os.path.exists(r)]
devs = ["/dev/null","/dev/zero","/dev/full","/dev/random","/dev/urandom"] + sorted(glob.glob("/dev/nvidia*"))
scratch = tempfile.mkdtemp(prefix="kfprobe-")
env = {"PATH": os.path.dirname(tool)+":/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}
if os.environ.get("LD_LIBRARY_PATH"): env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
print(json.dumps({"read_paths": reads, "write_paths": [], "device_paths": devs, "scratch": scratch, "env": env,
  "limits": {"memory_bytes": 8<<30, "processes": 128, "file_bytes": 4<<30, "cpu_s": 10000, "scratch_bytes": 1<<30},
  "profile": "tool", "proc_self_write": True, "require": [], "skip": skip}))
PY
}
ALL='["user_namespace","pid_namespace","network_namespace","mount_namespace","landlock_filesystem","landlock_network","landlock_scope","seccomp","no_new_privs","limits","environment"]'
variants=(
 'all|[]' 'no_limits|["limits"]' 'no_llfs|["landlock_filesystem"]' 'no_llnet|["landlock_network"]'
 'no_llscope|["landlock_scope"]' 'no_netns|["network_namespace"]' 'no_seccomp|["seccomp"]' 'no_mountns|["mount_namespace"]'
 'no_pidns|["pid_namespace"]' 'no_userns|["user_namespace"]' 'no_nnp|["no_new_privs"]'
 'net_all|["network_namespace","landlock_network","seccomp"]'
 'only_env|["user_namespace","pid_namespace","network_namespace","mount_namespace","landlock_filesystem","landlock_network","landlock_scope","seccomp","no_new_privs","limits"]'
 "none|$ALL")
# PROBE_VARIANTS="all no_llfs": only those (by name).
if [ -n "${PROBE_VARIANTS:-}" ]; then
  keep=(); for vs in "${variants[@]}"; do [[ " $PROBE_VARIANTS " == *" ${vs%%|*} "* ]] && keep+=("$vs"); done; variants=("${keep[@]}")
fi
run_one() { # tool-name tool variant skip
  local name=$1 tool=$2 v=$3 skip=$4 pol log
  pol=$(mk_policy "$tool" "$skip")
  if [ "$name" = san ]; then args=("$tool" --tool memcheck --log-file san.log "$VECADD")
  else args=("$tool" --target-processes all --metrics gpu__time_duration.sum --log-file ncu.log "$VECADD"); fi
  local t0=$(date +%s.%N)
  local o; o=$(timeout -k 2 15 "$CONF" --policy "$pol" -- /bin/sh -c '"$@"; rc=$?; echo "--- log:"; tail -n 12 san.log ncu.log 2>/dev/null; exit $rc' sh "${args[@]}" 2>&1); local rc=$?
  local t1=$(date +%s.%N)
  { echo "##### $name $v rc=$rc $(python3 -c "print(round($t1-$t0,1))") s skip=$skip"; echo "$o" | grep -v '^{"landlock_abi' | tail -n 30; } > "$OUT/probe_${name}_$v.txt"
  echo "$name $v rc=$rc"
}
# With strace beside it (scripts/dist.sh bundles the build machine's into dist/strace): the run
# with every layer again, traced from outside the sandbox, keeping the calls that were refused.
trace_all() { # tool-name tool
  local name=$1 tool=$2 pol st=$HERE/strace/strace
  [ -x "$st" ] || { echo "no $st: no trace"; return; }
  pol=$(mk_policy "$tool" '[]')
  if [ "$name" = san ]; then args=("$tool" --tool memcheck --log-file san.log "$VECADD")
  else args=("$tool" --target-processes all --metrics gpu__time_duration.sum --log-file ncu.log "$VECADD"); fi
  LD_LIBRARY_PATH=$HERE/strace/lib timeout -k 2 20 "$st" -f -Z -qq -s 96 -o "$OUT/strace_$name.raw" \
    "$CONF" --policy "$pol" -- /bin/sh -c '"$@"' sh "${args[@]}" > "$OUT/strace_${name}_out.txt" 2>&1
  echo "$name traced rc=$?"
  grep -vE "ENOENT|EAGAIN|ECHILD|ENOTTY|EINPROGRESS|ERESTART|EINTR|ETIMEDOUT|resumed>" "$OUT/strace_$name.raw" \
    | sed -E 's/^[0-9]+ +//' | sort | uniq -c | sort -rn | head -80 > "$OUT/strace_$name.txt"
  gzip -f "$OUT/strace_$name.raw"
}
trace_all san "$SAN"; trace_all ncu "$NCU"
echo "=== baselines, unconfined"
(cd /tmp && timeout 25 "$SAN" --tool memcheck "$VECADD" 2>&1 | tail -4)
(cd /tmp && timeout 25 "$NCU" --target-processes all --metrics gpu__time_duration.sum "$VECADD" 2>&1 | tail -6)
echo "=== compute-sanitizer variants (4 at a time)"
i=0
for vs in "${variants[@]}"; do v=${vs%%|*}; s=${vs#*|}; run_one san "$SAN" "$v" "$s" & i=$((i+1)); [ $((i % 4)) = 0 ] && wait; done; wait
echo "=== ncu variants"
for vs in "${variants[@]}"; do v=${vs%%|*}; s=${vs#*|}
  case $v in no_llscope|no_seccomp|no_pidns|no_nnp|no_netns) continue;; esac
  run_one ncu "$NCU" "$v" "$s"; done
cat "$OUT"/probe_*.txt > "$OUT/probe_all.txt"; rm -f "$OUT"/probe_san_* "$OUT"/probe_ncu_*
