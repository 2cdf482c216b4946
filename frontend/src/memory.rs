//! Memory: global buffers (address + length, bounds-checked by construction) and workgroup
//! (LDS) arrays; loads, stores of 1, 2 or 4 elements, and atomics.

use crate::builder::{KernelBuilder, Site};
use crate::types::{Index, Num};
use crate::value::Val;
use kjit_ir::{AtomicOp, InstData, LdsArray, Mem, Type, Value};
use smallvec::SmallVec;
use std::marker::PhantomData;
use std::panic::Location;

/// A global buffer argument of `T`s. Out-of-range loads give 0 and out-of-range stores are
/// dropped, as the hardware's raw buffer descriptors do.
pub struct Buffer<'k, T> {
    k: &'k KernelBuilder,
    v: Value,
    name: String,
    writable: bool,
    _t: PhantomData<T>,
}

/// A workgroup-memory array of `T`s, with a static size or sized at launch
/// ([`KernelBuilder::dynamic_lds`]).
pub struct Lds<'k, T> {
    k: &'k KernelBuilder,
    a: Option<LdsArray>,
    name: String,
    _t: PhantomData<T>,
}

/// Something loads and stores can address: a [`Buffer`] or an [`Lds`] array.
pub trait Memory<'k, T: Num> {
    /// The builder it belongs to.
    fn builder(&self) -> &'k KernelBuilder;
    /// The IR memory operand, or an error message.
    fn mem(&self, write: bool) -> Result<Mem, String>;
}

impl<'k, T: Num> Memory<'k, T> for Buffer<'k, T> {
    fn builder(&self) -> &'k KernelBuilder {
        self.k
    }
    fn mem(&self, write: bool) -> Result<Mem, String> {
        if write && !self.writable {
            Err(format!(
                "buffer `{}` is read-only (declare it with buffer_mut to write it)",
                self.name
            ))
        } else {
            Ok(Mem::Global(self.v))
        }
    }
}

impl<'k, T: Num> Memory<'k, T> for Lds<'k, T> {
    fn builder(&self) -> &'k KernelBuilder {
        self.k
    }
    fn mem(&self, _write: bool) -> Result<Mem, String> {
        self.a
            .map(Mem::Lds)
            .ok_or_else(|| format!("LDS array `{}` was not created", self.name))
    }
}

impl<'k, T: Num> Buffer<'k, T> {
    /// The length in elements.
    #[track_caller]
    pub fn len(&self) -> Val<'k, u32> {
        self.k.emit_val(
            "len",
            Location::caller(),
            InstData::BufferLen { buf: self.v },
        )
    }
}

impl<'k, T: Num> Lds<'k, T> {
    /// Whether the array has no static elements (when its declaration failed, or it is the
    /// dynamic array).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The static number of elements (0 for the dynamic array, whose size is the launch's).
    pub fn len(&self) -> u32 {
        match self.a {
            Some(a) => self.k.inner.borrow().func.lds[a].len,
            None => 0,
        }
    }
}

impl KernelBuilder {
    /// A read-only global buffer argument.
    #[track_caller]
    pub fn buffer<T: Num>(&self, name: &str) -> Buffer<'_, T> {
        let ty = Type::Buffer {
            elem: T::ELEM,
            writable: false,
        };
        let v = self.add_param(name, ty, "buffer", Location::caller());
        Buffer {
            k: self,
            v,
            name: name.to_string(),
            writable: false,
            _t: PhantomData,
        }
    }

    /// A writable global buffer argument.
    #[track_caller]
    pub fn buffer_mut<T: Num>(&self, name: &str) -> Buffer<'_, T> {
        let ty = Type::Buffer {
            elem: T::ELEM,
            writable: true,
        };
        let v = self.add_param(name, ty, "buffer_mut", Location::caller());
        Buffer {
            k: self,
            v,
            name: name.to_string(),
            writable: true,
            _t: PhantomData,
        }
    }

    /// A workgroup-memory array of `len` elements. All of a kernel's arrays together must fit
    /// in 64 KiB.
    #[track_caller]
    pub fn lds<T: Num>(&self, name: &str, len: u32) -> Lds<'_, T> {
        let a = self.add_lds(name, T::ELEM, Some(len), Location::caller());
        Lds {
            k: self,
            a,
            name: name.to_string(),
            _t: PhantomData,
        }
    }

    /// The kernel's one dynamic workgroup-memory array: placed after all static arrays, its
    /// size is the launch's dynamic LDS bytes (`Launch::dynamic_lds` in `kjit`). Indexed like
    /// [`lds`](Self::lds) arrays; an index past the launch's size is the device's (or the
    /// interpreter's) out-of-range LDS error. [`Lds::len`] is 0 for it.
    #[track_caller]
    pub fn dynamic_lds<T: Num>(&self, name: &str) -> Lds<'_, T> {
        let a = self.add_lds(name, T::ELEM, None, Location::caller());
        Lds {
            k: self,
            a,
            name: name.to_string(),
            _t: PhantomData,
        }
    }

    fn check_mem<'k, T: Num>(
        &self,
        m: &dyn Memory<'k, T>,
        write: bool,
        call: &str,
        site: Site,
    ) -> Option<Mem> {
        if !std::ptr::eq(m.builder(), self) {
            self.record(
                call,
                site,
                format!(
                    "the memory operand comes from another kernel (`{}`)",
                    m.builder().name()
                ),
            );
            return None;
        }
        match m.mem(write) {
            Ok(x) => Some(x),
            Err(e) => {
                self.record(call, site, e);
                None
            }
        }
    }

    fn load_n<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        width: u8,
        call: &str,
        site: Site,
    ) -> SmallVec<[Val<'k, T>; 4]> {
        let index = self.own(i, call, site);
        let poison = |k: &'k KernelBuilder| -> SmallVec<[Val<'k, T>; 4]> {
            (0..width)
                .map(|_| k.emit_val(call, site, InstData::Const { ty: T::TY, bits: 0 }))
                .collect()
        };
        let Some(mem) = self.check_mem(m, false, call, site) else {
            return poison(self);
        };
        match self.emit(
            call,
            site,
            InstData::Load {
                mem,
                index,
                offset: 0,
                width,
            },
        ) {
            Some(inst) => {
                let rs = self.inner.borrow().func.results[inst].clone();
                rs.iter().map(|r| Val::new(self, *r)).collect()
            }
            None => poison(self),
        }
    }

    /// Loads element `i`.
    #[track_caller]
    pub fn load<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
    ) -> Val<'k, T> {
        self.load_n(m, i, 1, "load", Location::caller())[0]
    }
    /// Loads elements `i` and `i+1`.
    #[track_caller]
    pub fn load2<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
    ) -> [Val<'k, T>; 2] {
        let v = self.load_n(m, i, 2, "load2", Location::caller());
        [v[0], v[1]]
    }
    /// Loads elements `i..i+4`.
    #[track_caller]
    pub fn load4<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
    ) -> [Val<'k, T>; 4] {
        let v = self.load_n(m, i, 4, "load4", Location::caller());
        [v[0], v[1], v[2], v[3]]
    }

    fn store_n<T: Num, I: Index>(
        &self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        vs: &[Val<'_, T>],
        call: &str,
        site: Site,
    ) {
        let index = self.own(i, call, site);
        let values: SmallVec<[Value; 4]> = vs.iter().map(|v| self.own(*v, call, site)).collect();
        if let Some(mem) = self.check_mem(m, true, call, site) {
            self.emit(
                call,
                site,
                InstData::Store {
                    mem,
                    index,
                    offset: 0,
                    values,
                },
            );
        }
    }

    /// Stores `v` at element `i`.
    #[track_caller]
    pub fn store<T: Num, I: Index>(&self, m: &dyn Memory<'_, T>, i: Val<'_, I>, v: Val<'_, T>) {
        self.store_n(m, i, &[v], "store", Location::caller())
    }
    /// Stores two elements at `i`, `i+1`.
    #[track_caller]
    pub fn store2<T: Num, I: Index>(
        &self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        v: [Val<'_, T>; 2],
    ) {
        self.store_n(m, i, &v, "store2", Location::caller())
    }
    /// Stores four elements at `i..i+4`.
    #[track_caller]
    pub fn store4<T: Num, I: Index>(
        &self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        v: [Val<'_, T>; 4],
    ) {
        self.store_n(m, i, &v, "store4", Location::caller())
    }

    fn atomic<'k, T: Num, I: Index>(
        &'k self,
        op: AtomicOp,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        vs: &[Val<'_, T>],
        call: &str,
        site: Site,
    ) -> Val<'k, T> {
        let index = self.own(i, call, site);
        let args: SmallVec<[Value; 2]> = vs.iter().map(|v| self.own(*v, call, site)).collect();
        match self.check_mem(m, true, call, site) {
            Some(mem) => self.emit_val(
                call,
                site,
                InstData::Atomic {
                    op,
                    mem,
                    index,
                    offset: 0,
                    args,
                },
            ),
            None => self.emit_val(call, site, InstData::Const { ty: T::TY, bits: 0 }),
        }
    }

    /// Atomically adds `v` to element `i`; returns the old value.
    #[track_caller]
    pub fn atomic_add<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        v: Val<'_, T>,
    ) -> Val<'k, T> {
        self.atomic(AtomicOp::Add, m, i, &[v], "atomic_add", Location::caller())
    }
    /// Atomic minimum (integers); returns the old value.
    #[track_caller]
    pub fn atomic_min<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        v: Val<'_, T>,
    ) -> Val<'k, T> {
        self.atomic(AtomicOp::Min, m, i, &[v], "atomic_min", Location::caller())
    }
    /// Atomic maximum (integers); returns the old value.
    #[track_caller]
    pub fn atomic_max<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        v: Val<'_, T>,
    ) -> Val<'k, T> {
        self.atomic(AtomicOp::Max, m, i, &[v], "atomic_max", Location::caller())
    }
    /// Atomic exchange; returns the old value.
    #[track_caller]
    pub fn atomic_xchg<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        v: Val<'_, T>,
    ) -> Val<'k, T> {
        self.atomic(
            AtomicOp::Xchg,
            m,
            i,
            &[v],
            "atomic_xchg",
            Location::caller(),
        )
    }
    /// Atomic compare-exchange: stores `new` if the element equals `expected`; returns the old
    /// value.
    #[track_caller]
    pub fn atomic_cas<'k, T: Num, I: Index>(
        &'k self,
        m: &dyn Memory<'_, T>,
        i: Val<'_, I>,
        expected: Val<'_, T>,
        new: Val<'_, T>,
    ) -> Val<'k, T> {
        self.atomic(
            AtomicOp::Cas,
            m,
            i,
            &[expected, new],
            "atomic_cas",
            Location::caller(),
        )
    }
}
