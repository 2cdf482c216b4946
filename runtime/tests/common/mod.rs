//! Scaffolding shared by the runtime's device tests: a deterministic input generator, byte
//! conversions, and one software device with one loaded module. Each test file adds the
//! launch helper (or extra generator methods) it needs in its own `impl` block.
#![allow(dead_code)]

use kjit_runtime::emu::GcnEmulator;
use kjit_runtime::{Device, DeviceBuffer, ModuleId};

/// A tiny deterministic generator for inputs (xorshift64): the same seed gives the same inputs
/// on every run, so a failure reproduces.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// 32 random bits (the high half of [`Rng::next`]).
    pub fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }
}

/// The bytes of a slice of plain numbers, as the device stores them (little-endian host).
pub fn bytes<T: Copy>(v: &[T]) -> Vec<u8> {
    let n = std::mem::size_of_val(v);
    let mut out = vec![0u8; n];
    // SAFETY: T is a plain number type here; we copy its bytes.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr() as *const u8, out.as_mut_ptr(), n) };
    out
}

/// Plain numbers from device bytes (a trailing partial element is dropped).
pub fn from<T: Copy + Default>(b: &[u8]) -> Vec<T> {
    let n = b.len() / std::mem::size_of::<T>();
    let mut out = vec![T::default(); n];
    // SAFETY: sizes match; plain number types.
    unsafe {
        std::ptr::copy_nonoverlapping(
            b.as_ptr(),
            out.as_mut_ptr() as *mut u8,
            n * std::mem::size_of::<T>(),
        )
    };
    out
}

/// One software device with one module, and helpers to move data.
pub struct Dev {
    /// The device.
    pub dev: GcnEmulator,
    /// The loaded code object.
    pub module: ModuleId,
    /// The code object's target, for messages.
    pub target: &'static str,
}

impl Dev {
    /// Loads `code` on a fresh device (panics, naming `target`, if it does not load).
    pub fn new(code: &[u8], target: &'static str) -> Dev {
        let dev = GcnEmulator::new();
        let module = dev
            .load_module(code)
            .unwrap_or_else(|e| panic!("{target}: load: {e}"));
        Dev {
            dev,
            module,
            target,
        }
    }

    /// A buffer holding `v`.
    pub fn input<T: Copy>(&self, v: &[T]) -> DeviceBuffer {
        let b = self.dev.alloc(std::mem::size_of_val(v) as u64).unwrap();
        self.dev.copy_to_device(b, 0, &bytes(v)).unwrap();
        b
    }

    /// An output buffer of `n` bytes, poisoned with 0xCD so an unwritten element shows.
    pub fn output(&self, n: usize) -> DeviceBuffer {
        let b = self.dev.alloc(n as u64).unwrap();
        self.dev.copy_to_device(b, 0, &vec![0xcd; n]).unwrap();
        b
    }

    /// The whole buffer `b` as plain numbers.
    pub fn read<T: Copy + Default>(&self, b: DeviceBuffer) -> Vec<T> {
        let mut out = vec![0u8; b.size as usize];
        self.dev.copy_from_device(b, 0, &mut out).unwrap();
        from(&out)
    }
}
