//! `insert_wait_states` on hand-built allocated functions: each rule of `hazards.rs` gives the
//! exact `s_nop`s, independent instructions in between count, block boundaries are counted
//! conservatively (loops included), and targets differ where the manuals say so.

use kjit_backend_gcn::codeobj::metadata::KernelMeta;
use kjit_backend_gcn::hazards::insert_wait_states;
use kjit_backend_gcn::isa::{Encoding, Inst, Opcode, Operand, SpecialReg};
use kjit_backend_gcn::mir::{BranchCond, KernelAbi, MBlock};
use kjit_backend_gcn::phys::{PhysFunction, PhysTerminator};
use kjit_backend_gcn::Target;

use Operand as O;

fn func(target: Target, blocks: Vec<(Vec<Inst>, PhysTerminator)>) -> PhysFunction {
    PhysFunction::from_blocks(
        KernelAbi {
            target,
            meta: KernelMeta::new("t"),
            workgroup_ids: [true, false, false],
            workitem_dims: 1,
            lds_bytes: 0,
        },
        blocks,
    )
}

fn one(target: Target, insts: Vec<Inst>) -> PhysFunction {
    func(target, vec![(insts, PhysTerminator::Return)])
}

/// Mnemonics, with `s_nop N` spelled out.
fn shape(f: &PhysFunction) -> Vec<Vec<String>> {
    let t = f.abi.target;
    f.blocks
        .iter()
        .map(|b| {
            b.insts
                .iter()
                .map(|i| {
                    let s = i.display(t).to_string();
                    if i.op == Opcode::SNop {
                        s
                    } else {
                        s.split_whitespace().next().unwrap_or("").to_string()
                    }
                })
                .collect()
        })
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn readfirstlane(s: u16, v: u16) -> Inst {
    Inst::new(Opcode::VReadfirstlaneB32, &[O::s(s), O::v(v)])
}

/// `buffer_load_dword v1, v0, s[8:11], s{soff} offen`.
fn bload_soff(soff: u16) -> Inst {
    let mut i = Inst::new(
        Opcode::BufferLoadDword,
        &[O::v(1), O::v(0), O::sr(8, 4), O::s(soff)],
    );
    i.mods.offen = true;
    i
}

fn vadd(d: u16, a: u16, b: u16) -> Inst {
    Inst::new(Opcode::VAddU32, &[O::v(d), O::v(a), O::v(b)])
}

fn salu() -> Inst {
    Inst::new(Opcode::SAddU32, &[O::s(20), O::s(21), O::InlineInt(1)])
}

#[test]
fn valu_sgpr_write_then_vmem_read_needs_5_wait_states() {
    for t in kjit_backend_gcn::target::ALL_TARGETS {
        let mut f = one(t, vec![readfirstlane(4, 2), bload_soff(4)]);
        assert_eq!(insert_wait_states(&mut f), 5, "{t}");
        assert_eq!(
            shape(&f)[0],
            strs(&["v_readfirstlane_b32", "s_nop 4", "buffer_load_dword"])
        );
    }
}

#[test]
fn independent_instructions_count_as_wait_states() {
    assert_padded(
        Target::Gfx90a,
        vec![readfirstlane(4, 2), vadd(5, 6, 7), salu(), bload_soff(4)],
        3,
        &[
            "v_readfirstlane_b32",
            "v_add_u32_e32",
            "s_add_u32",
            "s_nop 2",
            "buffer_load_dword",
        ],
    );
    // Existing s_nops count too.
    let mut f = one(
        Target::Gfx90a,
        vec![
            readfirstlane(4, 2),
            Inst::new(Opcode::SNop, &[O::Imm(4)]),
            bload_soff(4),
        ],
    );
    assert_eq!(insert_wait_states(&mut f), 0);
    // An unrelated register needs nothing.
    let mut f = one(Target::Gfx90a, vec![readfirstlane(4, 2), bload_soff(5)]);
    assert_eq!(insert_wait_states(&mut f), 0);
}

#[test]
fn valu_vcc_write_then_div_fmas_needs_4() {
    let cmp = Inst::new(
        Opcode::VCmpLtU32,
        &[O::Special(SpecialReg::Vcc), O::v(1), O::v(2)],
    );
    let fmas = Inst::new(Opcode::VDivFmasF32, &[O::v(3), O::v(4), O::v(5), O::v(6)]);
    let mut f = one(Target::Gfx900, vec![cmp, fmas]);
    assert_eq!(insert_wait_states(&mut f), 4);
}

#[test]
fn readlane_lane_select_after_valu_sgpr_write_needs_4() {
    let rl = Inst::new(Opcode::VReadlaneB32, &[O::s(5), O::v(1), O::s(4)]);
    let mut f = one(Target::Gfx900, vec![readfirstlane(4, 2), rl.clone()]);
    assert_eq!(insert_wait_states(&mut f), 4);
    // The vector source of v_readlane is not a lane select.
    let rl2 = Inst::new(Opcode::VReadlaneB32, &[O::s(5), O::v(1), O::s(9)]);
    let mut f = one(Target::Gfx900, vec![readfirstlane(4, 2), rl2]);
    assert_eq!(insert_wait_states(&mut f), 0);
}

#[test]
fn gfx942_forwards_valu_sgpr_results_to_valu_late() {
    let cmp =
        Inst::new(Opcode::VCmpLtU32, &[O::sr(4, 2), O::v(1), O::v(2)]).with_encoding(Encoding::E64);
    let sel = Inst::new(
        Opcode::VCndmaskB32,
        &[O::v(3), O::v(4), O::v(5), O::sr(4, 2)],
    )
    .with_encoding(Encoding::E64);
    let mut f = one(Target::Gfx942, vec![cmp.clone(), sel.clone()]);
    assert_eq!(insert_wait_states(&mut f), 2);
    let mut f = one(Target::Gfx90a, vec![cmp, sel]);
    assert_eq!(insert_wait_states(&mut f), 0);
}

#[test]
fn dpp_after_valu_write_of_its_source_needs_2() {
    let mut dpp = Inst::new(Opcode::VMovB32, &[O::v(2), O::v(1)]).with_encoding(Encoding::Dpp);
    dpp.mods.dpp.ctrl = 0x111; // row_shr:1
    dpp.mods.dpp.row_mask = 0xf;
    dpp.mods.dpp.bank_mask = 0xf;
    let mut f = one(Target::Gfx942, vec![vadd(1, 3, 4), dpp.clone()]);
    assert_eq!(insert_wait_states(&mut f), 2);
    let mut f = one(Target::Gfx942, vec![vadd(7, 3, 4), dpp]);
    assert_eq!(insert_wait_states(&mut f), 0);
}

#[test]
fn hazard_across_a_block_boundary_and_a_loop_back_edge() {
    let b = MBlock::from_u32;
    let mut f = func(
        Target::Gfx942,
        vec![
            (vec![salu()], PhysTerminator::Jump(b(1))),
            // The loop body reads s4 at the top and writes it by VALU at the bottom.
            (
                vec![bload_soff(4), vadd(5, 6, 7), readfirstlane(4, 2)],
                PhysTerminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: b(1),
                    not_taken: b(2),
                },
            ),
            (vec![], PhysTerminator::Return),
        ],
    );
    assert_eq!(insert_wait_states(&mut f), 5);
    assert_eq!(
        shape(&f)[1],
        strs(&[
            "s_nop 4",
            "buffer_load_dword",
            "v_add_u32_e32",
            "v_readfirstlane_b32"
        ])
    );
}

#[test]
fn mfma_result_read_by_accvgpr_read_waits_by_pass_count() {
    let mfma = |dst: u16| {
        Inst::new(
            Opcode::VMfmaF32_32x32x1F32,
            &[O::ar(dst, 32), O::v(0), O::v(1), O::ar(dst, 32)],
        )
    };
    let read = Inst::new(Opcode::VAccvgprReadB32, &[O::v(2), O::a(5)]);
    for t in [Target::Gfx90a, Target::Gfx942] {
        let mut f = one(t, vec![mfma(0), read.clone()]);
        // 32x32x1f32: 16 passes; 19 wait states (gfx90a: P + 3), 18 on gfx942 where f32-input
        // MFMAs are not XDL (P + 2).
        let (n, last) = if t == Target::Gfx942 {
            (18, "s_nop 1")
        } else {
            (19, "s_nop 2")
        };
        assert_eq!(insert_wait_states(&mut f), n, "{t}");
        assert_eq!(
            shape(&f)[0],
            strs(&[
                "v_mfma_f32_32x32x1f32",
                "s_nop 7",
                "s_nop 7",
                last,
                "v_accvgpr_read_b32"
            ])
            .into_iter()
            .map(|s| if t == Target::Gfx942 {
                s.replace("32x32x1f32", "32x32x1_2b_f32")
            } else {
                s
            })
            .collect::<Vec<_>>()
        );
        // Back-to-back accumulation into the same registers needs nothing.
        let mut f = one(t, vec![mfma(0), mfma(0)]);
        assert_eq!(insert_wait_states(&mut f), 0, "{t}");
    }
}

/// `v_mfma_f32_4x4x4f16 dst, v[0:1], v[2:3], srcc` (2 passes on both targets, XDL).
fn mfma4(dst: Operand, srcc: Operand) -> Inst {
    Inst::new(
        Opcode::VMfmaF32_4x4x4F16,
        &[dst, O::vr(0, 2), O::vr(2, 2), srcc],
    )
}

/// `v_mfma_f32_32x32x8f16 dst, v[0:1], v[2:3], srcc` (gfx90a 16 passes, gfx942 8).
fn mfma32(dst: Operand, srcc: Operand) -> Inst {
    Inst::new(
        Opcode::VMfmaF32_32x32x8F16,
        &[dst, O::vr(0, 2), O::vr(2, 2), srcc],
    )
}

/// Wait states inserted between the instructions of `insts` on `t`.
fn waits(t: Target, insts: Vec<Inst>) -> u32 {
    insert_wait_states(&mut one(t, insts))
}

/// Each MFMA rule of `mfma_hazards`, on both targets, with LLVM 19's numbers.
#[test]
fn mfma_rules_by_pair_and_target() {
    let (a, c) = (Target::Gfx90a, Target::Gfx942);
    let both = |insts: Vec<Inst>| (waits(a, insts.clone()), waits(c, insts));
    // SrcC, the same registers: gfx942 2 (2 passes), gfx90a 0.
    assert_eq!(
        both(vec![
            mfma4(O::vr(8, 4), O::vr(12, 4)),
            mfma4(O::vr(8, 4), O::vr(8, 4))
        ]),
        (0, 2)
    );
    // SrcC, overlapping registers: gfx90a P = 2, gfx942 XDL P + 1 = 3.
    assert_eq!(
        both(vec![
            mfma4(O::vr(8, 4), O::vr(12, 4)),
            mfma4(O::vr(16, 4), O::vr(10, 4))
        ]),
        (2, 3)
    );
    // 32x32x8f16 into an overlapping SrcC: gfx90a 16, gfx942 9.
    assert_eq!(
        both(vec![
            mfma32(O::ar(0, 16), O::ar(16, 16)),
            mfma32(O::ar(32, 16), O::ar(8, 16))
        ]),
        (16, 9)
    );
    // SrcA/B: P + 3.
    let ab = Inst::new(
        Opcode::VMfmaF32_4x4x4F16,
        &[O::vr(20, 4), O::vr(8, 2), O::vr(2, 2), O::vr(12, 4)],
    );
    assert_eq!(both(vec![mfma4(O::vr(8, 4), O::vr(12, 4)), ab]), (5, 5));
    // A VALU reading the result: gfx90a 19, gfx942 11 (32x32x8f16).
    let read = Inst::new(Opcode::VAccvgprReadB32, &[O::v(40), O::a(3)]);
    assert_eq!(
        both(vec![mfma32(O::ar(0, 16), O::InlineInt(0)), read]),
        (19, 11)
    );
    // A VMEM store reading the result: 5 (2 passes).
    let mut store = Inst::new(
        Opcode::BufferStoreDword,
        &[O::v(9), O::v(0), O::sr(8, 4), O::InlineInt(0)],
    );
    store.mods.offen = true;
    assert_eq!(both(vec![mfma4(O::vr(8, 4), O::vr(12, 4)), store]), (5, 5));
    // A VALU overwriting the result (WAW): 5.
    assert_eq!(
        both(vec![mfma4(O::vr(8, 4), O::vr(12, 4)), vadd(10, 0, 1)]),
        (5, 5)
    );
    // A VALU overwriting what the MFMA reads as SrcC (WAR): P - 1 = gfx90a 15, gfx942 7.
    let write = Inst::new(Opcode::VAccvgprWriteB32, &[O::a(20), O::v(0)]);
    assert_eq!(
        both(vec![mfma32(O::ar(0, 16), O::ar(16, 16)), write]),
        (15, 7)
    );
    // v_accvgpr_write, then an MFMA reading it: 2.
    let write = Inst::new(Opcode::VAccvgprWriteB32, &[O::a(17), O::v(0)]);
    assert_eq!(both(vec![write, mfma4(O::ar(0, 4), O::ar(16, 4))]), (2, 2));
    // A DGEMM, then v_fma_f64 (any registers): 2.
    let dgemm = Inst::new(
        Opcode::VMfmaF64_4x4x4F64,
        &[O::vr(8, 2), O::vr(0, 2), O::vr(2, 2), O::vr(8, 2)],
    );
    let fma = Inst::new(
        Opcode::VFmaF64,
        &[O::vr(20, 2), O::vr(0, 2), O::vr(2, 2), O::vr(4, 2)],
    );
    assert_eq!(both(vec![dgemm.clone(), fma]), (2, 2));
    // DGEMM 4x4 into the same SrcC: 4 on both.
    assert_eq!(both(vec![dgemm.clone(), dgemm]), (4, 4));
    // A 32x32x2f32 (non-XDL on gfx942) into an overlapping XDL SrcC: gfx942 0, gfx90a 16.
    let f32mfma = Inst::new(
        Opcode::VMfmaF32_32x32x2F32,
        &[O::ar(0, 16), O::v(0), O::v(1), O::ar(16, 16)],
    );
    assert_eq!(
        both(vec![f32mfma, mfma32(O::ar(32, 16), O::ar(8, 16))]),
        (16, 0)
    );
    // A VALU writes EXEC (v_cmpx), then an MFMA: 4.
    let cmpx = Inst::new(
        Opcode::VCmpxEqU32,
        &[O::Special(SpecialReg::Vcc), O::v(1), O::v(2)],
    );
    assert_eq!(both(vec![cmpx, mfma4(O::vr(8, 4), O::vr(12, 4))]), (4, 4));
    // gfx90a: a VALU write, a DGEMM, then a VMEM read of the VALU's result: 2 from the write
    // (1 more wait state); gfx942 has no such rule.
    let dgemm = Inst::new(
        Opcode::VMfmaF64_4x4x4F64,
        &[O::vr(30, 2), O::vr(0, 2), O::vr(2, 2), O::InlineInt(0)],
    );
    let mut load = Inst::new(
        Opcode::BufferLoadDword,
        &[O::v(20), O::v(9), O::sr(8, 4), O::InlineInt(0)],
    );
    load.mods.offen = true;
    assert_eq!(both(vec![vadd(9, 0, 1), dgemm, load]), (1, 0));
}

/// A later write of the other kind does not end a rule's window (LLVM's `getWaitStatesSinceDef`
/// looks back for the last def of the rule's kind over any defs in between): the register
/// assignment that refills an MFMA result with a `v_mov` before storing it, or lets an MFMA
/// overwrite a VALU result, must not lose a wait.
#[test]
fn a_write_in_between_does_not_end_an_mfma_window() {
    let (a, c) = (Target::Gfx90a, Target::Gfx942);
    let both = |insts: Vec<Inst>| (waits(a, insts.clone()), waits(c, insts));
    // DGEMM 16x16 writes v[0:7]; v_mov v0/v1 refill v[0:1] from v[2:3] (11 wait states: VALU
    // read and WAW); the store of v[0:1] still needs the DGEMM's memory-read 18, so 18 - 2
    // (the two v_movs) = 16 wait states in all.
    let dgemm = Inst::new(
        Opcode::VMfmaF64_16x16x4F64,
        &[O::vr(0, 8), O::vr(16, 2), O::vr(18, 2), O::vr(0, 8)],
    );
    let mov = |d, s| Inst::new(Opcode::VMovB32, &[O::v(d), O::v(s)]);
    let mut store = Inst::new(
        Opcode::BufferStoreDwordx2,
        &[O::vr(0, 2), O::v(20), O::sr(4, 4), O::InlineInt(0)],
    );
    store.mods.offen = true;
    assert_eq!(
        both(vec![dgemm.clone(), mov(0, 2), mov(1, 3)]),
        (11, 11),
        "the v_movs alone"
    );
    assert_eq!(both(vec![dgemm, mov(0, 2), mov(1, 3), store]), (16, 16));
    // A VALU writes v9, an MFMA overwrites v[8:11], the next MFMA reads v[8:11] as the same
    // SrcC: the VALU's 2 before an MFMA read still count (gfx90a: 1 s_nop; gfx942: the 2 of
    // the 2-pass SrcC rule cover it).
    assert_eq!(
        both(vec![
            vadd(9, 0, 1),
            mfma4(O::vr(8, 4), O::vr(12, 4)),
            mfma4(O::vr(8, 4), O::vr(8, 4))
        ]),
        (1, 2)
    );
}

#[test]
fn wide_store_data_overwritten_by_valu() {
    let store = |soff: Operand| {
        let mut i = Inst::new(
            Opcode::BufferStoreDwordx4,
            &[O::vr(4, 4), O::v(0), O::sr(8, 4), soff],
        );
        i.mods.offen = true;
        i
    };
    for (t, want) in [
        (Target::Gfx942, 2),
        (Target::Gfx90a, 1),
        (Target::Gfx900, 1),
    ] {
        let mut f = one(t, vec![store(O::InlineInt(0)), vadd(5, 1, 2)]);
        assert_eq!(insert_wait_states(&mut f), want, "{t}");
        // With an SGPR soffset the hazard does not exist.
        let mut f = one(t, vec![store(O::s(3)), vadd(5, 1, 2)]);
        assert_eq!(insert_wait_states(&mut f), 0, "{t}");
    }
}

#[test]
fn m0_write_then_sendmsg_needs_1() {
    let mov = Inst::new(Opcode::SMovB32, &[O::Special(SpecialReg::M0), O::s(2)]);
    let msg = Inst::new(Opcode::SSendmsg, &[O::Imm(1)]);
    let mut f = one(Target::Gfx942, vec![mov, msg]);
    assert_eq!(insert_wait_states(&mut f), 1);
}

#[test]
fn no_hazard_no_nop() {
    let mut f = one(
        Target::Gfx942,
        vec![vadd(1, 2, 3), vadd(4, 1, 1), bload_soff(5), salu()],
    );
    assert_eq!(insert_wait_states(&mut f), 0);
    assert_eq!(f.blocks[0].insts.len(), 4);
}

/// `s_lshl2_add_u32 m0, s20, 0x400` (writes M0 and SCC).
fn m0_write() -> Inst {
    Inst::new(
        Opcode::SLshl2AddU32,
        &[O::Special(SpecialReg::M0), O::s(20), O::Literal(0x400)],
    )
}

/// `buffer_load_dword v{addr}, s[8:11], 0 offen lds`: a load to LDS at M0.
fn lds_dma(addr: u16) -> Inst {
    let mut i = Inst::new(
        Opcode::BufferLoadDword,
        &[O::v(addr), O::v(addr), O::sr(8, 4), O::InlineInt(0)],
    );
    i.mods.offen = true;
    i.mods.lds = true;
    i
}

#[test]
fn an_independent_neighbour_fills_the_m0_wait_instead_of_a_nop() {
    // The VALU before the M0 write moves after it.
    assert_padded(
        Target::Gfx942,
        vec![vadd(4, 2, 3), m0_write(), lds_dma(4)],
        0,
        &["s_lshl2_add_u32", "v_add_u32_e32", "buffer_load_dword"],
    );
    // An independent SALU that writes SCC moves after it too (the SCC an M0 write leaves is
    // read by nothing, so the filler's is equally unread).
    let add = Inst::new(Opcode::SAddU32, &[O::s(22), O::s(21), O::InlineInt(1)]);
    assert_padded(
        Target::Gfx942,
        vec![add, m0_write(), lds_dma(4)],
        0,
        &["s_lshl2_add_u32", "s_add_u32", "buffer_load_dword"],
    );
    // A SALU that reads SCC stays (the M0 write would change what it reads); the VALU after
    // the load moves up instead.
    let sel = Inst::new(Opcode::SCselectB32, &[O::s(22), O::s(21), O::InlineInt(1)]);
    assert_padded(
        Target::Gfx942,
        vec![sel, m0_write(), lds_dma(4), vadd(5, 2, 3)],
        0,
        &[
            "s_cselect_b32",
            "s_lshl2_add_u32",
            "v_add_u32_e32",
            "buffer_load_dword",
        ],
    );
    // A SALU whose result the M0 write reads (s20) stays; the VALU after the load moves up.
    assert_padded(
        Target::Gfx942,
        vec![salu(), m0_write(), lds_dma(4), vadd(5, 2, 3)],
        0,
        &[
            "s_add_u32",
            "s_lshl2_add_u32",
            "v_add_u32_e32",
            "buffer_load_dword",
        ],
    );
}

#[test]
fn a_dependent_neighbour_does_not_move_and_the_nop_stays() {
    // The instruction before the M0 write writes s20, which the write reads; the VALU after
    // the load overwrites the load's address: neither may move, so the nop stays.
    let writes_s20 = readfirstlane(20, 1);
    let mut f = one(
        Target::Gfx942,
        vec![writes_s20, m0_write(), lds_dma(4), vadd(4, 2, 3)],
    );
    assert!(insert_wait_states(&mut f) >= 1);
    let s = shape(&f)[0].clone();
    let at = s.iter().position(|x| x == "buffer_load_dword").unwrap();
    assert_eq!(s[at - 1], "s_nop 0", "{s:?}");
    assert_eq!(s.last().unwrap(), "v_add_u32_e32", "{s:?}");
}

/// `v_rcp_f32 v2, v1` then `v_mul_f32 v3, v2, v4`: a transcendental's result read by another
/// VALU, one wait state short on gfx942.
fn rcp_then_mul() -> Vec<Inst> {
    vec![
        Inst::new(Opcode::VRcpF32, &[O::v(2), O::v(1)]),
        Inst::new(Opcode::VMulF32, &[O::v(3), O::v(2), O::v(4)]),
    ]
}

/// `s_nop 7` (8 wait states, the most one `s_nop` gives) three times: after 19 wait states no
/// event of the block matters to a successor (a fill is kept only where no write at the
/// block's end comes nearer).
fn far_end() -> Vec<Inst> {
    vec![Inst::new(Opcode::SNop, &[O::Imm(7)]); 3]
}

/// Pads `insts` (one block on `target`) and checks the `s_nop`s added and the block's shape.
fn assert_padded(target: Target, insts: Vec<Inst>, nops: u32, expected: &[&str]) {
    let mut f = one(target, insts);
    assert_eq!(insert_wait_states(&mut f), nops);
    assert_eq!(shape(&f)[0], strs(expected));
}

#[test]
fn a_later_independent_instruction_fills_a_wait_instead_of_a_nop() {
    // The SALU behind the reader moves up to fill its wait state; no s_nop.
    assert_padded(
        Target::Gfx942,
        [rcp_then_mul(), vec![salu()], far_end()].concat(),
        0,
        &[
            "v_rcp_f32_e32",
            "s_add_u32",
            "v_mul_f32_e32",
            "s_nop 7",
            "s_nop 7",
            "s_nop 7",
        ],
    );
    // It may pass independent ALU instructions on its way (a VALU reading the reader's
    // result stays after it).
    assert_padded(
        Target::Gfx942,
        [rcp_then_mul(), vec![vadd(5, 3, 3), salu()], far_end()].concat(),
        0,
        &[
            "v_rcp_f32_e32",
            "s_add_u32",
            "v_mul_f32_e32",
            "v_add_u32_e32",
            "s_nop 7",
            "s_nop 7",
            "s_nop 7",
        ],
    );
    // Near the block's end the reader's write would come nearer to the next block: the nop
    // stays.
    assert_padded(
        Target::Gfx942,
        [rcp_then_mul(), vec![salu()]].concat(),
        1,
        &["v_rcp_f32_e32", "s_nop 0", "v_mul_f32_e32", "s_add_u32"],
    );
    // gfx90a needs no wait state there: nothing moves.
    assert_padded(
        Target::Gfx90a,
        [rcp_then_mul(), vec![salu()], far_end()].concat(),
        0,
        &[
            "v_rcp_f32_e32",
            "v_mul_f32_e32",
            "s_add_u32",
            "s_nop 7",
            "s_nop 7",
            "s_nop 7",
        ],
    );
}

#[test]
fn a_filler_does_not_pass_a_dependence_an_exec_write_or_a_wait() {
    let nop_stays = |tail: Vec<Inst>| {
        let mut insts = rcp_then_mul();
        let n = tail.len();
        insts.extend(tail);
        insts.extend(far_end());
        let mut f = one(Target::Gfx942, insts);
        assert_eq!(insert_wait_states(&mut f), 1);
        let s = shape(&f)[0].clone();
        assert_eq!(s[1], "s_nop 0", "{s:?}");
        assert_eq!(s.len(), 6 + n, "{s:?}");
    };
    // Reads the reader's result (v3).
    nop_stays(vec![vadd(5, 3, 6)]);
    // Overwrites the reader's source (v4).
    nop_stays(vec![vadd(4, 6, 7)]);
    // A VALU behind an EXEC write (it would run under another EXEC), and the write itself.
    let exec = Inst::new(
        Opcode::SMovB64,
        &[O::Special(SpecialReg::Exec), O::sr(10, 2)],
    );
    nop_stays(vec![exec, vadd(5, 6, 7)]);
    // A VALU behind an `s_waitcnt` (it may read what the wait waits for).
    let wait = Inst::new(Opcode::SWaitcnt, &[O::Imm(0)]);
    nop_stays(vec![wait, vadd(5, 6, 7)]);
    // A SALU that reads SCC behind one that writes it (and stays: it overwrites s4, which
    // the reader reads).
    let mut f = one(
        Target::Gfx942,
        vec![
            Inst::new(Opcode::VRcpF32, &[O::v(2), O::v(1)]),
            Inst::new(Opcode::VMulF32, &[O::v(3), O::s(4), O::v(2)]),
            Inst::new(Opcode::SAddU32, &[O::s(4), O::s(21), O::InlineInt(1)]),
            Inst::new(Opcode::SCselectB32, &[O::s(22), O::s(21), O::InlineInt(1)]),
        ]
        .into_iter()
        .chain(far_end())
        .collect(),
    );
    assert_eq!(insert_wait_states(&mut f), 1);
    assert_eq!(shape(&f)[0][1], "s_nop 0");
}

#[test]
fn padding_after_an_s_nop_grows_it_instead_of_adding_another() {
    assert_padded(
        Target::Gfx90a,
        vec![
            readfirstlane(4, 2),
            Inst::new(Opcode::SNop, &[O::Imm(1)]),
            bload_soff(4),
        ],
        3,
        &["v_readfirstlane_b32", "s_nop 4", "buffer_load_dword"],
    );
}
