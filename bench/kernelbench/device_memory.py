#!/usr/bin/env python3
"""What the GPU-resident path would hold on the device for each problem directory: the same
arithmetic as the judge's up-front refusal (src/worker/role_judge.cpp, `need`): the shared sets
(verification, rotations and the extra one, plus two set-sized copies) and every trial's truth
(its inputs, the reference's outputs and the float64 oracle's), trials = cases x trials_per_case.
Pair verification and the exchange of a [torch] problem add about one set more. A problem whose
need exceeds the card's free memory is evaluated through the host (much slower, and it says so).
    python3 bench/kernelbench/device_memory.py PROBLEM_DIR... [--sets 5] [--trials-per-case 2]
"""
import argparse
import math
import tomllib

SIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "u8": 1, "bool": 1, "i32": 4, "i64": 8}


def need_bytes(toml, sets, per_case):
    dtype = toml.get("dtype", "f32")
    nbytes = lambda ts, width=None: sum(math.prod(t["shape"]) * (width or SIZE[t.get("dtype", dtype)]) for t in ts)
    inputs, outputs = nbytes(toml.get("inputs", [])), nbytes(toml.get("outputs", []))
    oracle = nbytes(toml.get("outputs", []), 8)
    trials = len(toml.get("cases", [])) * toml.get("eval", {}).get("trials_per_case", per_case)
    return (sets + 2) * (inputs + outputs) + trials * (inputs + outputs + oracle), inputs + outputs, trials


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--sets", type=int, default=5)  # worker/timing.hpp device_sets
    ap.add_argument("--trials-per-case", type=int, default=2)
    a = ap.parse_args()
    rows = []
    for d in a.dirs:
        with open(f"{d}/problem.toml", "rb") as f:
            t = tomllib.load(f)
        need, one_set, trials = need_bytes(t, a.sets, a.trials_per_case)
        rows.append((need, t.get("name", d), one_set, trials))
    print("| problem | one set GiB | trials | device need GiB | fits 78 GiB (H100) | fits 139 GiB (H200) |")
    print("|---|---|---|---|---|---|")
    for need, name, one_set, trials in sorted(rows):
        g = need / 2**30
        print(f"| {name} | {one_set / 2**30:.2f} | {trials} | {g:.1f} | {'yes' if g < 78 else 'no'} | {'yes' if g < 139 else 'no'} |")


if __name__ == "__main__":
    main()
