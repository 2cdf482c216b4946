//! Wave-level matrix fragments and MFMA: the part of a matrix operand or accumulator each lane
//! holds ([`Frag`]), loaded from and stored to memory, built from and taken apart into scalars,
//! carried through loops ([`FragVar`]) and accumulated by [`KernelBuilder::mfma`]. Layouts:
//! `docs/mfma.md`; [`KernelBuilder::mfma_input_coords`] and [`KernelBuilder::mfma_acc_coords`]
//! give each lane its rows and columns.
//!
//! Whether the target has the operation is known only when compiling: on a target without
//! matrix cores (gfx900) compilation fails with a message naming the operation.

use crate::builder::{KernelBuilder, Site};
use crate::memory::Memory;
use crate::types::{Index, Num, Scalar};
use crate::value::Val;
use kjit_ir::{FragType, InstData, MfmaOp, Type, Value};
use smallvec::SmallVec;
use std::panic::Location;

pub use kjit_ir::{FragElem, MFMA_OPS};

/// One lane's part of a matrix fragment (`f16x4`, `f32x16`, ...) in the kernel being built.
#[derive(Clone, Copy)]
pub struct Frag<'k> {
    k: &'k KernelBuilder,
    v: Value,
    ty: FragType,
}

impl std::fmt::Debug for Frag<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.v, self.ty)
    }
}

/// An MFMA input: a fragment (`f16x4`, `bf16x4`) or, for shapes with one element per lane, a
/// plain `f32`/`f64` value (another type is reported by the operation's type check).
#[derive(Clone, Copy)]
pub enum MfmaInput<'k> {
    /// A packed fragment.
    Frag(Frag<'k>),
    /// One element per lane.
    Scalar(Value, Type, &'k KernelBuilder),
}

impl<'k> From<Frag<'k>> for MfmaInput<'k> {
    fn from(f: Frag<'k>) -> Self {
        MfmaInput::Frag(f)
    }
}
impl<'k, T: Scalar> From<Val<'k, T>> for MfmaInput<'k> {
    fn from(v: Val<'k, T>) -> Self {
        MfmaInput::Scalar(v.v, T::TY, v.k)
    }
}

impl<'k> Frag<'k> {
    /// The fragment type.
    pub fn ty(&self) -> FragType {
        self.ty
    }

    /// The IR value.
    pub fn value(&self) -> Value {
        self.v
    }

    /// Element `item` as its carrier type `T` (`f16` for f16 and bf16 elements, `f32`, `f64`).
    #[track_caller]
    pub fn extract<T: Scalar>(&self, item: u8) -> Val<'k, T> {
        let site = Location::caller();
        if T::TY != self.ty.elem.carrier() {
            self.k.record(
                "extract",
                site,
                format!(
                    "elements of a {} fragment are {}, not {}",
                    self.ty,
                    self.ty.elem.carrier(),
                    T::TY
                ),
            );
            return self
                .k
                .emit_val("extract", site, InstData::Const { ty: T::TY, bits: 0 });
        }
        self.k
            .emit_val("extract", site, InstData::FragExtract { arg: self.v, item })
    }
}

/// A mutable fragment variable (loop-carried accumulators).
#[derive(Clone, Copy)]
pub struct FragVar<'k> {
    k: &'k KernelBuilder,
    id: usize,
    ty: FragType,
}

impl<'k> FragVar<'k> {
    /// The current value.
    #[track_caller]
    pub fn get(&self) -> Frag<'k> {
        let v = self.k.var_get(self.id, Location::caller());
        Frag {
            k: self.k,
            v,
            ty: self.ty,
        }
    }

    /// Assigns a new value (of the variable's fragment type).
    #[track_caller]
    pub fn set(&self, f: Frag<'_>) {
        let site = Location::caller();
        let v = self.k.own_frag(f, "FragVar::set", site);
        if f.ty != self.ty {
            self.k.record(
                "FragVar::set",
                site,
                format!("the variable holds {} fragments, not {}", self.ty, f.ty),
            );
            return;
        }
        self.k.var_set(self.id, v);
    }
}

impl KernelBuilder {
    fn own_frag(&self, f: Frag<'_>, call: &str, site: Site) -> Value {
        if std::ptr::eq(f.k, self) {
            f.v
        } else {
            self.record(
                call,
                site,
                format!("fragment {} comes from another kernel", f.v),
            );
            self.placeholder_value(Type::Frag(f.ty))
        }
    }

    fn frag_result(&self, call: &str, site: Site, data: InstData, ty: FragType) -> Frag<'_> {
        let v = self.emit_value(call, site, data, Type::Frag(ty));
        Frag { k: self, v, ty }
    }

    /// Loads a fragment of `ty`: `ty.len` consecutive elements from `index` (a multiple of
    /// `ty.len`) of `m`, which holds the element's carrier type (`f16` memory for bf16).
    #[track_caller]
    pub fn frag_load<'k, T: Num, I: Index>(
        &'k self,
        m: &impl Memory<'k, T>,
        index: Val<'_, I>,
        ty: FragType,
    ) -> Frag<'k> {
        let site = Location::caller();
        let index = self.own(index, "frag_load", site);
        match m.mem(false) {
            Ok(mem) => self.frag_result(
                "frag_load",
                site,
                InstData::FragLoad {
                    mem,
                    index,
                    offset: 0,
                    ty,
                },
                ty,
            ),
            Err(e) => {
                self.record("frag_load", site, e);
                Frag {
                    k: self,
                    v: self.placeholder_value(Type::Frag(ty)),
                    ty,
                }
            }
        }
    }

    /// Stores a fragment's elements consecutively from `index` (a multiple of its length).
    #[track_caller]
    pub fn frag_store<'k, T: Num, I: Index>(
        &'k self,
        m: &impl Memory<'k, T>,
        index: Val<'_, I>,
        f: Frag<'_>,
    ) {
        self.frag_store_at(m, index, 0, f)
    }

    /// [`frag_store`](Self::frag_store) at `index + offset` with a constant `offset` (a multiple
    /// of the fragment's length) kept apart from the index: it becomes the instruction's
    /// immediate offset, so stores at constant distances share one address register (the
    /// optimizer may otherwise fold the constant into the index arithmetic).
    #[track_caller]
    pub fn frag_store_at<'k, T: Num, I: Index>(
        &'k self,
        m: &impl Memory<'k, T>,
        index: Val<'_, I>,
        offset: u32,
        f: Frag<'_>,
    ) {
        let site = Location::caller();
        let index = self.own(index, "frag_store", site);
        let value = self.own_frag(f, "frag_store", site);
        match m.mem(true) {
            Ok(mem) => {
                self.emit(
                    "frag_store",
                    site,
                    InstData::FragStore {
                        mem,
                        index,
                        offset,
                        value,
                    },
                );
            }
            Err(e) => self.record("frag_store", site, e),
        }
    }

    /// A fragment of `ty` from one value per element (of the carrier type `T`).
    #[track_caller]
    pub fn frag_build<T: Scalar>(&self, ty: FragType, parts: &[Val<'_, T>]) -> Frag<'_> {
        let site = Location::caller();
        let args: SmallVec<[Value; 4]> = parts
            .iter()
            .map(|p| self.own(*p, "frag_build", site))
            .collect();
        self.frag_result("frag_build", site, InstData::FragBuild { ty, args }, ty)
    }

    /// A fragment of `ty` with every element zero.
    #[track_caller]
    pub fn frag_zero(&self, ty: FragType) -> Frag<'_> {
        let site = Location::caller();
        let carrier = ty.elem.carrier();
        let zero = self.emit_value(
            "frag_zero",
            site,
            InstData::Const {
                ty: carrier,
                bits: 0,
            },
            carrier,
        );
        let args = (0..ty.len).map(|_| zero).collect();
        self.frag_result("frag_zero", site, InstData::FragBuild { ty, args }, ty)
    }

    /// A mutable fragment variable holding `init`.
    #[track_caller]
    pub fn frag_var<'k>(&'k self, init: Frag<'_>) -> FragVar<'k> {
        let site = Location::caller();
        let v = self.own_frag(init, "frag_var", site);
        let id = self.new_var(Type::Frag(init.ty), "frag_var", v);
        FragVar {
            k: self,
            id,
            ty: init.ty,
        }
    }

    /// `D = A·B + C` over the whole wave: `a` holds this lane's part of A, `b` of B, `c` of the
    /// accumulator (`docs/mfma.md`). Every lane of the wave must be active: not inside divergent
    /// control flow (reported by [`KernelBuilder::finish`]).
    #[track_caller]
    pub fn mfma<'k>(
        &'k self,
        op: MfmaOp,
        a: impl Into<MfmaInput<'k>>,
        b: impl Into<MfmaInput<'k>>,
        c: Frag<'_>,
    ) -> Frag<'k> {
        let site = Location::caller();
        let input = |x: MfmaInput<'k>| -> Value {
            match x {
                MfmaInput::Frag(f) => self.own_frag(f, "mfma", site),
                MfmaInput::Scalar(v, t, k) => {
                    if std::ptr::eq(k, self) {
                        v
                    } else {
                        self.record(
                            "mfma",
                            site,
                            format!("operand {v} comes from another kernel"),
                        );
                        self.placeholder_value(t)
                    }
                }
            }
        };
        let args = [
            input(a.into()),
            input(b.into()),
            self.own_frag(c, "mfma", site),
        ];
        self.frag_result("mfma", site, InstData::Mfma { op, args }, op.acc_frag())
    }

    /// This lane's place in an MFMA input: `(row, k0)` — the lane holds `A[row][k0 ..
    /// k0 + len]` of the A operand (and `B[k0 .. k0 + len][row]` of B, reading `row` as the
    /// column), `len` being the input fragment's length.
    #[track_caller]
    pub fn mfma_input_coords(&self, op: MfmaOp) -> (Val<'_, u32>, Val<'_, u32>) {
        let (m, _, _) = op.dims();
        let kl = op.input_frag().len as u32;
        let lane = self.lane_id();
        (lane % m, lane / m * kl)
    }

    /// The accumulator element `item` of this lane: `(row, column)` of D.
    #[track_caller]
    pub fn mfma_acc_coords(&self, op: MfmaOp, item: u8) -> (Val<'_, u32>, Val<'_, u32>) {
        let (_, n, _) = op.dims();
        let lane = self.lane_id();
        let item = item as u32;
        let col = lane % n;
        let row = if op.acc_elem() == FragElem::F64 {
            // f64: item r of lane l is row 4r + l/16.
            lane / n + 4 * item
        } else {
            // f32: rows in groups of four; the 64/n groups of a register sit side by side.
            let g = 64 / n;
            lane / n * 4 + (4 * g * (item / 4) + item % 4)
        };
        (row, col)
    }
}
