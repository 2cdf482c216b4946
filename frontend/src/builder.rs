//! The [`KernelBuilder`]: appends IR for a kernel as Rust code calls it, builds SSA form for
//! mutable variables (block parameters placed as in Braun et al., "Simple and Efficient
//! Construction of SSA Form"), structures control flow with closures, and checks every call.
//!
//! Misuse never panics: the call records a [`BuildError`] with its call site, returns a
//! placeholder value so the kernel code can go on, and [`KernelBuilder::finish`] reports all of
//! them. `finish` then removes unreachable blocks and trivial block parameters, numbers values
//! in order and runs the IR verifier, whose findings are mapped back to call sites too.

use crate::error::{BuildError, KernelError};
use crate::types::{Int, Scalar};
use crate::value::{AnyVal, Val, Var};
use cranelift_entity::SecondaryMap;
use kjit_ir::cfg::ControlFlowGraph;
use kjit_ir::verifier::Location as VLoc;
use kjit_ir::*;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::panic::Location;

pub(crate) type Site = &'static Location<'static>;

pub(crate) struct Inner {
    pub(crate) func: Function,
    cur: Block,
    errors: Vec<BuildError>,
    sites: SecondaryMap<Inst, Option<Site>>,
    var_types: Vec<Type>,
    var_names: Vec<String>,
    defs: HashMap<(usize, Block), Value>,
    sealed: SecondaryMap<Block, bool>,
    incomplete: SecondaryMap<Block, Vec<(usize, Value)>>,
    preds: SecondaryMap<Block, Vec<Block>>,
    in_layout: SecondaryMap<Block, bool>,
    names: HashSet<String>,
}

/// Builds one kernel. Values it hands out ([`Val`]) borrow it, so they cannot outlive it;
/// using a value of one builder in another is caught at run time and reported.
pub struct KernelBuilder {
    pub(crate) inner: RefCell<Inner>,
}

fn valid_name(s: &str) -> bool {
    let mut cs = s.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Inner {
    pub(crate) fn error(&mut self, call: &str, site: Site, message: String) {
        self.errors.push(BuildError::at(call, Some(site), message));
    }

    fn terminated(&self, b: Block) -> bool {
        self.func.terminator(b).is_some()
    }

    /// A block with no way in (code after a `return`).
    fn dead(&self, b: Block) -> bool {
        Some(b) != self.func.entry() && self.sealed[b] && self.preds[b].is_empty()
    }

    fn new_block(&mut self) -> Block {
        self.func.create_block()
    }

    fn switch(&mut self, b: Block) {
        if !self.in_layout[b] {
            self.in_layout[b] = true;
            self.func.append_block(b);
        }
        self.cur = b;
    }

    fn push(&mut self, data: InstData, call: &str, site: Site) -> Option<Inst> {
        let b = self.cur;
        if self.terminated(b) {
            // Only possible through a builder bug; report rather than corrupt the block.
            self.error(
                call,
                site,
                "instruction after the block's terminator".into(),
            );
            return None;
        }
        match self.func.make_inst(data) {
            Ok(i) => {
                self.func.blocks[b].insts.push(i);
                self.sites[i] = Some(site);
                Some(i)
            }
            Err(m) => {
                self.error(call, site, m);
                None
            }
        }
    }

    fn placeholder(&mut self, b: Block, ty: Type) -> Value {
        if let Type::Frag(f) = ty {
            // A zero fragment, so that later uses stay well typed.
            let zero = self.placeholder(b, f.elem.carrier());
            let args = (0..f.len).map(|_| zero).collect();
            let i = self
                .func
                .make_inst(InstData::FragBuild { ty: f, args })
                .expect("a zero fragment is well typed");
            self.func.blocks[b].insts.insert(1, i);
            return self.func.results[i][0];
        }
        let ty = if ty.is_scalar() { ty } else { Type::U32 };
        let i = self
            .func
            .make_inst(InstData::Const { ty, bits: 0 })
            .expect("a zero constant is well typed");
        self.func.blocks[b].insts.insert(0, i);
        self.func.results[i][0]
    }

    fn read_var(&mut self, var: usize, b: Block, site: Site) -> Value {
        if let Some(v) = self.defs.get(&(var, b)) {
            return *v;
        }
        let ty = self.var_types[var];
        let v = if !self.sealed[b] {
            let p = self.func.append_block_param(b, ty);
            self.incomplete[b].push((var, p));
            p
        } else if self.preds[b].is_empty() {
            if Some(b) == self.func.entry() {
                let name = self.var_names[var].clone();
                self.error(
                    "Var::get",
                    site,
                    format!("variable `{name}` has no value on some path to this read"),
                );
            }
            self.placeholder(b, ty)
        } else if self.preds[b].len() == 1 {
            let p = self.preds[b][0];
            self.read_var(var, p, site)
        } else {
            let p = self.func.append_block_param(b, ty);
            self.defs.insert((var, b), p);
            self.add_param_operands(var, b, site);
            p
        };
        self.defs.insert((var, b), v);
        v
    }

    fn add_param_operands(&mut self, var: usize, b: Block, site: Site) {
        for pred in self.preds[b].clone() {
            let v = self.read_var(var, pred, site);
            if let Some(t) = self.func.terminator(pred) {
                for call in self.func.insts[t].branch_targets_mut() {
                    if call.block == b {
                        call.args.push(v);
                    }
                }
            }
        }
    }

    fn seal(&mut self, b: Block, site: Site) {
        if self.sealed[b] {
            return;
        }
        for (var, _p) in std::mem::take(&mut self.incomplete[b]) {
            self.add_param_operands(var, b, site);
        }
        self.sealed[b] = true;
    }

    /// Ends the current block with a jump to `target`, unless it is dead code.
    fn jump_if_open(&mut self, target: Block, site: Site) {
        let cur = self.cur;
        if self.terminated(cur) || self.dead(cur) {
            return;
        }
        // The target is never sealed here, so its parameters get their arguments when it is.
        debug_assert!(!self.sealed[target]);
        self.push(
            InstData::Jump {
                dest: BlockCall::new(target, &[]),
            },
            "jump",
            site,
        );
        self.preds[target].push(cur);
    }
}

impl KernelBuilder {
    /// Starts a kernel called `name` (a Rust-style identifier).
    #[track_caller]
    pub fn new(name: &str) -> Self {
        let mut func = Function::new(name);
        let entry = func.create_block();
        let mut inner = Inner {
            func,
            cur: entry,
            errors: Vec::new(),
            sites: SecondaryMap::new(),
            var_types: Vec::new(),
            var_names: Vec::new(),
            defs: HashMap::new(),
            sealed: SecondaryMap::new(),
            incomplete: SecondaryMap::new(),
            preds: SecondaryMap::new(),
            in_layout: SecondaryMap::new(),
            names: HashSet::new(),
        };
        inner.switch(entry);
        inner.sealed[entry] = true;
        if !valid_name(name) {
            inner.error(
                "KernelBuilder::new",
                Location::caller(),
                format!("`{name}` is not a valid kernel name"),
            );
        }
        KernelBuilder {
            inner: RefCell::new(inner),
        }
    }

    /// The kernel's name.
    pub fn name(&self) -> String {
        self.inner.borrow().func.name.clone()
    }

    /// Allows `a*b + c` to be contracted into a fused multiply-add by the optimizer.
    pub fn allow_contraction(&self, yes: bool) {
        self.inner.borrow_mut().func.flags.contract = yes;
    }

    /// Declares that no buffer the kernel writes overlaps another of its buffer arguments, as
    /// C's `restrict` on every pointer does. The optimizer may then issue loads ahead of stores
    /// to other buffers (a grid-stride loop's next loads before this iteration's store); the
    /// code object marks the buffers `.is_restrict`, and every device rejects a launch whose
    /// written buffer overlaps another buffer argument.
    pub fn noalias(&self, yes: bool) {
        self.inner.borrow_mut().func.flags.noalias = yes;
    }

    /// Declares the workgroup size every launch of the kernel has: ids along dimensions of
    /// size 1 become 0 and `group_size` a constant (a 1-D kernel reads no y and z ids), the
    /// code object records it (`.reqd_workgroup_size`), and the device and the interpreter
    /// reject launches with another block.
    #[track_caller]
    pub fn workgroup_size(&self, size: [u32; 3]) {
        let site = Location::caller();
        let items: u64 = size.iter().map(|&x| x as u64).product();
        if items == 0 || items > kjit_ir::interp::MAX_WORKGROUP_SIZE as u64 {
            self.record(
                "workgroup_size",
                site,
                format!(
                    "workgroup size {size:?} = {items} work-items; 1..={} allowed",
                    kjit_ir::interp::MAX_WORKGROUP_SIZE
                ),
            );
            return;
        }
        self.inner.borrow_mut().func.workgroup_size = Some(size);
    }

    // ---- plumbing used by the value and memory modules ----

    pub(crate) fn record(&self, call: &str, site: Site, message: String) {
        self.inner.borrow_mut().error(call, site, message);
    }

    /// A well-typed stand-in value (after an error was recorded).
    pub(crate) fn placeholder_value(&self, ty: Type) -> Value {
        let mut g = self.inner.borrow_mut();
        let cur = g.cur;
        g.placeholder(cur, ty)
    }

    /// A new variable of type `ty` holding `init`; gives its id.
    pub(crate) fn new_var(&self, ty: Type, name: &str, init: Value) -> usize {
        let mut g = self.inner.borrow_mut();
        let id = g.var_types.len();
        g.var_types.push(ty);
        g.var_names.push(name.to_string());
        let cur = g.cur;
        g.defs.insert((id, cur), init);
        id
    }

    /// The IR value of `v`, or a placeholder (with an error) when `v` belongs to another kernel.
    pub(crate) fn own<T: Scalar>(&self, v: Val<'_, T>, call: &str, site: Site) -> Value {
        if std::ptr::eq(v.k, self) {
            v.v
        } else {
            let other = v.k.name();
            let mut g = self.inner.borrow_mut();
            g.error(
                call,
                site,
                format!("operand {} comes from another kernel (`{other}`)", v.v),
            );
            let cur = g.cur;
            g.placeholder(cur, T::TY)
        }
    }

    pub(crate) fn own_any(&self, v: AnyVal<'_>, call: &str, site: Site) -> Value {
        if std::ptr::eq(v.k, self) {
            v.v
        } else {
            let other = v.k.name();
            let mut g = self.inner.borrow_mut();
            g.error(
                call,
                site,
                format!("operand {} comes from another kernel (`{other}`)", v.v),
            );
            let cur = g.cur;
            g.placeholder(cur, v.ty)
        }
    }

    /// Appends an instruction; `None` (with an error recorded) if it is ill-typed.
    pub(crate) fn emit(&self, call: &str, site: Site, data: InstData) -> Option<Inst> {
        self.inner.borrow_mut().push(data, call, site)
    }

    /// Appends an instruction with one result of type `T`.
    pub(crate) fn emit_val<T: Scalar>(&self, call: &str, site: Site, data: InstData) -> Val<'_, T> {
        let v = self.emit_value(call, site, data, T::TY);
        Val::new(self, v)
    }

    pub(crate) fn emit_value(&self, call: &str, site: Site, data: InstData, ty: Type) -> Value {
        let mut g = self.inner.borrow_mut();
        match g.push(data, call, site) {
            Some(i) => {
                // Read in place (a clone of the results list per value went through
                // `SmallVec`'s generic `extend`).
                let one = match g.func.results[i].as_slice() {
                    [v] if g.func.values[*v].ty == ty => Some(*v),
                    _ => None,
                };
                match one {
                    Some(v) => v,
                    None => {
                        g.error(call, site, format!("expected one {ty} result"));
                        let cur = g.cur;
                        g.placeholder(cur, ty)
                    }
                }
            }
            None => {
                let cur = g.cur;
                g.placeholder(cur, ty)
            }
        }
    }

    pub(crate) fn add_param(&self, name: &str, ty: Type, call: &str, site: Site) -> Value {
        let mut g = self.inner.borrow_mut();
        if !valid_name(name) {
            g.error(
                call,
                site,
                format!("`{name}` is not a valid parameter name"),
            );
        } else if !g.names.insert(name.to_string()) {
            g.error(call, site, format!("the name `{name}` is already used"));
        }
        let entry = g
            .func
            .entry()
            .expect("the entry block exists from the start");
        g.func.params.push(Param {
            name: name.to_string(),
            ty,
        });
        g.func.append_block_param(entry, ty)
    }

    /// Declares an LDS array of `len` elements, or the dynamic one when `len` is `None`.
    pub(crate) fn add_lds(
        &self,
        name: &str,
        elem: ElemType,
        len: Option<u32>,
        site: Site,
    ) -> Option<LdsArray> {
        let mut g = self.inner.borrow_mut();
        let call = if len.is_some() { "lds" } else { "dynamic_lds" };
        if !valid_name(name) {
            g.error(
                call,
                site,
                format!("`{name}` is not a valid LDS array name"),
            );
        } else if !g.names.insert(name.to_string()) {
            g.error(call, site, format!("the name `{name}` is already used"));
        }
        let Some(len) = len else {
            if let Some(a) = g.func.dynamic_lds() {
                let other = g.func.lds[a].name.clone();
                g.error(
                    call,
                    site,
                    format!("`{name}`: the kernel already has a dynamic LDS array (`{other}`); at most one is allowed"),
                );
                return None;
            }
            return Some(g.func.lds.push(LdsDecl {
                name: name.to_string(),
                elem,
                len: 0,
                dynamic: true,
            }));
        };
        if len == 0 {
            g.error(call, site, format!("LDS array `{name}` has no elements"));
            return None;
        }
        let bytes = len as u64 * elem.bytes() as u64;
        let total = g.func.lds_bytes() + bytes;
        if total > kjit_ir::function::MAX_LDS_BYTES {
            g.error(
                call,
                site,
                format!(
                    "LDS array `{name}` ({bytes} bytes) brings the kernel to {total} bytes of LDS; at most {} fit",
                    kjit_ir::function::MAX_LDS_BYTES
                ),
            );
            return None;
        }
        Some(g.func.lds.push(LdsDecl {
            name: name.to_string(),
            elem,
            len,
            dynamic: false,
        }))
    }

    // ---- arguments ----

    /// A scalar kernel argument.
    #[track_caller]
    pub fn arg<T: Scalar>(&self, name: &str) -> Val<'_, T> {
        let v = self.add_param(name, T::TY, "arg", Location::caller());
        Val::new(self, v)
    }

    // ---- constants and ids ----

    /// A constant.
    #[track_caller]
    pub fn lit<T: Scalar>(&self, x: T) -> Val<'_, T> {
        self.emit_val(
            "lit",
            Location::caller(),
            InstData::Const {
                ty: T::TY,
                bits: x.to_bits(),
            },
        )
    }

    fn special(&self, reg: SpecialReg, site: Site) -> Val<'_, u32> {
        self.emit_val("id", site, InstData::Special { reg })
    }

    /// The work-item's id within its workgroup.
    #[track_caller]
    pub fn local_id(&self, d: Dim) -> Val<'_, u32> {
        self.special(SpecialReg::WorkitemId(d), Location::caller())
    }
    /// The workgroup's id within the grid.
    #[track_caller]
    pub fn group_id(&self, d: Dim) -> Val<'_, u32> {
        self.special(SpecialReg::WorkgroupId(d), Location::caller())
    }
    /// Work-items per workgroup.
    #[track_caller]
    pub fn group_size(&self, d: Dim) -> Val<'_, u32> {
        self.special(SpecialReg::WorkgroupSize(d), Location::caller())
    }
    /// Workgroups in the grid.
    #[track_caller]
    pub fn num_groups(&self, d: Dim) -> Val<'_, u32> {
        self.special(SpecialReg::NumWorkgroups(d), Location::caller())
    }
    /// `group_id * group_size + local_id`.
    #[track_caller]
    pub fn global_id(&self, d: Dim) -> Val<'_, u32> {
        let site = Location::caller();
        let g = self.special(SpecialReg::WorkgroupId(d), site);
        let s = self.special(SpecialReg::WorkgroupSize(d), site);
        let l = self.special(SpecialReg::WorkitemId(d), site);
        let gs = self.binary_at(BinaryOp::Mul, g, s, "global_id", site);
        self.binary_at(BinaryOp::Add, gs, l, "global_id", site)
    }
    /// Work-items in the grid: `num_groups * group_size`.
    #[track_caller]
    pub fn global_size(&self, d: Dim) -> Val<'_, u32> {
        let site = Location::caller();
        let n = self.special(SpecialReg::NumWorkgroups(d), site);
        let s = self.special(SpecialReg::WorkgroupSize(d), site);
        self.binary_at(BinaryOp::Mul, n, s, "global_size", site)
    }
    /// The lane's index in its wave (0..64).
    #[track_caller]
    pub fn lane_id(&self) -> Val<'_, u32> {
        self.special(SpecialReg::LaneId, Location::caller())
    }

    // ---- arithmetic helpers ----

    pub(crate) fn binary_at<'k, T: Scalar>(
        &'k self,
        op: BinaryOp,
        a: Val<'_, T>,
        b: Val<'_, T>,
        call: &str,
        site: Site,
    ) -> Val<'k, T> {
        let (a, b) = (self.own(a, call, site), self.own(b, call, site));
        self.emit_val(call, site, InstData::Binary { op, args: [a, b] })
    }

    /// `cond ? a : b`, per lane.
    #[track_caller]
    pub fn select<'k, T: Scalar>(
        &'k self,
        cond: Val<'_, bool>,
        a: Val<'_, T>,
        b: Val<'_, T>,
    ) -> Val<'k, T> {
        let site = Location::caller();
        let c = self.own(cond, "select", site);
        let (a, b) = (self.own(a, "select", site), self.own(b, "select", site));
        self.emit_val("select", site, InstData::Select { args: [c, a, b] })
    }

    /// Untyped two-operand arithmetic, checked at run time (for generated code).
    #[track_caller]
    pub fn binary_dyn<'k>(&'k self, op: BinaryOp, a: AnyVal<'_>, b: AnyVal<'_>) -> AnyVal<'k> {
        let site = Location::caller();
        let call = kjit_ir::binary_name(op);
        let (av, bv) = (self.own_any(a, call, site), self.own_any(b, call, site));
        let v = self.emit_value(call, site, InstData::Binary { op, args: [av, bv] }, a.ty);
        AnyVal {
            k: self,
            v,
            ty: a.ty,
        }
    }

    // ---- variables ----

    /// A mutable variable holding `init`; reads after control flow see the right value.
    #[track_caller]
    pub fn var<'k, T: Scalar>(&'k self, init: Val<'_, T>) -> Var<'k, T> {
        self.var_named("var", init)
    }

    /// A named mutable variable (the name shows in errors).
    #[track_caller]
    pub fn var_named<'k, T: Scalar>(&'k self, name: &str, init: Val<'_, T>) -> Var<'k, T> {
        let site = Location::caller();
        let v = self.own(init, "var", site);
        let id = self.new_var(T::TY, name, v);
        Var {
            k: self,
            id,
            _t: PhantomData,
        }
    }

    pub(crate) fn var_get(&self, id: usize, site: Site) -> Value {
        let mut g = self.inner.borrow_mut();
        let cur = g.cur;
        g.read_var(id, cur, site)
    }

    pub(crate) fn var_set(&self, id: usize, v: Value) {
        let mut g = self.inner.borrow_mut();
        let cur = g.cur;
        g.defs.insert((id, cur), v);
    }

    // ---- control flow ----

    fn branch(&self, cond: Value, t: Block, e: Block, site: Site) {
        let mut g = self.inner.borrow_mut();
        let cur = g.cur;
        g.push(
            InstData::Brif {
                cond,
                then_dest: BlockCall::new(t, &[]),
                else_dest: BlockCall::new(e, &[]),
            },
            "if",
            site,
        );
        g.preds[t].push(cur);
        if t != e {
            g.preds[e].push(cur);
        }
    }

    fn open(&self) -> Block {
        self.inner.borrow_mut().new_block()
    }

    fn enter(&self, b: Block, seal: bool, site: Site) {
        let mut g = self.inner.borrow_mut();
        if seal {
            g.seal(b, site);
        }
        g.switch(b);
    }

    fn close_to(&self, target: Block, site: Site) {
        self.inner.borrow_mut().jump_if_open(target, site);
    }

    /// Runs `then` for the lanes where `cond` holds.
    #[track_caller]
    pub fn if_(&self, cond: Val<'_, bool>, then: impl FnOnce()) {
        let site = Location::caller();
        let c = self.own(cond, "if_", site);
        let (tb, merge) = (self.open(), self.open());
        self.branch(c, tb, merge, site);
        self.enter(tb, true, site);
        then();
        self.close_to(merge, site);
        self.enter(merge, true, site);
    }

    /// Runs `then` where `cond` holds and `otherwise` where it does not.
    #[track_caller]
    pub fn if_else(&self, cond: Val<'_, bool>, then: impl FnOnce(), otherwise: impl FnOnce()) {
        let site = Location::caller();
        let c = self.own(cond, "if_else", site);
        let (tb, eb, merge) = (self.open(), self.open(), self.open());
        self.branch(c, tb, eb, site);
        self.enter(tb, true, site);
        then();
        self.close_to(merge, site);
        self.enter(eb, true, site);
        otherwise();
        self.close_to(merge, site);
        self.enter(merge, true, site);
    }

    /// `while cond() { body() }`. Lanes leave the loop separately when `cond` diverges.
    #[track_caller]
    pub fn while_<'k>(&'k self, cond: impl FnOnce() -> Val<'k, bool>, body: impl FnOnce()) {
        let site = Location::caller();
        let header = self.open();
        self.close_to(header, site);
        self.enter(header, false, site);
        let c = cond();
        let c = self.own(c, "while_", site);
        let (bb, exit) = (self.open(), self.open());
        self.branch(c, bb, exit, site);
        self.enter(bb, true, site);
        body();
        self.close_to(header, site);
        {
            let mut g = self.inner.borrow_mut();
            g.seal(header, site);
        }
        self.enter(exit, true, site);
    }

    /// `for i in (start..end).step_by(step) { body(i) }` over an integer type.
    #[track_caller]
    pub fn for_range<'k, T: Int>(
        &'k self,
        start: Val<'k, T>,
        end: Val<'k, T>,
        step: Val<'k, T>,
        body: impl FnOnce(Val<'k, T>),
    ) {
        let site = Location::caller();
        let i = self.var_named("for_range index", start);
        self.while_(
            || {
                let c = self.own(i.get_at(site), "for_range", site);
                let e = self.own(end, "for_range", site);
                self.emit_val(
                    "for_range",
                    site,
                    InstData::Cmp {
                        op: CmpOp::Lt,
                        args: [c, e],
                    },
                )
            },
            || {
                body(i.get_at(site));
                let cur = i.get_at(site);
                let next = self.binary_at(BinaryOp::Add, cur, step, "for_range", site);
                i.set(next);
            },
        );
    }

    /// Ends the kernel for the lanes that reach this point.
    #[track_caller]
    pub fn return_(&self) {
        let site = Location::caller();
        let mut g = self.inner.borrow_mut();
        let cur = g.cur;
        if !g.terminated(cur) {
            g.push(InstData::Return, "return_", site);
        }
        let b = g.new_block();
        g.sealed[b] = true;
        g.switch(b);
    }

    /// Ends the kernel for the lanes where `cond` holds.
    #[track_caller]
    pub fn return_if(&self, cond: Val<'_, bool>) {
        let site = Location::caller();
        let c = self.own(cond, "return_if", site);
        let (tb, merge) = (self.open(), self.open());
        self.branch(c, tb, merge, site);
        self.enter(tb, true, site);
        self.inner
            .borrow_mut()
            .push(InstData::Return, "return_if", site);
        self.enter(merge, true, site);
    }

    /// Workgroup barrier: waits for every work-item of the workgroup; LDS and global writes
    /// before it are visible after it. Must be reached by all work-items together (not inside
    /// divergent control flow).
    #[track_caller]
    pub fn barrier(&self) {
        self.emit("barrier", Location::caller(), InstData::Barrier);
    }

    // ---- finishing ----

    /// Checks the kernel and returns its verified IR, or every misuse found.
    pub fn finish(self) -> Result<Function, KernelError> {
        let mut g = self.inner.into_inner();
        let name = g.func.name.clone();
        // Close open blocks: the last one returns; unreachable ones are dropped below.
        for b in g.func.layout.clone() {
            if !g.terminated(b) {
                let i = g
                    .func
                    .make_inst(InstData::Return)
                    .expect("return is well typed");
                g.func.blocks[b].insts.push(i);
            }
        }
        let cfg = ControlFlowGraph::new(&g.func);
        g.func.layout.retain(|b| cfg.is_reachable(*b));
        remove_trivial_params(&mut g.func);
        // The verifier's findings (a barrier in divergent control flow, ...) are reported with
        // the builder's own, so one run of `finish` lists every misuse.
        let mut errors = std::mem::take(&mut g.errors);
        if let Err(es) = verify(&g.func) {
            errors.extend(es.0.iter().map(|e| {
                let (call, site) = match e.location {
                    VLoc::Inst(i) => (g.func.insts[i].opcode_name(), g.sites[i]),
                    _ => ("finish".to_string(), None),
                };
                BuildError {
                    call,
                    site: site.map(|s| s.to_string()),
                    message: e.message.clone(),
                }
            }));
        }
        if !errors.is_empty() {
            return Err(KernelError {
                kernel: name,
                errors,
            });
        }
        let func = g.func.renumbered();
        debug_assert!(verify(&func).is_ok());
        Ok(func)
    }
}

/// Removes block parameters that receive one value on every edge (or themselves), replacing
/// them by that value, until none is left. Such parameters come from variables read in a loop
/// header or join that were never changed on the way.
///
/// One parameter goes at a time, the first in layout order, and the search starts again from
/// the first block (a removal can make an earlier parameter trivial). Removing parameters does
/// not change the CFG (made once), and the replaced values are read through a
/// substitution until one pass replaces them all at the end: a pass over the whole function and
/// a new CFG per removed parameter were most of the build of kernels with many loop variables.
pub(crate) fn remove_trivial_params(func: &mut Function) {
    let cfg = ControlFlowGraph::new(func);
    let entry = func.entry();
    // Per value: what a removed parameter was replaced by (not itself removed when it was).
    let mut subst: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
    let resolve = |subst: &SecondaryMap<Value, Option<Value>>, mut v: Value| {
        while let Some(n) = subst[v] {
            v = n;
        }
        v
    };
    let mut removed = false;
    loop {
        let mut found = None;
        'search: for &b in &func.layout {
            if Some(b) == entry {
                continue;
            }
            for (i, &p) in func.blocks[b].params.iter().enumerate() {
                let mut unique: Option<Value> = None;
                let mut many = false;
                for &pred in &cfg.preds[b] {
                    let Some(t) = func.terminator(pred) else {
                        continue;
                    };
                    for call in func.insts[t].branch_targets() {
                        if call.block == b {
                            let a = resolve(&subst, call.args[i]);
                            if a != p && unique.is_some_and(|u| u != a) {
                                many = true;
                            } else if a != p {
                                unique = Some(a);
                            }
                        }
                    }
                }
                if let (Some(v), false) = (unique, many) {
                    found = Some((b, i, p, v));
                    break 'search;
                }
            }
        }
        let Some((b, i, p, v)) = found else { break };
        for &pred in &cfg.preds[b] {
            if let Some(t) = func.terminator(pred) {
                for call in func.insts[t].branch_targets_mut() {
                    if call.block == b {
                        call.args.remove(i);
                    }
                }
            }
        }
        func.blocks[b].params.remove(i);
        for (k, &q) in func.blocks[b].params.iter().enumerate() {
            func.values[q].def = ValueDef::Param(b, k as u16);
        }
        func.values[p].def = ValueDef::Detached;
        subst[p] = Some(v);
        removed = true;
    }
    if removed {
        func.replace_uses(|x| resolve(&subst, x));
    }
}
