//! The verifier accepts well-formed kernels and names the problem in ill-formed ones.

use kjit_ir::*;

/// `if gid < len(y) { y[gid] = alpha * x[gid] + y[gid] }`, built with the cursor.
fn saxpy() -> Function {
    let mut f = Function::new("saxpy");
    f.params = vec![
        Param {
            name: "alpha".into(),
            ty: Type::F32,
        },
        Param {
            name: "x".into(),
            ty: Type::Buffer {
                elem: ElemType::F32,
                writable: false,
            },
        },
        Param {
            name: "y".into(),
            ty: Type::Buffer {
                elem: ElemType::F32,
                writable: true,
            },
        },
    ];
    let mut c = FuncCursor::new(&mut f);
    let b0 = c.new_block();
    let alpha = c.func.append_block_param(b0, Type::F32);
    let x = c.func.append_block_param(b0, f_ty(false));
    let y = c.func.append_block_param(b0, f_ty(true));
    let body = c.new_block();
    let gidp = c.func.append_block_param(body, Type::U32);
    let exit = c.new_block();
    c.switch_to(b0);
    let wg = c.special(SpecialReg::WorkgroupId(Dim::X)).unwrap();
    let ws = c.special(SpecialReg::WorkgroupSize(Dim::X)).unwrap();
    let lid = c.special(SpecialReg::WorkitemId(Dim::X)).unwrap();
    let t = c.binary(BinaryOp::Mul, wg, ws).unwrap();
    let gid = c.binary(BinaryOp::Add, t, lid).unwrap();
    let n = c.ins1(InstData::BufferLen { buf: y }).unwrap();
    let inb = c.cmp(CmpOp::Lt, gid, n).unwrap();
    c.brif(inb, body, &[gid], exit, &[]).unwrap();
    c.switch_to(body);
    let xv = c.load(Mem::Global(x), gidp, 0, 1).unwrap()[0];
    let yv = c.load(Mem::Global(y), gidp, 0, 1).unwrap()[0];
    let m = c.binary(BinaryOp::Mul, alpha, xv).unwrap();
    let s = c.binary(BinaryOp::Add, m, yv).unwrap();
    c.store(Mem::Global(y), gidp, 0, &[s]).unwrap();
    c.jump(exit, &[]).unwrap();
    c.switch_to(exit);
    c.ret().unwrap();
    f
}

fn f_ty(writable: bool) -> Type {
    Type::Buffer {
        elem: ElemType::F32,
        writable,
    }
}

#[test]
fn well_formed_kernel_verifies_and_prints() {
    let f = saxpy();
    verify(&f).unwrap();
    let text = f.to_string();
    assert!(
        text.starts_with("kernel saxpy(alpha: f32, x: buf<f32>, y: buf_mut<f32>) {\n"),
        "{text}"
    );
    assert!(text.contains("    v9:u32 = buffer_len v2\n"), "{text}");
    assert!(
        text.contains("    brif v10, block1(v8), block2\n"),
        "{text}"
    );
    assert!(text.contains("    store v2[v3], v14\n"), "{text}");
}

#[test]
fn cursor_rejects_ill_typed_instructions() {
    let mut f = Function::new("k");
    let mut c = FuncCursor::new(&mut f);
    let b = c.new_block();
    c.switch_to(b);
    let a = c.iconst_u32(1).unwrap();
    let x = c.fconst_f32(1.0).unwrap();
    let e = c.binary(BinaryOp::Add, a, x).unwrap_err();
    assert!(e.contains("operand types differ"), "{e}");
    let e = c.binary(BinaryOp::Shl, x, x).unwrap_err();
    assert!(e.contains("shl is not defined on f32"), "{e}");
    let e = c.unary(UnaryOp::Sqrt, a).unwrap_err();
    assert!(e.contains("sqrt is not defined on u32"), "{e}");
    c.ret().unwrap();
    assert!(c.ret().unwrap_err().contains("already terminated"));
}

#[test]
fn store_to_read_only_buffer_is_rejected() {
    let mut f = saxpy();
    // Turn the store into a store to x.
    let x = f.blocks[f.layout[0]].params[1];
    for i in f.insts.keys().collect::<Vec<_>>() {
        if let InstData::Store { mem, .. } = &mut f.insts[i] {
            *mem = Mem::Global(x);
        }
    }
    let e = verify(&f).unwrap_err().to_string();
    assert!(e.contains("read-only buffer"), "{e}");
}

#[test]
fn use_not_dominated_by_definition_is_rejected() {
    let mut f = saxpy();
    // The exit block (block2) returns; make block1's value flow into block2 without a parameter.
    let body = f.layout[1];
    let exit = f.layout[2];
    let v = f.blocks[body].params[0];
    let x = f.blocks[f.layout[0]].params[1];
    let st = f
        .make_inst(InstData::Load {
            mem: Mem::Global(x),
            index: v,
            offset: 0,
            width: 1,
        })
        .unwrap();
    f.blocks[exit].insts.insert(0, st);
    let e = verify(&f).unwrap_err().to_string();
    assert!(e.contains("does not dominate"), "{e}");
}

#[test]
fn missing_terminator_and_bad_branch_arity_are_rejected() {
    let mut f = saxpy();
    let exit = f.layout[2];
    f.blocks[exit].insts.clear();
    let e = verify(&f).unwrap_err().to_string();
    assert!(e.contains("block2: is empty"), "{e}");

    let mut f = saxpy();
    let t = f.terminator(f.layout[0]).unwrap();
    if let InstData::Brif { then_dest, .. } = &mut f.insts[t] {
        then_dest.args.clear();
    }
    let e = verify(&f).unwrap_err().to_string();
    assert!(
        e.contains("passes 0 arguments to block1, which takes 1"),
        "{e}"
    );
}

#[test]
fn barrier_in_divergent_control_flow_is_rejected() {
    let mut f = saxpy();
    let body = f.layout[1];
    let bar = f.make_inst(InstData::Barrier).unwrap();
    f.blocks[body].insts.insert(0, bar);
    let e = verify(&f).unwrap_err().to_string();
    assert!(e.contains("barrier inside divergent control flow"), "{e}");
    // In the entry block (uniform control flow) it is fine.
    let mut f = saxpy();
    let b0 = f.layout[0];
    let bar = f.make_inst(InstData::Barrier).unwrap();
    f.blocks[b0].insts.insert(0, bar);
    verify(&f).unwrap();
}

#[test]
fn lds_over_the_limit_is_rejected() {
    let mut f = saxpy();
    f.lds.push(LdsDecl {
        name: "big".into(),
        elem: ElemType::F32,
        len: 16 * 1024 + 1,
        dynamic: false,
    });
    let e = verify(&f).unwrap_err().to_string();
    assert!(e.contains("65540 bytes"), "{e}");
}
