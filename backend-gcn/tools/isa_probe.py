#!/usr/bin/env python3
"""Probes llvm-mc-19's AMDGPU disassembler to learn gfx9 opcode numbers and operand layouts.

For every encoding format and every value of its opcode field, it builds machine words whose
operand fields hold distinct, recognisable values (v32 for the destination, v64/v96/v128 for the
sources, ...), disassembles them for gfx900, gfx90a and gfx942, and maps each printed operand back
to the field that produced it. The result is written as Rust source (`src/isa/table.rs`), the one
table behind kjit's encoder, decoder and printer. Only facts (numbers, operand positions, widths)
come from LLVM; the table's shape and every line of code using it are kjit's own.

Usage: python3 backend-gcn/tools/isa_probe.py [--json out.json] [--rust backend-gcn/src/isa/table.rs]
"""
import json
import re
import subprocess
import sys
from collections import OrderedDict

TARGETS = ["gfx900", "gfx90a", "gfx942"]
LIT = 0x11223344


MARKER = 0xBF804321  # s_nop 0x4321, placed on its own line after every probe


def disassemble(probes, cpu):
    """Runs `disassemble_batch` over chunks (a long input once crashed llvm-mc-19)."""
    out = {}
    step = 128
    for base in range(0, len(probes), step):
        for k, v in disassemble_batch(probes[base:base + step], cpu).items():
            out[base + k] = v
    return out


def disassemble_batch(probes, cpu):
    """Disassembles each probe (a list of dwords); returns {probe index: (text, ndwords)} for the
    probes whose first dword starts a valid instruction. Each input line is decoded on its own; a
    marker line after every probe separates the outputs, and the disassembler's warnings (with line
    and column) tell which probes were invalid."""
    lines = []
    for words in probes:
        lines.append(",".join("0x%02x" % b for w in words for b in w.to_bytes(4, "little")))
        # three markers: junk decoded from a probe's tail may swallow one as its literal
        lines.append(",".join("0x%02x" % b for b in MARKER.to_bytes(4, "little") * 3))
    r = subprocess.run(
        ["llvm-mc-19", "-arch=amdgcn", "-mcpu=" + cpu, "--disassemble", "-show-encoding"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
    )
    bad = set()
    for m in re.finditer(r"<stdin>:(\d+):(\d+): warning: invalid instruction encoding", r.stderr):
        line, col = int(m.group(1)) - 1, int(m.group(2))
        if col == 1 and line % 2 == 0:
            bad.add(line // 2)
    groups = [[]]
    run = 0
    for line in r.stdout.splitlines() + ["; encoding: []"]:
        line = line.strip()
        if not line or line.startswith("."):
            continue
        m = re.match(r"(.*?)\s*; encoding: \[(.*)\]$", line)
        if not m:
            continue
        text = m.group(1).strip()
        if text == "s_nop 0x4321":
            run += 1
            continue
        for _ in range((run + 2) // 3):
            groups.append([])
        run = 0
        if text:
            groups[-1].append((text, len(m.group(2).split(",")) // 4))
    assert len(groups) == len(probes) + 1, (len(groups), len(probes))
    out = {}
    for i in range(len(probes)):
        if i not in bad and groups[i]:
            out[i] = groups[i][0]
    return out


# ---------------------------------------------------------------------------------------------
# Probe word builders, one per format. Each returns a list of variants (dword lists); the first
# valid variant with the most operands wins.

V_DST, V_S0, V_S1, V_S2 = 32, 64, 96, 128

# Printed start register -> operand slot, per format family.
SCALAR_MAP = {"s8": "Dst", "s16": "Src0", "s24": "Src1"}
VOP_MAP = {
    "v32": "Dst", "s32": "Dst", "a32": "Dst",
    "v64": "Src0", "a64": "Src0", "v96": "Src1", "a96": "Src1", "v128": "Src2", "a128": "Src2",
    "s4": "Src1", "s16": "Src0", "vcc": "Vcc", "0x11223344": "Literal",
}
SMEM_MAP = {"s8": "Sdata", "s16": "Sbase", "s24": "Soffset", "0x40": "Soffset"}
DS_MAP = {"v32": "Dst", "a32": "Dst", "v64": "Addr", "v96": "Data0", "a96": "Data0", "v128": "Data1", "a128": "Data1"}
BUF_MAP = {"v32": "Vdata", "a32": "Vdata", "v64": "Vaddr", "s16": "Srsrc", "s24": "Soffset"}
FLAT_MAP = {"v32": "Dst", "a32": "Dst", "v64": "Addr", "v96": "Data0", "a96": "Data0", "s16": "Saddr"}


def sop2(op):
    return [
        ([(0b10 << 30) | (op << 23) | (8 << 16) | (24 << 8) | 16, LIT], SCALAR_MAP),
        ([(0b10 << 30) | (op << 23) | (8 << 16) | (24 << 8) | 0x80, LIT], dict(SCALAR_MAP, **{"0": "Src0"})),
        ([(0b10 << 30) | (op << 23) | (8 << 16) | (0x80 << 8) | 16, LIT], dict(SCALAR_MAP, **{"0": "Src1"})),
    ]


def sopk(op):
    return [([(0b1011 << 28) | (op << 23) | (8 << 16) | 0x1234, LIT], {"s8": "Dst", "0x1234": "Simm16", "0x11223344": "Literal"})]


def sop1(op):
    return [
        ([(0x17D << 23) | (8 << 16) | (op << 8) | 16, LIT], SCALAR_MAP),
        ([(0x17D << 23) | (8 << 16) | (op << 8) | 0x80, LIT], dict(SCALAR_MAP, **{"0": "Src0"})),
    ]


def sopc(op):
    return [
        ([(0x17E << 23) | (op << 16) | (24 << 8) | 16, LIT], SCALAR_MAP),
        ([(0x17E << 23) | (op << 16) | (3 << 8) | 16, LIT], {"s16": "Src0", "3": "Src1", "0x18": "Src1"}),
        ([(0x17E << 23) | (op << 16) | (24 << 8) | 0x80, LIT], dict(SCALAR_MAP, **{"0": "Src0"})),
    ]


def sopp(op):
    return [([(0x17F << 23) | (op << 16) | 3, LIT], {}), ([(0x17F << 23) | (op << 16) | 0, LIT], {})]


def smem(op):
    base = (0b110000 << 26) | (op << 18) | (8 << 6) | (16 >> 1)
    return [
        ([base | (1 << 17), 0x40], SMEM_MAP),
        ([base, 24], SMEM_MAP),
        ([(0b110000 << 26) | (op << 18) | (8 << 6), 0], {"s8": "Sdata"}),
        ([(0b110000 << 26) | (op << 18), 0], {}),
    ]


def vop1(op):
    return [
        ([(0x3F << 25) | (V_DST << 17) | (op << 9) | (256 + V_S0), LIT], VOP_MAP),
        ([(0x3F << 25) | (V_DST << 17) | (op << 9) | 16, LIT], dict(VOP_MAP, s16="Src0")),
        ([(0x3F << 25) | (op << 9), LIT], {}),
    ]


def vop2(op):
    return [
        ([(op << 25) | (V_DST << 17) | (V_S1 << 9) | (256 + V_S0), LIT], VOP_MAP),
        ([(op << 25) | (V_DST << 17) | (V_S1 << 9) | 16, LIT], VOP_MAP),
    ]


def vopc(op):
    return [
        ([(0x3E << 25) | (op << 17) | (V_S1 << 9) | (256 + V_S0), LIT], VOP_MAP),
        ([(0x3E << 25) | (op << 17) | (V_S1 << 9) | 16, LIT], VOP_MAP),
    ]


def vop3(op):
    w0 = (0b110100 << 26) | (op << 16) | V_DST
    res = []
    for s2 in (256 + V_S2, 0):
        for s1 in (256 + V_S1, 0):
            res.append(([w0, (256 + V_S0) | (s1 << 9) | (s2 << 18), LIT], VOP_MAP))
    res.append(([w0, (256 + V_S0) | (4 << 9), LIT], VOP_MAP))  # SGPR-only src1
    res.append(([w0, 16 | (4 << 9), LIT], dict(VOP_MAP, s16="Src0")))  # SGPR-only src0
    res.append(([w0, 0, LIT], {}))
    # restriction probes: one SGPR (or constant) source at a time
    for sub in ((16, 256 + V_S1, 256 + V_S2), (256 + V_S0, 24, 256 + V_S2), (256 + V_S0, 256 + V_S1, 40),
                (256 + V_S0, 256 + V_S1, 0x81), (256 + V_S0, 0x81, 256 + V_S2), (0x81, 256 + V_S1, 256 + V_S2),
                (16, 256 + V_S1, 0), (256 + V_S0, 24, 0), (256 + V_S0, 0x81, 0), (0x81, 256 + V_S1, 0),
                (16, 0, 0), (0x81, 0, 0)):
        res.append(([w0, sub[0] | sub[1] << 9 | sub[2] << 18, LIT], dict(VOP_MAP, s24="Src1", s40="Src2")))
    return res


def vop3_mods(op):
    """The VOP3 probe again with one modifier set: abs, neg, clamp, omod, op_sel (variant order)."""
    w0 = (0b110100 << 26) | (op << 16) | V_DST
    out = []
    for extra0, extra1 in (((7 << 8), 0), (0, 7 << 29), (1 << 15, 0), (0, 1 << 27), ((15 << 11), 0)):
        for s2 in (256 + V_S2, 0):
            e0, e1 = extra0, extra1
            if s2 == 0:  # two-source forms: no src2 modifier bits
                e0 &= ~(4 << 8)
                e1 &= ~(4 << 29)
            out.append(([w0 | e0, (256 + V_S0) | ((256 + V_S1) << 9) | (s2 << 18) | e1, LIT], VOP_MAP))
            if s2 == 0:
                out.append(([w0 | (e0 & ~(2 << 8)), (256 + V_S0) | (e1 & ~(2 << 29)), LIT], VOP_MAP))
    return out


def vop3p(op):
    res = []
    for hi in (0, 1):
        for acc in (0, 1):
            w0 = (0x1A7 << 23) | (op << 16) | (hi << 14) | V_DST | (acc << 15)
            for s2 in (256 + V_S2, 0):
                res.append(([w0, (256 + V_S0) | ((256 + V_S1) << 9) | (s2 << 18) | (3 * hi << 27), LIT], VOP_MAP))
    # one-source forms with default op_sel_hi (v_accvgpr_read/write)
    w0 = (0x1A7 << 23) | (op << 16) | (1 << 14) | V_DST
    res.append(([w0, (256 + V_S0) | (3 << 27), LIT], VOP_MAP))
    return res


def vop3p_mods(op):
    """VOP3P with one modifier family set: op_sel, neg_lo, neg_hi, clamp (variant order)."""
    out = []
    for extra0, extra1 in (((7 << 11), 0), (0, 7 << 29), ((7 << 8), 0), ((1 << 15), 0)):
        w0 = (0x1A7 << 23) | (op << 16) | (1 << 14) | V_DST | extra0
        for s2 in (256 + V_S2, 0):
            out.append(([w0, (256 + V_S0) | ((256 + V_S1) << 9) | (s2 << 18) | (3 << 27) | extra1, LIT], VOP_MAP))
    return out


def ds(op):
    res = []
    for gds in (0, 1):
        w0 = (0b110110 << 26) | (op << 17) | (gds << 16) | (0x20 << 8) | 0x10
        for vdst in (V_DST, 0):
            for d1 in (V_S2, 0):
                for d0 in (V_S1, 0):
                    for addr in (V_S0, 0):
                        res.append(([w0, (vdst << 24) | (d1 << 16) | (d0 << 8) | addr], DS_MAP))
    return res


def mubuf(op):
    res = []
    for offen, idxen in ((1, 0), (0, 0), (0, 1), (1, 1)):
        for vdata in (V_DST, 0):
            w0 = (0b111000 << 26) | (op << 18) | (idxen << 13) | (offen << 12) | 16
            res.append(([w0, (24 << 24) | (4 << 16) | (vdata << 8) | V_S0], BUF_MAP))
    return res


def mtbuf(op):
    res = []
    for offen in (1, 0):
        w0 = (0b111010 << 26) | (op << 15) | (offen << 12) | 16 | (4 << 19) | (7 << 23)
        res.append(([w0, (24 << 24) | (4 << 16) | (V_DST << 8) | V_S0], BUF_MAP))
    return res


def flat(op, seg):
    res = []
    for sve in ((0, 1) if seg == 1 else (0,)):
        for saddr in (0x7F, 16, 0):
            for vdst in (V_DST, 0):
                for data in (V_S1, 0):
                    for addr in (V_S0, 0):
                        w0 = (0b110111 << 26) | (op << 18) | (seg << 14) | (sve << 13) | 16
                        res.append(([w0, (vdst << 24) | (saddr << 16) | (data << 8) | addr], FLAT_MAP))
    return res


def dpp(prefix):
    def build(op):
        w = prefix(op) | 0xFA
        return [([w, (0xF << 28) | (0xF << 24) | (0x111 << 8) | V_S0], VOP_MAP)]
    return build


def sdwa(prefix):
    def build(op):
        w = prefix(op) | 0xF9
        return [
            ([w, (6 << 24) | (6 << 16) | (6 << 8) | V_S0], VOP_MAP),
            ([w, (6 << 16) | (6 << 8) | V_S0], VOP_MAP),
        ]
    return build


def imm_probe(prefix):
    """src0 holds 0.5 (code 240), then a literal: how LLVM prints constants of this operand."""
    def build(op):
        w = prefix(op)
        return [([w | 240, LIT], VOP_MAP), ([w | 255, LIT], VOP_MAP)]
    return build


def vop3_imm(op):
    w0 = (0b110100 << 26) | (op << 16) | V_DST
    out = []
    for k in range(3):
        for n in (3, 2, 1):
            if k >= n:
                continue
            srcs = [256 + V_S0, 256 + V_S1, 256 + V_S2][:n] + [0] * (3 - n)
            srcs[k] = 240
            out.append(([w0, srcs[0] | srcs[1] << 9 | srcs[2] << 18, LIT], VOP_MAP))
    return out


VOP1_W = lambda op: (0x3F << 25) | (V_DST << 17) | (op << 9)
VOP2_W = lambda op: (op << 25) | (V_DST << 17) | (V_S1 << 9)
VOPC_W = lambda op: (0x3E << 25) | (op << 17) | (V_S1 << 9)

FORMATS = [
    # (v_accvgpr_mov_b32 = 0x52 with a constant source crashes llvm-mc-19 -show-encoding)
    ("Vop1Imm", [o for o in range(256) if o not in (0x51, 0x52)], imm_probe(VOP1_W)),
    ("Vop2Imm", range(0x3E), imm_probe(VOP2_W)),
    ("VopcImm", range(256), imm_probe(VOPC_W)),
    ("Vop3Imm", range(0x380), vop3_imm),
    ("Vop1Dpp", range(256), dpp(VOP1_W)),
    ("Vop2Dpp", range(0x3E), dpp(VOP2_W)),
    ("VopcDpp", range(256), dpp(VOPC_W)),
    ("Vop1Sdwa", range(256), sdwa(VOP1_W)),
    ("Vop2Sdwa", range(0x3E), sdwa(VOP2_W)),
    ("VopcSdwa", range(256), sdwa(VOPC_W)),
    ("Sop2", range(0x60), sop2),
    ("Sopk", range(29), sopk),
    ("Sop1", range(256), sop1),
    ("Sopc", range(128), sopc),
    ("Sopp", range(128), sopp),
    ("Smem", range(256), smem),
    ("Vop1", range(256), vop1),
    ("Vop2", range(0x3E), vop2),
    ("Vopc", range(256), vopc),
    ("Vop3", range(0x380), vop3),
    ("Vop3mods", range(0x380), vop3_mods),
    ("Vop3p", range(128), vop3p),
    ("Vop3pmods", range(128), vop3p_mods),
    ("Ds", range(256), ds),
    ("Mubuf", range(128), mubuf),
    ("Mtbuf", range(16), mtbuf),
    ("Flat", range(128), lambda op: flat(op, 0)),
    ("Scratch", range(128), lambda op: flat(op, 1)),
    ("Global", range(128), lambda op: flat(op, 2)),
]


def probe_all():
    """Returns {target: {format: {opcode: [(variant index, text, ndwords), ...]}}}."""
    result = {}
    for cpu in TARGETS:
        per = {}
        for fmt, ops, builder in FORMATS:
            probes, owners = [], []
            for op in ops:
                for vi, (words, vmap) in enumerate(builder(op)):
                    probes.append(words)
                    owners.append((op, vi, vmap))
            dis = disassemble(probes, cpu)
            table = {}
            for i, (op, vi, vmap) in enumerate(owners):
                if i in dis:
                    text, n = dis[i]
                    table.setdefault(op, []).append((vi, text, n, probes[i][:n], vmap))
            per[fmt] = table
        result[cpu] = per
    return result



# ---------------------------------------------------------------------------------------------
# Analysis: printed text -> operand slots, kinds, widths, access.

MOD_WORDS = {
    "offen", "idxen", "glc", "slc", "sc0", "sc1", "nt", "lds", "gds", "tfe", "clamp", "dlc", "lwe",
    "da", "r128", "a16", "d16", "bound_ctrl:0", "row_mirror", "row_half_mirror", "wave_shl:1",
}


def split_top(s, sep):
    out, depth, cur = [], 0, ""
    i = 0
    while i < len(s):
        c = s[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if depth == 0 and s.startswith(sep, i):
            out.append(cur)
            cur = ""
            i += len(sep)
            continue
        cur += c
        i += 1
    out.append(cur)
    return out


def is_mod(tok):
    return tok in MOD_WORDS or (":" in tok and not re.match(r"^[vsa]\[", tok)) or tok.startswith("mul:") or tok.startswith("div:")


def parse_text(text):
    """-> (mnemonic, [operand tokens], [modifier tokens], [invalid-register comments])"""
    comments = re.findall(r"/\*(.*?)\*/", text)
    text = re.sub(r"\s*/\*.*?\*/", "", text)
    parts = text.split(None, 1)
    mnem = parts[0]
    rest = parts[1].strip() if len(parts) > 1 else ""
    if not rest:
        return mnem, [], [], comments
    pieces = [p.strip() for p in split_top(rest, ", ")]
    last = split_top(pieces[-1], " ")
    last = [t for t in last if t]
    ops = pieces[:-1]
    mods = []
    if last and (len(pieces) > 1 or not is_mod(last[0])):
        ops.append(last[0])
        mods = last[1:]
    else:
        mods = last
    return mnem, ops, mods, comments


REG_RE = re.compile(r"^(-|\|)?(v|s|a|ttmp)(?:(\d+)|\[(\d+):(\d+)\])\|?$")


def parse_operand(tok):
    """-> (file, start, dwords) for registers, else (None, tok, 0)."""
    m = REG_RE.match(tok)
    if m:
        f = m.group(2)
        if m.group(3) is not None:
            return f, int(m.group(3)), 1
        lo, hi = int(m.group(4)), int(m.group(5))
        return f, lo, hi - lo + 1
    return None, tok, 0


def base_name(mnem):
    for suf in ("_e32", "_e64", "_dpp", "_sdwa"):
        if mnem.endswith(suf):
            return mnem[: -len(suf)], suf
    return mnem, ""


def camel(name):
    out = ""
    for seg in name.split("_"):
        if not seg:
            continue
        if seg[0].isdigit():
            runs = re.findall(r"\d+|[a-z]+", seg)
            s = "_"
            for j, r in enumerate(runs):
                if r == "x" and 0 < j < len(runs) - 1 and runs[j - 1].isdigit() and runs[j + 1].isdigit():
                    s += r
                else:
                    s += r[0].upper() + r[1:]
            out += s
        else:
            out += seg[0].upper() + seg[1:]
    return out


def slot_of(fmt, vmap, idx, tok, ops):
    f, start, n = parse_operand(tok)
    if f is not None:
        key = "%s%d" % (f, start)
        if fmt in ("Vop3", "Vop3mods") and f == "s" and start == 0:
            if idx == 1:
                return "Sdst", f, n
            if idx >= 3:
                return "Src2", f, n
        if key in vmap:
            return vmap[key], f, n
        return None, f, n
    if tok in vmap:
        return vmap[tok], "imm", 0
    return None, tok, 0


FAMILY = {
    "Sop2": "Sop2", "Sopk": "Sopk", "Sop1": "Sop1", "Sopc": "Sopc", "Sopp": "Sopp", "Smem": "Smem",
    "Vop1": "Vop1", "Vop2": "Vop2", "Vopc": "Vopc", "Vop3": "Vop3", "Vop3p": "Vop3p", "Ds": "Ds",
    "Mubuf": "Mubuf", "Mtbuf": "Mtbuf", "Flat": "Flat", "Scratch": "Scratch", "Global": "Global",
}


def analyze_operands(fmt, mnem, ops, vmap, comments):
    """Operand list [(slot, kind, dwords)] in print order, or None if something is unexplained."""
    out = []
    for idx, tok in enumerate(ops):
        slot, f, n = slot_of(fmt, vmap, idx, tok, ops)
        if tok == "off":
            if fmt == "Global" or (fmt == "Scratch" and idx == len(ops) - 1):
                out.append(("Saddr", "Off", 1))
            elif fmt in ("Scratch",):
                out.append(("Addr", "Off", 2))
            elif fmt in ("Mubuf", "Mtbuf"):
                out.append(("Vaddr", "Off", 1))
            else:
                return None
            continue
        if slot is None:
            if fmt == "Sopp":
                out.append(("Simm16", sopp_kind(mnem, tok), 0))
                continue
            if fmt == "Sopk" and (tok.startswith("hwreg(") or tok.isdigit()):
                out.append(("Simm16", "Hwreg" if tok.startswith("hwreg(") else "Label", 0))
                continue
            if fmt == "Sopc" and idx == 1:
                out.append(("Src1", "imm", 0))
                continue
            if fmt == "Smem" and tok.isdigit():
                out.append(("Sdata", "Imm", 0))
                continue
            if fmt in ("Vop1", "Vop2", "Vopc", "Vop3") and f in ("exec", "vcc", "m0"):
                out.append(("Src0" if idx else "Dst", "Special", 2))
                continue
            return None
        out.append((slot, f, n))
    return out


def sopp_kind(mnem, tok):
    if mnem == "s_waitcnt":
        return "Waitcnt"
    if tok.startswith("sendmsg("):
        return "Sendmsg"
    if tok.startswith("gpr_idx("):
        return "GprIdx"
    if mnem.startswith("s_branch") or mnem.startswith("s_cbranch"):
        return "Label"
    return "Imm16"


RENAMED = []


def operand_comments(text):
    """[(operand index, comment)] for operands LLVM annotated as invalid for their class."""
    comments = []

    def keep(m):
        comments.append(m.group(1))
        return "@%d@" % (len(comments) - 1)

    marked = re.sub(r"\s*/\*(.*?)\*/", keep, text)
    mnem, ops, mods, _ = parse_text(marked)
    out = []
    for i, tok in enumerate(ops):
        for m in re.finditer(r"@(\d+)@", tok):
            out.append((i, comments[int(m.group(1))]))
    return out


def analyze(res):
    """Merges the per-target probe results into instruction records keyed by CamelCase name."""
    recs = OrderedDict()
    problems = []

    def rec_for(key):
        if key not in recs:
            recs[key] = {
                "camel": key, "names": {}, "format": None, "opcode": {}, "e64": {}, "operands": None,
                "e64_operands": None, "mods": set(), "e64_mods": set(), "dpp": set(), "sdwa": set(),
                "len": 1, "comments": set(),
            }
        return recs[key]

    for cpu in TARGETS:
        for fmt in ["Sop2", "Sopk", "Sop1", "Sopc", "Sopp", "Smem", "Vop1", "Vop2", "Vopc", "Vop3",
                    "Vop3p", "Ds", "Mubuf", "Mtbuf", "Flat", "Scratch", "Global"]:
            for op, variants in res[cpu][fmt].items():
                op = int(op)
                # prefer variants without "invalid register" comments
                clean = [v for v in variants if "Invalid" not in v[1] and "only supports" not in v[1]]

                def score(v):
                    m, o, _, c = parse_text(v[1])
                    ops_ = analyze_operands(fmt, m, o, v[4], c) or []
                    return sum(1 for s in ops_ if s[1] not in ("Off",))

                cands = clean or variants
                best = max(score(v) for v in cands)
                vi, text, n, words, vmap = [v for v in cands if score(v) == best][0]
                mnem, ops, mods, comments = parse_text(text)
                base, suf = base_name(mnem)
                key = camel(base)
                opnds = analyze_operands(fmt, mnem, ops, vmap, comments)
                if cpu == "gfx942" and key not in recs:
                    # gfx940 renamed some instructions (MFMA `_Nb_` spellings): same opcode, same operands
                    for other in recs.values():
                        if other["format"] == fmt and other["opcode"].get("gfx90a") == op and "gfx942" not in other["opcode"] and other["operands"] == opnds:
                            RENAMED.append((other["names"]["gfx90a"], base))
                            key = other["camel"]
                            break
                r = rec_for(key)
                if opnds is None:
                    problems.append((cpu, fmt, op, text))
                    continue
                if fmt == "Vop3" and suf == "_e64":
                    r["e64"][cpu] = op
                    if r["e64_operands"] is None or cpu == "gfx942":
                        r["e64_operands"] = opnds
                else:
                    if r["format"] not in (None, fmt):
                        problems.append((cpu, fmt, op, "format clash with " + r["format"] + ": " + text))
                        continue
                    r["format"] = fmt
                    r["opcode"][cpu] = op
                    if suf == "_e32":
                        r["e32_suffix"] = True
                    r["names"][cpu] = base
                    r["len"] = max(r["len"], n)
                    if r["operands"] is None or cpu == "gfx942":
                        r["operands"] = opnds
                for c in comments:
                    r["comments"].add(c)
                # restrictions LLVM states as comments on invalid operands of other variants
                form = "e64" if (fmt == "Vop3" and suf == "_e64") else "native"
                for v in variants:
                    vm, vops, _, _ = parse_text(v[1])
                    if len(vops) != len(opnds):
                        continue
                    for i, c in operand_comments(v[1]):
                        r.setdefault("restrict", {}).setdefault((form, opnds[i][0]), set()).add(c)
            # modifier probes
        for mfmt in ("Vop3mods", "Vop3pmods"):
            for op, variants in res[cpu][mfmt].items():
                for vi, text, n, words, vmap in variants:
                    mnem, ops, mods, comments = parse_text(text)
                    base, suf = base_name(mnem)
                    key = camel(base)
                    if key not in recs:
                        continue
                    r = recs[key]
                    target = r["e64_mods"] if suf == "_e64" else r["mods"]
                    for idx, tok in enumerate(ops):
                        slot = slot_of("Vop3", vmap, idx, tok, ops)[0]
                        si = {"Src0": 0, "Src1": 1, "Src2": 2}.get(slot)
                        if si is None:
                            continue
                        if tok.startswith("|") or tok.startswith("-|"):
                            target.add("abs%d" % si)
                        if tok.startswith("-"):
                            target.add("neg%d" % si)
                    for m in mods:
                        if m == "clamp":
                            target.add("clamp")
                        elif m.startswith("mul:") or m.startswith("div:"):
                            target.add("omod")
                        elif m.startswith("op_sel:"):
                            # LLVM's assembler rejects op_sel on dot products it prints
                            if not mnem.startswith("v_dot"):
                                target.add("op_sel")
                        elif m.startswith("neg_lo:"):
                            target.update({"neg0", "neg1", "neg2"})
                        elif m.startswith("neg_hi:"):
                            target.add("neg_hi")
        # operand types LLVM's printer reveals: 16-bit literals, int16 inline constants
        for fmt in ("Vop1Imm", "Vop2Imm", "VopcImm", "Vop3Imm"):
            for op, variants in res[cpu][fmt].items():
                for vi, text, n, words, vmap in variants:
                    mnem, ops, mods, comments = parse_text(text)
                    base, suf = base_name(mnem)
                    key = camel(base)
                    if key not in recs:
                        continue
                    r = recs[key]
                    if "0x3344" in ops and "0x11223344" not in ops:
                        r.setdefault("types", set()).add("lit16")
                    if fmt == "Vop3Imm":
                        src = (words[1] & 0x1ff, (words[1] >> 9) & 0x1ff, (words[1] >> 18) & 0x1ff).index(240)
                    else:
                        src = 0
                    if "0x3800" in ops:
                        r.setdefault("types", set()).add("int16_%d" % src)
        for fmt, field in (("Vop1Dpp", "dpp"), ("Vop2Dpp", "dpp"), ("Vop1Sdwa", "sdwa"), ("Vop2Sdwa", "sdwa"), ("VopcSdwa", "sdwa")):
            for op, variants in res[cpu][fmt].items():
                for vi, text, n, words, vmap in variants:
                    mnem, ops, mods, comments = parse_text(text)
                    if "only supports" in text:
                        continue
                    base, suf = base_name(mnem)
                    key = camel(base)
                    if key in recs:
                        recs[key][field].add(cpu)
                        if field == "sdwa" and "dst_sel" not in text and fmt != "VopcSdwa":
                            recs[key]["sdwa_nodst"] = True
    return recs, problems



# ---------------------------------------------------------------------------------------------
# Rust emission

TIDX = {"gfx900": 0, "gfx90a": 1, "gfx942": 2}
SCALAR_FMTS = ("Sop1", "Sop2", "Sopc", "Sopk")
VOP_FMTS = ("Vop1", "Vop2", "Vopc", "Vop3", "Vop3p")
MEM_FMTS = ("Ds", "Mubuf", "Mtbuf", "Flat", "Global", "Scratch")


def is_mfma(name):
    return name.startswith("v_mfma") or name.startswith("v_smfmac")


def kind_of(fmt, slot, f, name, e64, op_index, restrict=()):
    k = base_kind_of(fmt, slot, f, name, e64, op_index)
    rs = " ".join(restrict)
    if fmt in SCALAR_FMTS and "Invalid immediate" in rs and k == "SSrc":
        return "SReg"
    if fmt in VOP_FMTS and slot in ("Src0", "Src1", "Src2"):
        if "SReg_1_XEXEC" in rs or ("Invalid immediate" in rs and f == "s"):
            return "SReg"
        if re.search(r"'(VGPR_32|VRegOrLds_32|VReg_\d+)'", rs) and not is_mfma(name):
            return "VReg"
        if name.startswith("v_smfmac") and slot == "Src2":
            return "VReg"
    return k


def base_kind_of(fmt, slot, f, name, e64, op_index):
    if slot == "Vcc":
        return "FixedVcc"
    if slot == "Literal":
        return "Lit32"
    if slot == "Simm16":
        if fmt == "Sopk":
            return {"Hwreg": "Hwreg", "Label": "Label"}.get(f, "Imm16Hex")
        return f
    if fmt in SCALAR_FMTS:
        if f == "imm":
            return "GprIdx" if name == "s_set_gpr_idx_on" else "Imm16"
        return "SReg" if slot == "Dst" else "SSrc"
    if fmt == "Smem":
        if slot == "Soffset":
            return "SmemOffset"
        if f == "Imm":
            return "Imm16"
        return "SReg"
    if fmt in VOP_FMTS:
        if slot in ("Sdst",):
            return "SReg"
        if slot == "Dst":
            if is_mfma(name):
                return "AvReg"
            return {"v": "VReg", "s": "SReg", "a": "AReg"}[f]
        # sources
        if is_mfma(name):
            return "AvSrc"
        if f == "a":
            return "AReg" if (fmt == "Vop1" and not e64) else "ASrc"
        if f == "s":
            return "SSrc"
        if slot == "Src1" and fmt in ("Vop2", "Vopc") and not e64:
            return "VReg"
        return "VSrc"
    if fmt in MEM_FMTS:
        if slot in ("Dst", "Data0", "Data1", "Vdata"):
            return "AvReg"
        if slot in ("Addr", "Vaddr"):
            return "VReg"
        if slot == "Srsrc":
            return "SReg"
        if slot == "Soffset":
            return "SSrc"
        if slot == "Saddr":
            return "SReg"
    raise ValueError((fmt, slot, f, name))


def access_of(fmt, slot, name, idx, kind):
    load = "load" in name or name.startswith("s_mem") or name.startswith("ds_read") or "swizzle" in name or "permute" in name or name.startswith("ds_consume") or name.startswith("ds_append")
    atomic = "atomic" in name or (fmt == "Ds" and not load and "write" not in name and not name.startswith("ds_gws") and name not in ("ds_nop",))
    d16 = "d16" in name
    if name == "v_swap_b32":
        return "RW"
    if slot in ("Dst", "Vdata", "Sdata"):
        if fmt in SCALAR_FMTS:
            if name.startswith("s_cmpk") or name.startswith("s_setreg") or name in ("s_cbranch_join", "s_set_gpr_idx_idx", "s_setpc_b64", "s_rfe_b64"):
                return "R"
            if name.startswith("s_cmov") or name in ("s_addk_i32", "s_mulk_i32") or name.startswith("s_bitset"):
                return "RW"
            return "W"
        if fmt in VOP_FMTS:
            if "mac" in name and not is_mfma(name) or name == "v_writelane_b32" or name.startswith("v_fma_mix") or name.startswith("v_pk_fmac"):
                return "RW"
            return "W"
        if fmt == "Smem":
            if "store" in name or name.startswith("s_atc_probe"):
                return "R"
            return "RW" if "atomic" in name else "W"
        if fmt in ("Mubuf", "Mtbuf"):
            if "store" in name:
                return "R"
            if "atomic" in name:
                return "RW"
            return "RW" if d16 else "W"
        # DS / FLAT destination
        return "RW" if d16 else "W"
    if slot == "Sdst":
        return "W"
    if slot == "Vcc":
        if fmt == "Vopc":
            return "W"
        return "W" if idx == 1 else "R"
    return "R"


def rust_operands(fmt, opnds, name, e64, restrict=None):
    if opnds is None:
        return "&[]"
    restrict = restrict or {}
    items = []
    for idx, (slot, f, n) in enumerate(opnds):
        if f == "Off":
            # the printed probe chose the "off" spelling; the slot is still a register slot
            f = "v" if slot in ("Addr", "Vaddr") else "s"
            n = 2 if slot == "Addr" and fmt == "Scratch" and False else n
        if fmt in ("Global", "Flat") and slot == "Addr":
            n = 2
        if fmt == "Scratch" and slot == "Addr":
            n = 1
        if fmt == "Global" and slot == "Saddr":
            n = 2
        if fmt == "Scratch" and slot == "Saddr":
            n = 1
        k = kind_of(fmt, slot, f, name, e64, idx, restrict.get(("e64" if e64 else "native", slot), ()))
        a = access_of(fmt, slot, name, idx, k)
        items.append("O::new(%s, %s, %d, %s)" % (slot, k, n, a))
    return "&[" + ", ".join(items) + "]"


def alt_operands(r, name):
    """The `_e64` operands of VOP1/2/C ops; the returning (glc/sc0) form of FLAT/GLOBAL atomics."""
    if r["format"] in ("Flat", "Global") and "atomic" in name and r["operands"]:
        data = [n for (slot, f, n) in r["operands"] if slot == "Data0"][0]
        width = data // 2 if "cmpswap" in name else data
        return rust_operands(r["format"], [("Dst", "v", width)] + list(r["operands"]), name, False).replace(
            "O::new(Dst, AvReg, %d, RW)" % width, "O::new(Dst, AvReg, %d, W)" % width)
    return rust_operands("Vop3", r["e64_operands"], name, True, r.get("restrict"))


MODBITS = {
    "abs0": "ABS0", "abs1": "ABS1", "abs2": "ABS2", "neg0": "NEG0", "neg1": "NEG1", "neg2": "NEG2",
    "clamp": "CLAMP", "omod": "OMOD", "op_sel": "OP_SEL", "neg_hi": "NEG_HI",
}



# ---- Timing facts (the timing model reads them from the same table) ----------------------------
# Sources (see docs/timing.md):
# - AMD's issue categories and the 4-cycle wave64 VALU cadence: rocprofiler-compute docs,
#   "Pipeline descriptions".
# - Quarter-rate transcendentals and 32-bit integer multiplies: LLVM `SISchedule.td`
#   (WriteTrans32 / WriteQuarterRate32); 16 cycles per wave64 (unconfirmed on CDNA3).
# - f64 full rate on gfx90a/gfx942 (ROCm docs mi250.md / mi300.md: 128 f64 FLOPs/CU/clk);
#   gfx900 (Vega 10) 1/16 of the f32 rate (unconfirmed).
# - MFMA cycles and VALU co-execution: AMD's Matrix Instruction Calculator
#   (ROCm/amd_matrix_instruction_calculator, `matrix_calculator.py`, fields `cycles`, `coexec`,
#   `coexec_delay`; cdna2 = gfx90a, cdna3 = gfx942).
TRANS = {"v_exp_f32", "v_log_f32", "v_rcp_f32", "v_rcp_iflag_f32", "v_rsq_f32", "v_sqrt_f32",
         "v_sin_f32", "v_cos_f32", "v_exp_legacy_f32", "v_log_legacy_f32", "v_exp_f16", "v_log_f16",
         "v_rcp_f16", "v_rsq_f16", "v_sqrt_f16", "v_sin_f16", "v_cos_f16", "v_rcp_f64", "v_rsq_f64",
         "v_sqrt_f64"}
QUARTER_INT = {"v_mul_lo_u32", "v_mul_hi_u32", "v_mul_hi_i32", "v_mad_u64_u32", "v_mad_i64_i32"}
# (cycles, valu_block) per target index 1 (gfx90a) and 2 (gfx942), from the calculator; a VALU
# op of the same SIMD may issue `valu_block` cycles after the MFMA (its co-execution delay), or
# only when the MFMA is done where the calculator says it does not co-execute.
MFMA_CYCLES = {
    # gfx90a (cdna2)
    1: {"v_mfma_f32_32x32x1f32": (64, 4), "v_mfma_f32_16x16x1f32": (32, 4), "v_mfma_f32_4x4x1f32": (8, 4),
        "v_mfma_f32_32x32x2f32": (64, 4), "v_mfma_f32_16x16x4f32": (32, 4), "v_mfma_f32_32x32x4f16": (64, 4),
        "v_mfma_f32_16x16x4f16": (32, 4), "v_mfma_f32_4x4x4f16": (8, 4), "v_mfma_f32_32x32x8f16": (64, 4),
        "v_mfma_f32_16x16x16f16": (32, 4), "v_mfma_i32_32x32x4i8": (64, 4), "v_mfma_i32_16x16x4i8": (32, 4),
        "v_mfma_i32_4x4x4i8": (8, 4), "v_mfma_i32_32x32x8i8": (64, 4), "v_mfma_i32_16x16x16i8": (32, 4),
        "v_mfma_f32_32x32x4bf16_1k": (64, 4), "v_mfma_f32_16x16x4bf16_1k": (32, 4),
        "v_mfma_f32_4x4x4bf16_1k": (8, 4), "v_mfma_f32_32x32x8bf16_1k": (64, 4),
        "v_mfma_f32_16x16x16bf16_1k": (32, 4), "v_mfma_f32_32x32x2bf16": (64, 4),
        "v_mfma_f32_16x16x2bf16": (32, 4), "v_mfma_f32_4x4x2bf16": (8, 4), "v_mfma_f32_32x32x4bf16": (64, 4),
        "v_mfma_f32_16x16x8bf16": (32, 4), "v_mfma_f64_16x16x4f64": (32, 32), "v_mfma_f64_4x4x4f64": (16, 16)},
    # gfx942 (cdna3), gfx940 spellings
    2: {"v_mfma_f32_16x16x8_xf32": (16, 4), "v_mfma_f32_32x32x4_xf32": (32, 4),
        "v_mfma_f32_32x32x1_2b_f32": (64, 64), "v_mfma_f32_16x16x1_4b_f32": (32, 32),
        "v_mfma_f32_4x4x1_16b_f32": (8, 8), "v_mfma_f32_32x32x2_f32": (64, 64), "v_mfma_f32_16x16x4_f32": (32, 32),
        "v_mfma_f32_32x32x4_2b_f16": (64, 4), "v_mfma_f32_16x16x4_4b_f16": (32, 4),
        "v_mfma_f32_4x4x4_16b_f16": (8, 4), "v_mfma_f32_32x32x8_f16": (32, 4), "v_mfma_f32_16x16x16_f16": (16, 4),
        "v_mfma_i32_32x32x4_2b_i8": (64, 4), "v_mfma_i32_16x16x4_4b_i8": (32, 4), "v_mfma_i32_4x4x4_16b_i8": (8, 4),
        "v_mfma_i32_32x32x16_i8": (32, 4), "v_mfma_i32_16x16x32_i8": (16, 4),
        "v_mfma_f32_32x32x4_2b_bf16": (64, 4), "v_mfma_f32_16x16x4_4b_bf16": (32, 4),
        "v_mfma_f32_4x4x4_16b_bf16": (8, 4), "v_mfma_f32_32x32x8_bf16": (32, 4), "v_mfma_f32_16x16x16_bf16": (16, 4),
        "v_smfmac_f32_16x16x32_f16": (16, 8), "v_smfmac_f32_32x32x16_f16": (32, 8),
        "v_smfmac_f32_16x16x32_bf16": (16, 8), "v_smfmac_f32_32x32x16_bf16": (32, 8),
        "v_smfmac_i32_16x16x64_i8": (16, 8), "v_smfmac_i32_32x32x32_i8": (32, 8),
        "v_mfma_f64_16x16x4_f64": (32, 32), "v_mfma_f64_4x4x4_4b_f64": (16, 16),
        "v_mfma_f32_16x16x32_bf8_bf8": (16, 4), "v_mfma_f32_16x16x32_bf8_fp8": (16, 4),
        "v_mfma_f32_16x16x32_fp8_bf8": (16, 4), "v_mfma_f32_16x16x32_fp8_fp8": (16, 4),
        "v_mfma_f32_32x32x16_bf8_bf8": (32, 4), "v_mfma_f32_32x32x16_bf8_fp8": (32, 4),
        "v_mfma_f32_32x32x16_fp8_bf8": (32, 4), "v_mfma_f32_32x32x16_fp8_fp8": (32, 4),
        "v_smfmac_f32_16x16x64_bf8_bf8": (16, 8), "v_smfmac_f32_16x16x64_bf8_fp8": (16, 8),
        "v_smfmac_f32_16x16x64_fp8_bf8": (16, 8), "v_smfmac_f32_16x16x64_fp8_fp8": (16, 8),
        "v_smfmac_f32_32x32x32_bf8_bf8": (32, 8), "v_smfmac_f32_32x32x32_bf8_fp8": (32, 8),
        "v_smfmac_f32_32x32x32_fp8_bf8": (32, 8), "v_smfmac_f32_32x32x32_fp8_fp8": (32, 8)},
}
# Cycles after an MFMA's last pass before a dependent instruction may read its result
# (unconfirmed; LLVM's GCNHazardRecognizer asks for about passes + 2-3 wait states).
MFMA_WRITEBACK = 4
PROGRAM_CONTROL = {"s_nop", "s_waitcnt", "s_barrier", "s_endpgm", "s_sleep", "s_setprio", "s_sethalt",
                   "s_wakeup", "s_icache_inv", "s_incperflevel", "s_decperflevel", "s_ttracedata",
                   "s_endpgm_saved", "s_endpgm_ordered_ps_done", "s_setkill", "s_sendmsg",
                   "s_sendmsghalt", "s_trap", "s_set_gpr_idx_off", "s_set_gpr_idx_mode"}


def timing_of(fmt, name, name940):
    """The timing-model facts of one opcode: `OpTiming::new(unit, busy, latency, valu_block)`,
    each array indexed by target (gfx900, gfx90a, gfx942)."""
    def t(unit, busy, lat=None, block=None):
        lat = lat or busy
        block = block or busy
        arr = lambda a: "[%s]" % ", ".join(str(x) for x in a)
        return "OpTiming::new(Unit::%s, %s, %s, %s)" % (unit, arr(busy), arr(lat), arr(block))
    if fmt in ("Sop1", "Sop2", "Sopk", "Sopc"):
        if name in ("s_setpc_b64", "s_swappc_b64", "s_getpc_b64", "s_cbranch_join"):
            return t("Branch", [1, 1, 1])
        return t("Salu", [1, 1, 1])
    if fmt == "Sopp":
        if name.startswith("s_branch") or name.startswith("s_cbranch"):
            return t("Branch", [1, 1, 1])
        return t("Internal", [1, 1, 1])
    if fmt == "Smem":
        return t("Smem", [1, 1, 1])
    if fmt == "Ds":
        return t("Lds", [4, 4, 4])
    if fmt in ("Mubuf", "Mtbuf", "Flat", "Global", "Scratch"):
        return t("Vmem", [4, 4, 4])
    # Vector ALU.
    if name.startswith("v_mfma") or name.startswith("v_smfmac"):
        c = [0, 0, 0]
        lat = [0, 0, 0]
        blk = [0, 0, 0]
        for ti, nm in ((1, name), (2, name940)):
            if nm in MFMA_CYCLES[ti]:
                cyc, b = MFMA_CYCLES[ti][nm]
                c[ti], lat[ti], blk[ti] = cyc, cyc + MFMA_WRITEBACK, b
        return t("Mfma", c, lat, blk)
    if name in TRANS:
        return t("Trans", [16, 16, 16])
    if name in QUARTER_INT:
        return t("Valu", [16, 16, 16])
    if name.endswith("_f64") or "_f64_" in name:
        return t("Valu", [64, 4, 4])
    return t("Valu", [4, 4, 4])

def emit_rust(recs, path):
    lines = []
    lines.append("//! The gfx9 opcode table: GENERATED by `backend-gcn/tools/isa_probe.py` from probes of")
    lines.append("//! `llvm-mc-19 --disassemble` (opcode numbers, operand order, widths). Do not edit by hand;")
    lines.append("//! change the generator and re-run it. See `docs/isa.md`.")
    lines.append("")
    lines.append("use super::opcodes::{Access::*, Format, Kind::*, OpInfo, OpTiming, OperandInfo as O, Slot::*, Unit, NO};")
    lines.append("use super::opcodes::flags::*;")
    lines.append("")
    keep = [r for r in recs.values() if r["format"] is not None and not r["names"].get("gfx900", "").startswith("v_interp")]
    lines.append("/// Every gfx9 instruction kjit knows, named by the CamelCase of its LLVM mnemonic")
    lines.append("/// (`v_mfma_f32_32x32x8f16` is `VMfmaF32_32x32x8F16`). Index into the opcode table.")
    lines.append("#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]")
    lines.append("#[repr(u16)]")
    lines.append("#[allow(non_camel_case_types)]")
    lines.append("pub enum Opcode {")
    for r in keep:
        nm = r["names"].get("gfx90a") or r["names"].get("gfx900") or r["names"]["gfx942"]
        lines.append("    /// `%s`" % nm)
        lines.append("    %s," % r["camel"])
    lines.append("}")
    lines.append("")
    lines.append("/// Number of opcodes in the table.")
    lines.append("pub const OPCODE_COUNT: usize = %d;" % len(keep))
    lines.append("")
    lines.append("/// The table, indexed by `Opcode as usize`.")
    lines.append("#[rustfmt::skip]")
    lines.append("pub(super) static TABLE: [OpInfo; OPCODE_COUNT] = [")
    for r in keep:
        name = r["names"].get("gfx90a") or r["names"].get("gfx900") or r["names"]["gfx942"]
        name940 = r["names"].get("gfx942", name)
        ops = ["NO"] * 3
        for cpu, o in r["opcode"].items():
            ops[TIDX[cpu]] = "0x%03x" % o
        e64 = ["NO"] * 3
        for cpu, o in r["e64"].items():
            e64[TIDX[cpu]] = "0x%03x" % o
        flags = []
        for m in sorted(r["mods"]):
            flags.append(MODBITS[m])
        for m in sorted(r["e64_mods"]):
            if m != "neg_hi":
                flags.append("E64_" + MODBITS[m])
        for cpu in sorted(r["dpp"]):
            flags.append("DPP_" + cpu.upper())
        for cpu in sorted(r["sdwa"]):
            flags.append("SDWA_" + cpu.upper())
        for t in sorted(r.get("types", ())):
            flags.append({"lit16": "LIT16", "int16_0": "INT16_0", "int16_1": "INT16_1", "int16_2": "INT16_2"}[t])
        if r.get("e32_suffix"):
            flags.append("E32_SUFFIX")
        if r.get("sdwa_nodst"):
            flags.append("SDWA_NO_DST_SEL")
        fl = " | ".join(flags) if flags else "0"
        lines.append(
            '    OpInfo::new("%s", "%s", Format::%s, [%s], [%s], %s, %s, %s, %s),'
            % (name, name940, r["format"], ", ".join(ops), ", ".join(e64),
               rust_operands(r["format"], r["operands"], name, False, r.get("restrict")),
               alt_operands(r, name), fl, timing_of(r["format"], name, name940))
        )
    lines.append("];")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", path, len(keep), "opcodes")

if __name__ == "__main__":
    if "--reprobe" in sys.argv or not __import__("os").path.exists("/tmp/isa_probe.json"):
        res = probe_all()
        with open("/tmp/isa_probe.json", "w") as f:
            json.dump(res, f, indent=1)
    else:
        res = json.load(open("/tmp/isa_probe.json"))
    recs, problems = analyze(res)
    for p in problems:
        print("PROBLEM", p)
    print(len(recs), "instructions")
    if "--rust" in sys.argv:
        emit_rust(recs, sys.argv[sys.argv.index("--rust") + 1])
    if "--dump" in sys.argv:
        for k, r in recs.items():
            print(k, r["format"], r["names"], r["opcode"], r["e64"], r["operands"], r["e64_operands"], sorted(r["mods"]), sorted(r["e64_mods"]), sorted(r["dpp"]), sorted(r["sdwa"]), r["comments"])
