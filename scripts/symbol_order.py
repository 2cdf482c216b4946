#!/usr/bin/env python3
"""Writes scripts/compile-functions.ld: the functions a compile runs, for the linker to place together.

The first compile in a fresh `kjit` process touches ~1.2 MB of functions spread over the
whole ~6 MB `.text`; every 64 KiB stretch of it first touched is a page fault (file-backed, a
few µs each on a VM) and its pages are iTLB misses. `build.rs` links the `kjit` binary with
this linker script, which gathers those functions in an output section `.text.compile` before
`.text` (docs/performance-log.md, c27).

This records, with callgrind, the first compile (`kjit bench --cold-child K --target T`, the
window of `kjit::cli::bench::compile_once`: building and compiling) of every library kernel on
every target, and lists the functions that ran, one input-section pattern each: first the
functions most of the recorded compiles run (the code every compile goes through comes first,
in one stretch), ties by their summed instruction count. A function is matched by its path
without the build's hash when no other function of the binary has that path, so the script
holds across builds with other features (`cargo build` and `cargo test` give every crate a
different hash); a generic function by its path when all its instantiations are small, else
each instantiation by its exact name. Nothing
depends on the file being current: a pattern that matches nothing is no error, so a stale file
only gathers fewer functions.

Run after large changes on the compile path or of the dependencies:

    HIP_PATH=/usr cargo build --release --features hip
    python3 scripts/symbol_order.py            # about 5 minutes
    HIP_PATH=/usr cargo build --release --features hip   # relinks kjit with it

Needs valgrind (callgrind) and nm.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

TARGETS = ["gfx942", "gfx90a", "gfx900"]
WINDOW = "*bench12compile_once*"  # kjit::cli::bench::compile_once, mangled
# A generic function whose instantiations are this many bytes or fewer in all is gathered
# whole (other builds' instantiations come along); a larger one by the recorded instantiations'
# exact names. On vector_add, base objects relinked: 16 KiB gathers its functions in 38
# stretches against 41 for exact names only, and 41 against 49 in a build the names do not fit.
WHOLE_GENERIC = 16 * 1024


def self_costs(path):
    """Self instruction count per function (mangled name) of a callgrind file."""
    cost = collections.Counter()
    fn = None
    after_calls = False
    with open(path) as f:
        for line in f:
            if line.startswith("fn="):
                fn = line[3:].strip()
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
    return cost


# A legacy-mangled Rust name: the path, `17h` and the 16-digit hash, `E` (and an LLVM suffix).
HASH = re.compile(r"^(.*17h)[0-9a-f]{16}E")

HEADER = """\
/* The functions a compile runs, first those most compiles run: written by
   scripts/symbol_order.py, read by build.rs for the kjit binary. A path that names one
   function of the binary, or the instantiations of a small generic one, matches whatever
   hash a build gives it (`cargo build` and `cargo test` build the crates with different
   features, hence different hashes); an instantiation of a larger generic function is
   named exactly and matches only in the build it was recorded from. */
"""


def path_of(name):
    """The name without its hash: the function's path (generic instantiations share it)."""
    m = HASH.match(name)
    return m.group(1) if m else name


def text_symbols(binary):
    """The binary's functions and their sizes in bytes."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True)
    lines = (line.split() for line in out.stdout.splitlines())
    return {p[3]: int(p[1], 16) for p in lines if len(p) == 4 and p[2] in "tTwW"}


def kernels(kjit):
    out = subprocess.run([kjit, "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def record(kjit, own, kernel, target, tmp):
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
    cost = self_costs(out)
    # By name, not by callgrind's object: it does not count `.text.compile` as the binary's
    # (and a recursive call's `'2` suffix is no symbol).
    return {f: c for f, c in cost.items() if c > 0 and f in own}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kjit", default=os.path.join(root, "target/release/kjit"))
    p.add_argument("--out", default=os.path.join(root, "scripts/compile-functions.ld"))
    args = p.parse_args()

    own = text_symbols(args.kjit)
    runs = collections.Counter()  # recordings that ran the function
    total = collections.Counter()  # summed self instructions
    recorded = 0
    with tempfile.TemporaryDirectory() as tmp:
        for k in kernels(args.kjit):
            for t in TARGETS:
                fns = record(args.kjit, own, k, t, tmp)
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
    names = sorted(runs, key=lambda f: (-runs[f], -total[f], f))
    paths = collections.Counter(path_of(s) for s in own)
    path_bytes = collections.Counter()
    for s, size in own.items():
        path_bytes[path_of(s)] += size
    patterns = {}  # in order
    for n in names:
        path = path_of(n)
        if path == n:
            pat = n  # a C function (mimalloc): its name
        elif paths[path] == 1 or path_bytes[path] <= WHOLE_GENERIC:
            # The one function of that path, or all instantiations of a small generic one:
            # whatever hash the build gives them.
            pat = path + "*"
        else:
            pat = HASH.match(n).group(0) + "*"  # one instantiation of a generic: this build's
        patterns.setdefault(pat)
    with open(args.out, "w") as f:
        f.write(HEADER)
        f.write("SECTIONS {\n  .text.compile : {\n")
        for pat in patterns:
            f.write(f"    *(.text.{pat})\n")
        f.write("  }\n} INSERT BEFORE .text;\n")
    print(f"{len(patterns)} patterns from {recorded} compiles -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
