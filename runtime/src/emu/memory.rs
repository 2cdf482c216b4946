//! Device memory of the software GCN device: a set of allocations in one 64-bit address space.
//!
//! Takes allocation requests and byte accesses by device address; gives the bytes, or a
//! [`MemFault`] naming the address when an access touches no allocation (or straddles the end of
//! one). Addresses are handed out upwards from 4 GiB, page-aligned, with an unmapped guard gap
//! after every allocation and never reused after a free, so off-by-one overruns and
//! use-after-free fault instead of silently hitting a neighbour.
//!
//! Workgroups run on several host threads at once, so the bytes are `AtomicU32` words: plain
//! kernel loads and stores are relaxed atomic accesses (ordinary moves on x86), and read-modify-write
//! atomics serialise on a striped lock keyed by the 8-byte granule, which makes 32- and 64-bit
//! atomics of any kind (integer, float, compare-swap) exact without mixed-size atomic accesses.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Lowest device address handed out; everything below faults (catches null and small offsets).
pub const HEAP_BASE: u64 = 0x1_0000_0000;
/// Allocation granularity and alignment.
const PAGE: u64 = 4096;
/// Unmapped bytes left after every allocation.
const GUARD: u64 = 64 * 1024;
/// Alignment of every allocation's base. The timing model maps addresses to cache sets and DRAM
/// channels, so a buffer's cycles would depend on the allocations made before it (the heap never
/// reuses addresses). Bases aligned beyond every model's set span (16 MiB, the MALL) and the DRAM
/// channel hash's bits (below 2^29) make those mappings the same wherever the buffer lands.
const PLACEMENT_ALIGN: u64 = 1 << 29;
/// End of the device's address space: buffer descriptors hold 48-bit bases.
const HEAP_END: u64 = 1 << 48;
/// Number of locks atomics are spread over.
const STRIPES: usize = 64;

/// A memory access that missed every allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemFault {
    /// First byte of the access.
    pub addr: u64,
    /// Bytes accessed.
    pub size: u64,
    /// Whether the access wrote.
    pub write: bool,
}

impl std::fmt::Display for MemFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} byte(s) at {:#x} outside every allocation",
            if self.write { "write" } else { "read" },
            self.size,
            self.addr
        )
    }
}

/// One allocation: its address range and its words.
pub struct Allocation {
    /// First device address.
    pub base: u64,
    /// Size in bytes as requested.
    pub size: u64,
    words: Box<[AtomicU32]>,
}

impl Allocation {
    fn new(base: u64, size: u64) -> Allocation {
        let n = size.div_ceil(4) as usize;
        let words = (0..n)
            .map(|_| AtomicU32::new(0))
            .collect::<Vec<_>>()
            .into_boxed_slice();
        Allocation { base, size, words }
    }

    /// End address (exclusive).
    pub fn end(&self) -> u64 {
        self.base + self.size
    }

    /// Reads the word holding byte offset `off` (word-aligned offset).
    #[inline(always)]
    pub(crate) fn word(&self, off: u64) -> u32 {
        self.words[(off >> 2) as usize].load(Ordering::Relaxed)
    }

    #[inline(always)]
    pub(crate) fn set_word(&self, off: u64, v: u32) {
        self.words[(off >> 2) as usize].store(v, Ordering::Relaxed)
    }

    /// Reads `out.len()` bytes at byte offset `off` (caller checked the range).
    fn read_bytes(&self, off: u64, out: &mut [u8]) {
        let mut i = 0usize;
        let n = out.len();
        while i < n {
            let o = off + i as u64;
            let w = self.word(o & !3).to_le_bytes();
            let start = (o & 3) as usize;
            let take = (4 - start).min(n - i);
            out[i..i + take].copy_from_slice(&w[start..start + take]);
            i += take;
        }
    }

    /// Writes `data` at byte offset `off` (caller checked the range). Partial words are merged
    /// with a compare-exchange so that neighbouring bytes written by other threads survive.
    fn write_bytes(&self, off: u64, data: &[u8]) {
        let mut i = 0usize;
        let n = data.len();
        while i < n {
            let o = off + i as u64;
            let start = (o & 3) as usize;
            let take = (4 - start).min(n - i);
            if start == 0 && take == 4 {
                let v = u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
                self.set_word(o, v);
            } else {
                let cell = &self.words[(o >> 2) as usize];
                let mut cur = cell.load(Ordering::Relaxed);
                loop {
                    let mut b = cur.to_le_bytes();
                    b[start..start + take].copy_from_slice(&data[i..i + take]);
                    let new = u32::from_le_bytes(b);
                    match cell.compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
                    {
                        Ok(_) => break,
                        Err(x) => cur = x,
                    }
                }
            }
            i += take;
        }
    }
}

/// A consistent view of all allocations, taken at the start of a launch. Lookups go through a
/// small per-wave cache ([`AddrCache`]) because consecutive lanes almost always hit the same
/// allocation.
#[derive(Clone)]
pub struct MemoryView {
    allocs: Arc<Vec<Arc<Allocation>>>,
    stripes: Arc<[Mutex<()>; STRIPES]>,
}

/// The last allocation an access hit; checked first by the next access. It holds the
/// allocation's index in the view rather than a reference count: cloning an `Arc` on every
/// access made the host threads fight over the count's cache line. An index from another view
/// is harmless: the range check against whatever allocation it names decides.
#[derive(Default)]
pub struct AddrCache {
    hit: Option<usize>,
}

impl MemoryView {
    /// The cached allocation, if the cache names one of this view.
    #[inline(always)]
    fn cached(&self, cache: &AddrCache) -> Option<&Allocation> {
        cache.hit.and_then(|i| self.allocs.get(i)).map(|a| &**a)
    }

    /// The allocation containing `[addr, addr+size)`, if one does.
    #[inline]
    pub fn find(
        &self,
        cache: &mut AddrCache,
        addr: u64,
        size: u64,
        write: bool,
    ) -> Result<&Allocation, MemFault> {
        if let Some(a) = self.cached(cache) {
            if addr >= a.base
                && addr.wrapping_add(size) <= a.end()
                && addr.checked_add(size).is_some()
            {
                return Ok(a);
            }
        }
        let fault = MemFault { addr, size, write };
        let idx = self.allocs.partition_point(|a| a.base <= addr);
        if idx == 0 {
            return Err(fault);
        }
        let a = &self.allocs[idx - 1];
        match addr.checked_add(size) {
            Some(end) if end <= a.end() => {
                cache.hit = Some(idx - 1);
                Ok(a)
            }
            _ => Err(fault),
        }
    }

    /// Runs `f` with direct access to the allocation and offset of `[addr, addr+size)`.
    #[inline]
    fn with<R>(
        &self,
        cache: &mut AddrCache,
        addr: u64,
        size: u64,
        write: bool,
        f: impl FnOnce(&Allocation, u64) -> R,
    ) -> Result<R, MemFault> {
        if let Some(a) = self.cached(cache) {
            if addr >= a.base && addr <= a.end() && size <= a.end() - addr {
                return Ok(f(a, addr - a.base));
            }
        }
        let a = self.find(cache, addr, size, write)?;
        Ok(f(a, addr - a.base))
    }

    /// Where `addr`, which no allocation holds, lies relative to the nearest allocations: "N
    /// bytes past the end of the S-byte allocation at B" or "N bytes before the S-byte allocation
    /// at B" (for fault messages), or `None` with no allocation at all.
    pub fn near(&self, addr: u64) -> Option<String> {
        let idx = self.allocs.partition_point(|a| a.base <= addr);
        let below = idx
            .checked_sub(1)
            .map(|i| &self.allocs[i])
            .filter(|a| addr >= a.end())
            .map(|a| (addr - a.end(), a, "past the end of"));
        let above = self.allocs.get(idx).map(|a| (a.base - addr, a, "before"));
        let (dist, a, where_) = match (below, above) {
            (Some(b), Some(c)) => {
                if b.0 <= c.0 {
                    b
                } else {
                    c
                }
            }
            (b, c) => b.or(c)?,
        };
        Some(format!(
            "{dist} bytes {where_} the {}-byte allocation at {:#x}",
            a.size, a.base
        ))
    }

    /// The allocation that holds all of `[lo, hi)`, if one does (for accesses of a whole wave
    /// that fall in one buffer: one lookup instead of one per lane).
    #[inline]
    pub fn span(&self, cache: &mut AddrCache, lo: u64, hi: u64) -> Option<&Allocation> {
        if let Some(a) = self.cached(cache) {
            if lo >= a.base && hi <= a.end() && lo <= hi {
                return Some(a);
            }
        }
        self.find(cache, lo, hi.checked_sub(lo)?, false).ok()
    }

    /// Loads a little-endian dword.
    #[inline]
    pub fn read_u32(&self, cache: &mut AddrCache, addr: u64) -> Result<u32, MemFault> {
        self.with(cache, addr, 4, false, |a, off| {
            if off & 3 == 0 {
                a.word(off)
            } else {
                let mut b = [0u8; 4];
                a.read_bytes(off, &mut b);
                u32::from_le_bytes(b)
            }
        })
    }

    /// Stores a little-endian dword.
    #[inline]
    pub fn write_u32(&self, cache: &mut AddrCache, addr: u64, v: u32) -> Result<(), MemFault> {
        self.with(cache, addr, 4, true, |a, off| {
            if off & 3 == 0 {
                a.set_word(off, v)
            } else {
                a.write_bytes(off, &v.to_le_bytes())
            }
        })
    }

    /// Loads `out.len()` bytes.
    pub fn read(&self, cache: &mut AddrCache, addr: u64, out: &mut [u8]) -> Result<(), MemFault> {
        self.with(cache, addr, out.len() as u64, false, |a, off| {
            a.read_bytes(off, out)
        })
    }

    /// Stores `data`.
    pub fn write(&self, cache: &mut AddrCache, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        self.with(cache, addr, data.len() as u64, true, |a, off| {
            a.write_bytes(off, data)
        })
    }

    /// Atomically replaces the `size`-byte (4 or 8) value at `addr` by `f(old)` and returns `old`.
    /// All atomics on the same 8-byte granule serialise on one lock.
    pub fn atomic_rmw(
        &self,
        cache: &mut AddrCache,
        addr: u64,
        size: u64,
        f: impl FnOnce(u64) -> u64,
    ) -> Result<u64, MemFault> {
        let a = self.find(cache, addr, size, true)?;
        let off = addr - a.base;
        let stripe = ((addr >> 3) as usize) % STRIPES;
        let _guard = self.stripes[stripe]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut b = [0u8; 8];
        a.read_bytes(off, &mut b[..size as usize]);
        let old = u64::from_le_bytes(b);
        let new = f(old);
        a.write_bytes(off, &new.to_le_bytes()[..size as usize]);
        Ok(old)
    }
}

/// All device memory of one software device.
pub struct Memory {
    view: RwLock<MemoryView>,
    next: Mutex<u64>,
}

impl Default for Memory {
    fn default() -> Self {
        Memory::new()
    }
}

impl Memory {
    /// An empty address space.
    pub fn new() -> Memory {
        Memory {
            view: RwLock::new(MemoryView {
                allocs: Arc::new(Vec::new()),
                stripes: Arc::new(std::array::from_fn(|_| Mutex::new(()))),
            }),
            next: Mutex::new(HEAP_BASE),
        }
    }

    /// A snapshot of the current allocations for a launch.
    pub fn view(&self) -> MemoryView {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Allocates `size` bytes (zeroed) and returns the base address.
    pub fn alloc(&self, size: u64) -> Result<u64, String> {
        if size > (1u64 << 40) {
            return Err(format!(
                "allocation of {size} bytes is larger than the device allows (1 TiB)"
            ));
        }
        let base = {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            let base = next.next_multiple_of(PLACEMENT_ALIGN);
            let end = base + size.max(1).div_ceil(PAGE) * PAGE + GUARD;
            if end > HEAP_END {
                return Err(format!(
                    "allocation of {size} bytes: the device's 48-bit address space is used up"
                ));
            }
            *next = end;
            base
        };
        let a = Arc::new(Allocation::new(base, size));
        let mut view = self.view.write().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<Arc<Allocation>> = (*view.allocs).clone();
        let idx = v.partition_point(|x| x.base < base);
        v.insert(idx, a);
        view.allocs = Arc::new(v);
        Ok(base)
    }

    /// Frees the allocation starting at `base`.
    pub fn free(&self, base: u64) -> Result<(), String> {
        let mut view = self.view.write().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<Arc<Allocation>> = (*view.allocs).clone();
        match v.iter().position(|a| a.base == base) {
            Some(i) => {
                v.remove(i);
                view.allocs = Arc::new(v);
                Ok(())
            }
            None => Err(format!("no allocation starts at {base:#x}")),
        }
    }

    /// Size of the allocation starting at `base`.
    pub fn size_of(&self, base: u64) -> Option<u64> {
        let view = self.view();
        view.allocs.iter().find(|a| a.base == base).map(|a| a.size)
    }

    /// Host write into device memory.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemFault> {
        self.view().write(&mut AddrCache::default(), addr, data)
    }

    /// Host read from device memory.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), MemFault> {
        self.view().read(&mut AddrCache::default(), addr, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_is_described_by_the_nearest_allocation() {
        let m = Memory::new();
        assert_eq!(m.view().near(HEAP_BASE), None);
        let a = m.alloc(10).unwrap();
        let b = m.alloc(4096).unwrap();
        let v = m.view();
        assert_eq!(
            v.near(a + 12).unwrap(),
            format!("2 bytes past the end of the 10-byte allocation at {a:#x}")
        );
        assert_eq!(
            v.near(b - 8).unwrap(),
            format!("8 bytes before the 4096-byte allocation at {b:#x}")
        );
        assert_eq!(
            v.near(a - 1).unwrap(),
            format!("1 bytes before the 10-byte allocation at {a:#x}")
        );
    }

    #[test]
    fn accesses_inside_allocations_round_trip_and_outside_fault() {
        let m = Memory::new();
        let a = m.alloc(10).unwrap();
        let b = m.alloc(4096).unwrap();
        assert!(b >= a + 10 + GUARD, "guard gap between allocations");
        m.write(a + 1, &[1, 2, 3, 4, 5]).unwrap();
        let mut out = [0u8; 10];
        m.read(a, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 4, 5, 0, 0, 0, 0]);
        // One past the end faults, as does a straddling access and a read below the heap.
        assert!(m.read(a + 10, &mut [0u8; 1]).is_err());
        assert_eq!(
            m.read(a + 8, &mut [0u8; 4]).unwrap_err(),
            MemFault {
                addr: a + 8,
                size: 4,
                write: false
            }
        );
        assert!(m.read(0, &mut [0u8; 4]).is_err());
        let v = m.view();
        let mut c = AddrCache::default();
        v.write_u32(&mut c, b + 4, 0xdead_beef).unwrap();
        assert_eq!(v.read_u32(&mut c, b + 4).unwrap(), 0xdead_beef);
        assert_eq!(v.read_u32(&mut c, b + 5).unwrap(), 0x00de_adbe);
        // Freed memory faults even through a stale cache of a new view.
        m.free(b).unwrap();
        let v2 = m.view();
        assert!(v2.read_u32(&mut AddrCache::default(), b).is_err());
    }

    #[test]
    fn atomics_from_many_threads_are_exact() {
        let m = Memory::new();
        let a = m.alloc(16).unwrap();
        let v = m.view();
        std::thread::scope(|s| {
            for _ in 0..4 {
                let v = v.clone();
                s.spawn(move || {
                    let mut c = AddrCache::default();
                    for _ in 0..1000 {
                        v.atomic_rmw(&mut c, a, 4, |x| x + 1).unwrap();
                        v.atomic_rmw(&mut c, a + 8, 8, |x| x + (1 << 32)).unwrap();
                    }
                });
            }
        });
        let mut c = AddrCache::default();
        assert_eq!(v.read_u32(&mut c, a).unwrap(), 4000);
        assert_eq!(v.read_u32(&mut c, a + 12).unwrap(), 4000);
    }
}
