//! `InsertWaitcnt` on hand-built allocated functions: the exact waits (position and counts) for
//! straight-line code, several loads in flight, loops that keep loads in flight across the back
//! edge, SMEM mixed with LDS, diamonds, write-after-write, store data, barriers per target and
//! counter saturation. (Running such functions on kjit's GCN device is in the root crate's
//! `tests/waitcnt_essential.rs`, which can depend on the runtime.)

use kjit_backend_gcn::codeobj::metadata::KernelMeta;
use kjit_backend_gcn::isa::{Inst, Opcode, Operand};
use kjit_backend_gcn::mir::{BranchCond, KernelAbi, MBlock};
use kjit_backend_gcn::phys::{PhysFunction, PhysTerminator};
use kjit_backend_gcn::waitcnt::{insert_waitcnt, Wait};
use kjit_backend_gcn::Target;

use Operand as O;

fn func(target: Target, blocks: Vec<(Vec<Inst>, PhysTerminator)>) -> PhysFunction {
    PhysFunction::from_blocks(
        KernelAbi {
            target,
            meta: KernelMeta::new("t"),
            workgroup_ids: [true, false, false],
            workitem_dims: 1,
            lds_bytes: 1024,
        },
        blocks,
    )
}

fn b(n: u32) -> MBlock {
    MBlock::from_u32(n)
}

/// `buffer_load_dword v{dst}, v0, s[8:11], 0 offen`.
fn bload(dst: u16) -> Inst {
    let mut i = Inst::new(
        Opcode::BufferLoadDword,
        &[O::v(dst), O::v(0), O::sr(8, 4), O::InlineInt(0)],
    );
    i.mods.offen = true;
    i
}

/// `buffer_store_dword v{src}, v0, s[12:15], 0 offen`.
fn bstore(src: u16) -> Inst {
    let mut i = Inst::new(
        Opcode::BufferStoreDword,
        &[O::v(src), O::v(0), O::sr(12, 4), O::InlineInt(0)],
    );
    i.mods.offen = true;
    i
}

fn sload(dst: u16) -> Inst {
    Inst::new(Opcode::SLoadDword, &[O::s(dst), O::sr(0, 2), O::Imm(0)])
}

fn ds_read(dst: u16) -> Inst {
    Inst::new(Opcode::DsReadB32, &[O::v(dst), O::v(0)])
}

fn ds_write(src: u16) -> Inst {
    Inst::new(Opcode::DsWriteB32, &[O::v(0), O::v(src)])
}

/// `v_add_u32 v{d}, v{a}, v{b}`.
fn vadd(d: u16, a: u16, bb: u16) -> Inst {
    Inst::new(Opcode::VAddU32, &[O::v(d), O::v(a), O::v(bb)])
}

/// `v_add_u32 v{d}, s{a}, v{b}`.
fn vadd_s(d: u16, a: u16, bb: u16) -> Inst {
    Inst::new(Opcode::VAddU32, &[O::v(d), O::s(a), O::v(bb)])
}

fn vmov_imm(d: u16) -> Inst {
    Inst::new(Opcode::VMovB32, &[O::v(d), O::InlineInt(1)])
}

fn s_add(d: u16, a: u16) -> Inst {
    Inst::new(Opcode::SAddU32, &[O::s(d), O::s(a), O::InlineInt(1)])
}

fn s_cmp(a: u16) -> Inst {
    Inst::new(Opcode::SCmpLgU32, &[O::s(a), O::InlineInt(0)])
}

/// Each block as mnemonics, with waits spelled out (`s_waitcnt vmcnt(1)`).
fn shape(f: &PhysFunction) -> Vec<Vec<String>> {
    let t = f.abi.target;
    f.blocks
        .iter()
        .map(|bl| {
            bl.insts
                .iter()
                .map(|i| {
                    let text = i.display(t).to_string();
                    if i.op == Opcode::SWaitcnt {
                        text
                    } else {
                        text.split_whitespace().next().unwrap_or("").to_string()
                    }
                })
                .collect()
        })
        .collect()
}

fn waits_of(f: &PhysFunction) -> Vec<String> {
    shape(f)
        .concat()
        .into_iter()
        .filter(|s| s.starts_with("s_waitcnt"))
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn straight_line_waits_for_each_result_with_younger_loads_left_in_flight() {
    let mut f = func(
        Target::Gfx942,
        vec![(
            vec![
                sload(4),
                sload(5),
                bload(1),
                bload(2),
                bload(3),
                vadd_s(10, 4, 0), // both SMEM may be out: lgkmcnt(0)
                vadd(11, 1, 0),   // two younger loads: vmcnt(2)
                vadd(12, 3, 2),   // the youngest: vmcnt(0)
                bstore(12),
            ],
            PhysTerminator::Return,
        )],
    );
    let st = insert_waitcnt(&mut f);
    assert_eq!(
        shape(&f)[0],
        strs(&[
            "s_load_dword",
            "s_load_dword",
            "buffer_load_dword",
            "buffer_load_dword",
            "buffer_load_dword",
            // The second add's vmcnt(2) joins the first add's lgkmcnt(0) (adjacent waits on
            // different counters are one `s_waitcnt`).
            "s_waitcnt vmcnt(2) lgkmcnt(0)",
            "v_add_u32_e32",
            "v_add_u32_e32",
            "s_waitcnt vmcnt(0)",
            "v_add_u32_e32",
            "buffer_store_dword",
        ])
    );
    assert_eq!(st.inserted, 2);
    assert_eq!(st.partial, 1);
}

#[test]
fn several_loads_used_in_issue_order_count_down() {
    let mut insts: Vec<Inst> = (1..=5).map(bload).collect();
    for r in 1..=5 {
        insts.push(vadd(20 + r, r, 0));
    }
    let mut f = func(Target::Gfx90a, vec![(insts, PhysTerminator::Return)]);
    insert_waitcnt(&mut f);
    assert_eq!(
        waits_of(&f),
        strs(&[
            "s_waitcnt vmcnt(4)",
            "s_waitcnt vmcnt(3)",
            "s_waitcnt vmcnt(2)",
            "s_waitcnt vmcnt(1)",
            "s_waitcnt vmcnt(0)",
        ])
    );
}

#[test]
fn loads_used_in_reverse_order_need_one_full_wait() {
    let mut insts: Vec<Inst> = (1..=3).map(bload).collect();
    for r in (1..=3).rev() {
        insts.push(vadd(20 + r, r, 0));
    }
    let mut f = func(Target::Gfx942, vec![(insts, PhysTerminator::Return)]);
    insert_waitcnt(&mut f);
    assert_eq!(waits_of(&f), strs(&["s_waitcnt vmcnt(0)"]));
}

/// A software-pipelined loop: one load is always in flight across the back edge, and each use
/// waits only for the older of the two loads: `vmcnt(1)`, never `vmcnt(0)` inside the loop.
#[test]
fn loop_keeping_a_load_in_flight_waits_vmcnt_1() {
    let mut f = func(
        Target::Gfx942,
        vec![
            // bb0: prologue load of the first element into v1; s2 = trip count.
            (vec![bload(1), sload(2)], PhysTerminator::Jump(b(1))),
            // bb1: load the next element into v2, consume v1; load into v1, consume v2.
            (
                vec![
                    bload(2),
                    vadd(10, 1, 10),
                    bload(1),
                    vadd(10, 2, 10),
                    s_add(2, 2),
                    s_cmp(2),
                ],
                PhysTerminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: b(1),
                    not_taken: b(2),
                },
            ),
            // bb2: drain: the last load is still in flight.
            (vec![vadd(11, 1, 10), bstore(11)], PhysTerminator::Return),
        ],
    );
    let st = insert_waitcnt(&mut f);
    let sh = shape(&f);
    assert_eq!(
        sh[1],
        strs(&[
            "buffer_load_dword",
            "s_waitcnt vmcnt(1)",
            "v_add_u32_e32",
            "buffer_load_dword",
            "s_waitcnt vmcnt(1)",
            "v_add_u32_e32",
            "s_add_u32",
            "s_cmp_lg_u32",
        ])
    );
    // The trip count (SMEM) is waited for once, at the end of the preheader.
    assert_eq!(
        sh[0],
        strs(&["buffer_load_dword", "s_load_dword", "s_waitcnt lgkmcnt(0)"])
    );
    assert_eq!(
        sh[2],
        strs(&["s_waitcnt vmcnt(0)", "v_add_u32_e32", "buffer_store_dword"])
    );
    assert!(st.iterations >= 3, "the loop was revisited: {st:?}");
    assert_eq!(st.partial, 2);
}

/// A loop whose body issues a load at the top and uses it at the bottom after two more loads:
/// the use waits `vmcnt(2)` on every iteration, including the first (entered with nothing in
/// flight) — the fixed point merges both entries.
#[test]
fn loop_with_three_loads_in_flight_waits_vmcnt_2() {
    let mut f = func(
        Target::Gfx90a,
        vec![
            (vec![sload(2)], PhysTerminator::Jump(b(1))),
            (
                vec![bload(1), bload(3), bload(4), vadd(10, 1, 10), s_cmp(2)],
                PhysTerminator::Branch {
                    cond: BranchCond::Scc0,
                    taken: b(1),
                    not_taken: b(2),
                },
            ),
            (vec![vadd(11, 3, 4)], PhysTerminator::Return),
        ],
    );
    insert_waitcnt(&mut f);
    let sh = shape(&f);
    assert_eq!(
        sh[1],
        strs(&[
            "buffer_load_dword",
            "buffer_load_dword",
            "buffer_load_dword",
            "s_waitcnt vmcnt(2)",
            "v_add_u32_e32",
            "s_cmp_lg_u32",
        ])
    );
    assert_eq!(sh[2], strs(&["s_waitcnt vmcnt(0)", "v_add_u32_e32"]));
}

/// A value loaded before a loop and used after it, where the loop body waits for its own,
/// younger load with `vmcnt(0)`: that wait completes the older load too, so the use after the
/// loop needs no wait of its own.
#[test]
fn value_loaded_before_a_loop_used_after_it() {
    let mut f = func(
        Target::Gfx942,
        vec![
            (vec![bload(1), sload(2)], PhysTerminator::Jump(b(1))),
            (
                vec![bload(5), vadd(6, 5, 6), s_cmp(2)],
                PhysTerminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: b(1),
                    not_taken: b(2),
                },
            ),
            (vec![vadd(7, 1, 6)], PhysTerminator::Return),
        ],
    );
    insert_waitcnt(&mut f);
    let sh = shape(&f);
    // In the loop, v5 is the youngest load: vmcnt(0), which also completes v1.
    assert_eq!(
        sh[1],
        strs(&[
            "buffer_load_dword",
            "s_waitcnt vmcnt(0)",
            "v_add_u32_e32",
            "s_cmp_lg_u32",
        ])
    );
    assert_eq!(sh[2], strs(&["v_add_u32_e32"]));
}

#[test]
fn lds_results_wait_for_younger_lds_only_and_smem_needs_zero() {
    let mut f = func(
        Target::Gfx942,
        vec![(
            vec![
                ds_read(1),
                sload(4),
                ds_read(2),
                ds_read(3),
                vadd(10, 1, 0), // two younger LDS ops (the SMEM does not count): lgkmcnt(2)
                vadd(11, 2, 0), // one younger LDS op: lgkmcnt(1)
                vadd_s(12, 4, 0), // SMEM: lgkmcnt(0)
                vadd(13, 3, 0), // complete already
            ],
            PhysTerminator::Return,
        )],
    );
    insert_waitcnt(&mut f);
    assert_eq!(
        shape(&f)[0],
        strs(&[
            "ds_read_b32",
            "s_load_dword",
            "ds_read_b32",
            "ds_read_b32",
            "s_waitcnt lgkmcnt(2)",
            "v_add_u32_e32",
            "s_waitcnt lgkmcnt(1)",
            "v_add_u32_e32",
            "s_waitcnt lgkmcnt(0)",
            "v_add_u32_e32",
            "v_add_u32_e32",
        ])
    );
}

#[test]
fn vmem_and_lds_counters_are_independent() {
    let mut f = func(
        Target::Gfx942,
        vec![(
            vec![
                bload(1),
                ds_read(2),
                bload(3),
                vadd(10, 2, 0), // lgkmcnt(0), vmem untouched
                vadd(11, 1, 0), // vmcnt(1)
            ],
            PhysTerminator::Return,
        )],
    );
    insert_waitcnt(&mut f);
    // lgkmcnt(0) for the LDS read leaves the younger buffer load in flight (vmcnt(1), not 0);
    // the two adjacent waits are one `s_waitcnt`.
    assert_eq!(waits_of(&f), strs(&["s_waitcnt vmcnt(1) lgkmcnt(0)"]));
}

#[test]
fn one_wait_covers_several_counters() {
    let mut f = func(
        Target::Gfx942,
        vec![(
            vec![bload(1), ds_read(2), bload(3), vadd(10, 1, 2)],
            PhysTerminator::Return,
        )],
    );
    insert_waitcnt(&mut f);
    assert_eq!(waits_of(&f), strs(&["s_waitcnt vmcnt(1) lgkmcnt(0)"]));
}

/// A diamond: v1 is loaded before it; the arms issue one and two more loads; at the join v1
/// has at least one younger load on either path: vmcnt(1). v2 (loaded in one arm only) is the
/// youngest on that path: vmcnt(0).
#[test]
fn diamond_takes_the_fewest_younger_loads_of_both_arms() {
    let mut f = func(
        Target::Gfx942,
        vec![
            (
                vec![sload(2), bload(1), s_cmp(3)],
                PhysTerminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: b(2),
                    not_taken: b(1),
                },
            ),
            (vec![bload(2)], PhysTerminator::Jump(b(3))),
            (vec![bload(3), bload(4)], PhysTerminator::Jump(b(3))),
            (vec![vadd(10, 1, 0), vadd(11, 2, 0)], PhysTerminator::Return),
        ],
    );
    insert_waitcnt(&mut f);
    let sh = shape(&f);
    assert_eq!(
        sh[3],
        strs(&[
            "s_waitcnt vmcnt(1)",
            "v_add_u32_e32",
            "s_waitcnt vmcnt(0)",
            "v_add_u32_e32",
        ])
    );
    assert!(sh[1]
        .iter()
        .chain(&sh[2])
        .all(|s| !s.starts_with("s_waitcnt")));
}

#[test]
fn overwriting_a_pending_load_destination_waits_but_a_newer_load_does_not() {
    let mut f = func(
        Target::Gfx942,
        vec![(
            vec![
                bload(1),
                bload(1), // same in-order counter: lands after the first, no wait
                bload(2),
                vmov_imm(2), // ALU write of a pending destination: vmcnt(0)
            ],
            PhysTerminator::Return,
        )],
    );
    insert_waitcnt(&mut f);
    assert_eq!(
        shape(&f)[0],
        strs(&[
            "buffer_load_dword",
            "buffer_load_dword",
            "buffer_load_dword",
            "s_waitcnt vmcnt(0)",
            "v_mov_b32_e32",
        ])
    );
}

#[test]
fn lds_load_into_a_register_a_vmem_load_still_writes_waits() {
    let mut f = func(
        Target::Gfx942,
        vec![(vec![bload(1), bload(3), ds_read(1)], PhysTerminator::Return)],
    );
    insert_waitcnt(&mut f);
    assert_eq!(waits_of(&f), strs(&["s_waitcnt vmcnt(1)"]));
}

#[test]
fn store_data_registers_may_be_overwritten_at_once_on_gfx9() {
    let mut f = func(
        Target::Gfx942,
        vec![(
            vec![bstore(1), vmov_imm(1), ds_write(2), vmov_imm(2)],
            PhysTerminator::Return,
        )],
    );
    let st = insert_waitcnt(&mut f);
    assert_eq!(st.inserted, 0, "{:?}", shape(&f));
}

#[test]
fn barrier_waits_for_lds_on_every_target_and_for_everything_on_gfx900() {
    for (t, want) in [
        (Target::Gfx942, "s_waitcnt lgkmcnt(0)"),
        (Target::Gfx90a, "s_waitcnt lgkmcnt(0)"),
        (Target::Gfx900, "s_waitcnt vmcnt(0) lgkmcnt(0)"),
    ] {
        let mut f = func(
            t,
            vec![(
                vec![
                    bstore(1),
                    ds_write(1),
                    Inst::new(Opcode::SBarrier, &[]),
                    ds_read(2),
                ],
                PhysTerminator::Return,
            )],
        );
        insert_waitcnt(&mut f);
        assert_eq!(waits_of(&f), strs(&[want]), "{t}");
    }
    // Nothing outstanding: no wait.
    let mut f = func(
        Target::Gfx942,
        vec![(
            vec![bstore(1), Inst::new(Opcode::SBarrier, &[])],
            PhysTerminator::Return,
        )],
    );
    assert_eq!(insert_waitcnt(&mut f).inserted, 0);
}

#[test]
fn vcc_loaded_by_smem_is_waited_for_before_the_branch() {
    let mut f = func(
        Target::Gfx942,
        vec![
            (
                vec![Inst::new(
                    Opcode::SLoadDwordx2,
                    &[
                        O::Special(kjit_backend_gcn::isa::SpecialReg::Vcc),
                        O::sr(0, 2),
                        O::Imm(0),
                    ],
                )],
                PhysTerminator::Branch {
                    cond: BranchCond::Vccz,
                    taken: b(1),
                    not_taken: b(1),
                },
            ),
            (vec![], PhysTerminator::Return),
        ],
    );
    insert_waitcnt(&mut f);
    assert_eq!(
        shape(&f)[0],
        strs(&["s_load_dwordx2", "s_waitcnt lgkmcnt(0)"])
    );
}

#[test]
fn saturated_vmcnt_completes_the_oldest_load() {
    // 64 loads: the first has 63 younger ones, so the counter (6 bits) guarantees it is done.
    let mut insts: Vec<Inst> = (1..=64).map(bload).collect();
    insts.push(vadd(100, 1, 0));
    insts.push(vadd(101, 2, 0));
    let mut f = func(Target::Gfx942, vec![(insts, PhysTerminator::Return)]);
    insert_waitcnt(&mut f);
    assert_eq!(waits_of(&f), strs(&["s_waitcnt vmcnt(62)"]));
}

#[test]
fn running_the_pass_twice_inserts_nothing_more() {
    let mut f = func(
        Target::Gfx942,
        vec![
            (vec![bload(1), sload(2)], PhysTerminator::Jump(b(1))),
            (
                vec![
                    bload(2),
                    vadd(10, 1, 10),
                    bload(1),
                    vadd(10, 2, 10),
                    s_cmp(2),
                ],
                PhysTerminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: b(1),
                    not_taken: b(2),
                },
            ),
            (vec![vadd(11, 1, 10)], PhysTerminator::Return),
        ],
    );
    let first = insert_waitcnt(&mut f);
    assert!(first.inserted > 0);
    let before = shape(&f);
    let second = insert_waitcnt(&mut f);
    assert_eq!(second.inserted, 0);
    assert_eq!(shape(&f), before);
}

#[test]
fn wait_instruction_round_trips_through_the_encoder_and_printer() {
    for t in kjit_backend_gcn::target::ALL_TARGETS {
        let w = Wait {
            vm: Some(5),
            exp: None,
            lgkm: Some(0),
        };
        let i = w.inst(t);
        let words = kjit_backend_gcn::isa::encode(&i, t).unwrap();
        let back = kjit_backend_gcn::isa::decode(&words, t).unwrap();
        assert_eq!(Wait::of_inst(&back.0, t), Some(w));
        assert_eq!(i.display(t).to_string(), "s_waitcnt vmcnt(5) lgkmcnt(0)");
    }
}
