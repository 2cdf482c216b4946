//! Misuse of the builder is an error naming the kernel, the call and its source line, never a
//! panic.

use kjit_frontend::*;
use kjit_ir::BinaryOp;

fn err_of(r: Result<Function, KernelError>) -> String {
    match r {
        Ok(f) => panic!("expected an error, got\n{f}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn store_to_read_only_buffer() {
    let k = KernelBuilder::new("ro");
    let x = k.buffer::<f32>("x");
    let i = k.global_id(Dim::X);
    let v = k.load(&x, i);
    let line = line!() + 1;
    k.store(&x, i, v);
    let e = err_of(k.finish());
    assert!(e.starts_with("kernel `ro`: "), "{e}");
    assert!(e.contains(&format!("misuse.rs:{line}:")), "{e}");
    assert!(e.contains("`store`: buffer `x` is read-only"), "{e}");
}

#[test]
fn type_mismatch_through_the_dynamic_api() {
    let k = KernelBuilder::new("dyn");
    let a = k.arg::<f32>("a").any();
    let b = k.arg::<u32>("b").any();
    let line = line!() + 1;
    let _ = k.binary_dyn(BinaryOp::Add, a, b);
    let e = err_of(k.finish());
    assert!(e.contains(&format!("misuse.rs:{line}:")), "{e}");
    assert!(
        e.contains("`add`: add: operand types differ (v0: f32, v1: u32)"),
        "{e}"
    );

    let k = KernelBuilder::new("dyn2");
    let a = k.arg::<f32>("a").any();
    let _ = a.typed::<u32>();
    assert!(err_of(k.finish()).contains("v0 is f32, not u32"));
}

#[test]
fn value_from_another_kernel() {
    let k1 = KernelBuilder::new("one");
    let k2 = KernelBuilder::new("two");
    let a = k1.arg::<u32>("a");
    let b = k2.arg::<u32>("b");
    let _ = b + a;
    let e = err_of(k2.finish());
    assert!(e.contains("comes from another kernel (`one`)"), "{e}");
    k1.finish().unwrap();
}

#[test]
fn barrier_inside_divergent_control_flow() {
    let k = KernelBuilder::new("bar");
    let out = k.buffer_mut::<u32>("out");
    let lid = k.local_id(Dim::X);
    let line = line!() + 2;
    k.if_(lid.lt(k.lit(32u32)), || {
        k.barrier();
    });
    k.store(&out, lid, lid);
    let e = err_of(k.finish());
    assert!(e.contains(&format!("misuse.rs:{line}:")), "{e}");
    assert!(
        e.contains("`barrier`: barrier inside divergent control flow"),
        "{e}"
    );

    // Under a uniform condition it is accepted.
    let k = KernelBuilder::new("bar_ok");
    let out = k.buffer_mut::<u32>("out");
    let n = k.arg::<u32>("n");
    k.if_(n.gt(k.lit(3u32)), || k.barrier());
    let lid = k.local_id(Dim::X);
    k.store(&out, lid, lid);
    k.finish().unwrap();
}

#[test]
fn lds_over_the_limit() {
    let k = KernelBuilder::new("lds");
    let _a = k.lds::<f32>("a", 8192);
    let b = k.lds::<f32>("b", 8193);
    assert_eq!(b.len(), 0);
    let e = err_of(k.finish());
    assert!(e.contains("`lds`: LDS array `b` (32772 bytes) brings the kernel to 65540 bytes of LDS; at most 65536 fit"), "{e}");
}

#[test]
fn bad_and_duplicate_names() {
    let k = KernelBuilder::new("two words");
    let _ = k.arg::<u32>("a");
    let _ = k.arg::<u32>("a");
    let e = err_of(k.finish());
    assert!(e.contains("`two words` is not a valid kernel name"), "{e}");
    assert!(e.contains("the name `a` is already used"), "{e}");
}

#[test]
fn variable_read_where_it_has_no_value() {
    let k = KernelBuilder::new("undef");
    let out = k.buffer_mut::<u32>("out");
    let lid = k.local_id(Dim::X);
    // A variable created in one branch and read after the join.
    let mut holder = None;
    k.if_(lid.lt(k.lit(3u32)), || {
        holder = Some(k.var(lid));
    });
    let v = holder.unwrap().get();
    k.store(&out, lid, v);
    let e = err_of(k.finish());
    assert!(
        e.contains("variable `var` has no value on some path"),
        "{e}"
    );
}

#[test]
fn every_misuse_is_reported_not_just_the_first() {
    let k = KernelBuilder::new("many");
    let x = k.buffer::<u32>("x");
    let i = k.lit(0u32);
    k.store(&x, i, i);
    k.store(&x, i, i);
    match k.finish() {
        Err(e) => assert_eq!(e.errors.len(), 2, "{e}"),
        Ok(_) => panic!("accepted"),
    }
}

/// Issue 14: `finish` stopped at the builder's own errors, so a barrier in divergent control
/// flow (found by the verifier) went unreported next to another misuse.
#[test]
fn every_misuse_is_reported_together_with_a_divergent_barrier() {
    let k = KernelBuilder::new("both");
    let x = k.buffer::<u32>("x");
    let lid = k.local_id(Dim::X);
    let store_line = line!() + 1;
    k.store(&x, lid, lid);
    let barrier_line = line!() + 2;
    k.if_(lid.lt(32u32), || {
        k.barrier();
    });
    let e = err_of(k.finish());
    assert!(e.contains(&format!("misuse.rs:{store_line}:")), "{e}");
    assert!(e.contains("`store`: buffer `x` is read-only"), "{e}");
    assert!(e.contains(&format!("misuse.rs:{barrier_line}:")), "{e}");
    assert!(
        e.contains("`barrier`: barrier inside divergent control flow"),
        "{e}"
    );
}
