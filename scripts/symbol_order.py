#!/usr/bin/env python3
"""Writes scripts/kjit.symbol-order: the functions a compile runs, for the linker to place together.

The first compile in a fresh `kjit` process touches ~1.2 MB of functions spread over the
whole ~6 MB `.text`; every 64 KiB stretch of it is a page fault (file-backed, a few µs each on a
VM) and its pages are iTLB misses. `build.rs` links the `kjit` binary with
`--symbol-ordering-file=scripts/kjit.symbol-order` so that those functions sit next to each
other (docs/performance-log.md, c27).

This records, with callgrind, the first compile (`kjit bench --cold-child K --target T`, the
window of `kjit::cli::bench::compile_once`: building and compiling) of every library kernel on
every target, and lists the functions that ran, by mangled name: first the functions most of
the recorded compiles run (the code every compile goes through comes first, in one stretch),
ties by their summed instruction count. Nothing depends on the file being current: a name the
linker does not find is skipped silently, so a stale file only orders fewer functions.

Run after a change that renames or adds many functions on the compile path, with the binary
built as the tests build it:

    HIP_PATH=/usr cargo build --release --features hip
    python3 scripts/symbol_order.py            # about 5 minutes
    HIP_PATH=/usr cargo build --release --features hip   # relinks kjit with the new order

Needs valgrind (callgrind).
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile

TARGETS = ["gfx942", "gfx90a", "gfx900"]
WINDOW = "*bench12compile_once*"  # kjit::cli::bench::compile_once, mangled


def self_costs(path):
    """Self instruction count per function (mangled name) and object file of a callgrind file."""
    cost = collections.Counter()
    obj_of = {}
    fn = obj = None
    after_calls = False
    with open(path) as f:
        for line in f:
            if line.startswith("ob="):
                obj = line[3:].strip()
            elif line.startswith("fn="):
                fn = line[3:].strip()
                obj_of[fn] = obj
            elif line.startswith("calls="):
                # The next cost line is the call's inclusive cost, not the caller's own.
                after_calls = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_calls:
                    after_calls = False
                    continue
                parts = line.split()
                if fn is not None and len(parts) >= 2:
                    cost[fn] += int(parts[1])
    return cost, obj_of


def kernels(kjit):
    out = subprocess.run([kjit, "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def record(kjit, kernel, target, tmp):
    """The functions of `kjit` one first compile of `kernel` on `target` runs, with their cost;
    None if the kernel does not compile there (matrix kernels on gfx900)."""
    out = os.path.join(tmp, f"cg.{kernel}.{target}")
    run = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--demangle=no",
            "--compress-strings=no",
            "--compress-pos=no",
            f"--toggle-collect={WINDOW}",
            f"--callgrind-out-file={out}",
            kjit,
            "bench",
            "--cold-child",
            "--target",
            target,
            kernel,
        ],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        return None
    cost, obj_of = self_costs(out)
    own = os.path.realpath(kjit)
    return {f: c for f, c in cost.items() if c > 0 and obj_of.get(f) and os.path.realpath(obj_of[f]) == own}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kjit", default=os.path.join(root, "target/release/kjit"))
    p.add_argument("--out", default=os.path.join(root, "scripts/kjit.symbol-order"))
    args = p.parse_args()

    runs = collections.Counter()  # recordings that ran the function
    total = collections.Counter()  # summed self instructions
    recorded = 0
    with tempfile.TemporaryDirectory() as tmp:
        for k in kernels(args.kjit):
            for t in TARGETS:
                fns = record(args.kjit, k, t, tmp)
                if fns is None:
                    print(f"{k} {t}: does not compile, skipped", file=sys.stderr)
                    continue
                recorded += 1
                for f, c in fns.items():
                    runs[f] += 1
                    total[f] += c
                print(f"{k} {t}: {len(fns)} functions", file=sys.stderr)
    if recorded == 0:
        sys.exit("no compile recorded (is valgrind installed, is the binary built?)")
    # Names callgrind gives with a suffix (`'2` for recursion) or spaces are not symbols.
    names = [f for f in runs if " " not in f and "'" not in f]
    names.sort(key=lambda f: (-runs[f], -total[f], f))
    with open(args.out, "w") as f:
        f.write("\n".join(names) + "\n")
    print(f"{len(names)} functions from {recorded} compiles -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
