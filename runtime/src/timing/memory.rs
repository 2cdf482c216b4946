//! The memory system of the timing model: set-associative LRU caches and bandwidth-limited
//! queues, assembled per machine model.
//!
//! A request is timed when it is issued (requests reach this module in issue order): each level
//! adds its hit latency; each shared level and every DRAM channel is a queue that serves a
//! request when it is free and stays busy for `bytes / bandwidth` cycles, so latency grows under
//! load and throughput saturates at the bandwidth limits. Vector L1s are write-through (stores go
//! to L2, which acknowledges them); DRAM bandwidth is consumed by L2/MALL misses and by stores.

use kjit_backend_gcn::machine::{CacheModel, MachineModel};

/// A set-associative cache of line tags with least-recently-used replacement. Tags and use
/// stamps are 32-bit (the set index is implied by the position, so a tag is `line / sets + 1`;
/// 0 is empty): the 256 MiB MALL's 4M lines take 32 MiB of host memory.
#[derive(Clone, Debug)]
pub struct Cache {
    sets: u64,
    ways: usize,
    tags: Vec<u32>,
    stamps: Vec<u32>,
    clock: u32,
}

impl Cache {
    /// A cache of `bytes` with `line`-byte lines and `ways` ways.
    pub fn new(bytes: u64, line: u32, ways: u32) -> Cache {
        let lines = (bytes / line as u64).max(1);
        let ways = (ways as u64).clamp(1, lines) as usize;
        let sets = (lines / ways as u64).max(1);
        Cache {
            sets,
            ways,
            tags: vec![0; (sets as usize) * ways],
            stamps: vec![0; (sets as usize) * ways],
            clock: 0,
        }
    }

    /// From a machine's cache figures.
    pub fn from_model(c: &CacheModel) -> Cache {
        Cache::new(c.bytes, c.line, c.ways)
    }

    /// Looks `line` up; on a miss it is filled (evicting the least recently used way). Returns
    /// whether it hit.
    pub fn access(&mut self, line: u64) -> bool {
        self.clock = self.clock.wrapping_add(1);
        let set = (line % self.sets) as usize * self.ways;
        let tag = (line / self.sets) as u32 + 1;
        let ways = &mut self.tags[set..set + self.ways];
        if let Some(w) = ways.iter().position(|&t| t == tag) {
            self.stamps[set + w] = self.clock;
            return true;
        }
        // Ages relative to now survive the stamp counter wrapping.
        let now = self.clock;
        let stamps = &self.stamps[set..set + self.ways];
        let victim = (0..self.ways)
            .max_by_key(|&w| now.wrapping_sub(stamps[w]))
            .unwrap_or(0);
        self.tags[set + victim] = tag;
        self.stamps[set + victim] = self.clock;
        false
    }
}

/// A bandwidth-limited server: one request at a time, `bytes / rate` cycles each.
#[derive(Clone, Copy, Debug, Default)]
pub struct Queue {
    free_at: f64,
    bytes_per_clk: f64,
}

impl Queue {
    /// A queue serving `bytes_per_clk`.
    pub fn new(bytes_per_clk: f64) -> Queue {
        Queue {
            free_at: 0.0,
            bytes_per_clk,
        }
    }

    /// Serves `bytes` arriving at `t`; returns the cycle the transfer ends.
    pub fn serve(&mut self, t: u64, bytes: u32) -> u64 {
        let start = self.free_at.max(t as f64);
        self.free_at = start + bytes as f64 / self.bytes_per_clk;
        self.free_at.ceil() as u64
    }
}

/// Where a vector read was served (for tests and statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Vector L1.
    L1,
    /// L2.
    L2,
    /// Memory-side last-level cache.
    Mall,
    /// DRAM.
    Dram,
}

/// Hit counts per level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelCounts {
    /// Vector L1 hits.
    pub l1_hits: u64,
    /// L2 hits.
    pub l2_hits: u64,
    /// MALL hits.
    pub mall_hits: u64,
    /// DRAM reads (lines).
    pub dram_reads: u64,
    /// DRAM writes (lines).
    pub dram_writes: u64,
}

/// The whole device's memory system.
pub struct MemorySystem {
    m: &'static MachineModel,
    l1: Vec<Cache>,
    scalar: Vec<Cache>,
    icache: Vec<Cache>,
    l2: Vec<Cache>,
    l2_queue: Vec<Queue>,
    mall: Option<(Cache, Queue)>,
    dram: Vec<Queue>,
    /// Counts by level.
    pub counts: LevelCounts,
}

impl MemorySystem {
    /// The memory system of `m`.
    pub fn new(m: &'static MachineModel) -> MemorySystem {
        let groups = |c: &CacheModel| (m.cus as usize).div_ceil(c.shared_by.max(1) as usize);
        let per_channel = m.dram_bytes_per_clk() / m.dram_channels as f64;
        MemorySystem {
            m,
            l1: (0..m.cus).map(|_| Cache::from_model(&m.l1)).collect(),
            scalar: (0..groups(&m.scalar))
                .map(|_| Cache::from_model(&m.scalar))
                .collect(),
            icache: (0..groups(&m.icache))
                .map(|_| Cache::from_model(&m.icache))
                .collect(),
            l2: (0..m.partitions)
                .map(|_| Cache::from_model(&m.l2))
                .collect(),
            l2_queue: (0..m.partitions)
                .map(|_| Queue::new(m.l2.bytes_per_clk as f64))
                .collect(),
            mall: m
                .mall
                .as_ref()
                .map(|c| (Cache::from_model(c), Queue::new(c.bytes_per_clk as f64))),
            dram: (0..m.dram_channels)
                .map(|_| Queue::new(per_channel))
                .collect(),
            counts: LevelCounts::default(),
        }
    }

    fn dram_channel(&self, byte_addr: u64) -> usize {
        // 256-byte interleave with a simple hash of the upper bits.
        let chunk = byte_addr >> 8;
        ((chunk ^ (chunk >> 7) ^ (chunk >> 14)) % self.dram.len() as u64) as usize
    }

    /// Below L2: the MALL (if any) then DRAM, for an L2 miss of `line_addr` (byte address of an
    /// L2 line) arriving at `t`. Returns when the data is back at L2.
    fn below_l2(&mut self, line_addr: u64, t: u64) -> u64 {
        let bytes = self.m.l2.line;
        let mut t = t;
        if let Some((cache, queue)) = &mut self.mall {
            let line = line_addr / self.m.mall.map(|c| c.line as u64).unwrap_or(64);
            let lat = self.m.mall.map(|c| c.latency as u64).unwrap_or(0);
            if cache.access(line) {
                self.counts.mall_hits += 1;
                return queue.serve(t, bytes) + lat;
            }
            t += lat;
        }
        self.counts.dram_reads += 1;
        let ch = self.dram_channel(line_addr);
        self.dram[ch].serve(t, bytes) + self.m.dram_latency as u64
    }

    /// An L2 access from partition `p` for the L2 line at byte address `line_addr`.
    fn l2_read(&mut self, p: usize, line_addr: u64, t: u64) -> (u64, Level) {
        let line = line_addr / self.m.l2.line as u64;
        let done = self.l2_queue[p].serve(t, self.m.l2.line) + self.m.l2.latency as u64;
        if self.l2[p].access(line) {
            self.counts.l2_hits += 1;
            return (done, Level::L2);
        }
        let back = self.below_l2(line * self.m.l2.line as u64, done);
        let level = if back < done + self.m.dram_latency as u64 && self.m.mall.is_some() {
            Level::Mall
        } else {
            Level::Dram
        };
        (back, level)
    }

    /// A vector read of the given L1 lines (byte addresses of `l1.line`-byte lines) by CU `cu`
    /// of partition `p`, issued at `t`. Returns when the last line's data is back.
    pub fn vector_read(&mut self, cu: usize, p: usize, lines: &[u64], t: u64) -> u64 {
        let mut done = t;
        let l1_lat = self.m.l1.latency as u64;
        for (k, &addr) in lines.iter().enumerate() {
            // The L1 looks up one line per cycle.
            let at = t + k as u64;
            let line = addr / self.m.l1.line as u64;
            let d = if self.l1[cu].access(line) {
                self.counts.l1_hits += 1;
                at + l1_lat
            } else {
                self.l2_read(p, addr, at + l1_lat / 2).0 + l1_lat / 2
            };
            done = done.max(d);
        }
        done
    }

    /// A vector write of the given L1 lines: written through to L2 (allocating there), DRAM
    /// bandwidth consumed; acknowledged when L2 has it.
    pub fn vector_write(&mut self, cu: usize, p: usize, lines: &[u64], t: u64) -> u64 {
        let _ = cu;
        let mut done = t;
        let l1_lat = self.m.l1.latency as u64;
        for (k, &addr) in lines.iter().enumerate() {
            let at = t + k as u64 + l1_lat / 2;
            let line = addr / self.m.l2.line as u64;
            let ack = self.l2_queue[p].serve(at, self.m.l1.line) + self.m.l2.latency as u64;
            self.l2[p].access(line);
            self.counts.dram_writes += 1;
            let ch = self.dram_channel(addr);
            self.dram[ch].serve(at, self.m.l1.line);
            done = done.max(ack + l1_lat / 2);
        }
        done
    }

    /// A scalar load of the given scalar-cache lines by CU `cu` of partition `p`.
    pub fn scalar_read(&mut self, cu: usize, p: usize, lines: &[u64], t: u64) -> u64 {
        let group = cu / self.m.scalar.shared_by.max(1) as usize;
        let mut done = t + self.m.smem_latency as u64;
        for &addr in lines {
            let line = addr / self.m.scalar.line as u64;
            if !self.scalar[group].access(line) {
                let (d, _) = self.l2_read(p, addr, t + self.m.smem_latency as u64);
                done = done.max(d);
            }
        }
        done
    }

    /// An instruction fetch of code line `line` (64-byte lines) by CU `cu`: `None` on a hit,
    /// else when the line arrives from L2.
    pub fn fetch(&mut self, cu: usize, p: usize, line: u64, t: u64) -> Option<u64> {
        let group = cu / self.m.icache.shared_by.max(1) as usize;
        if self.icache[group].access(line) {
            return None;
        }
        Some(self.l2_read(p, line * 64, t).0)
    }

    /// The L1 line size.
    pub fn l1_line(&self) -> u64 {
        self.m.l1.line as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_keeps_the_recent_lines_and_thrashes_beyond_capacity() {
        let mut c = Cache::new(4 * 64, 64, 4);
        for l in 0..4 {
            assert!(!c.access(l));
        }
        for l in 0..4 {
            assert!(c.access(l), "line {l} should hit");
        }
        // A cyclic walk over one line more than the capacity always misses under LRU.
        let mut c = Cache::new(4 * 64, 64, 4);
        let hits = (0..50).filter(|i| c.access(i % 5)).count();
        assert_eq!(hits, 0);
    }

    #[test]
    fn queue_delays_requests_beyond_its_bandwidth() {
        let mut q = Queue::new(64.0);
        assert_eq!(q.serve(0, 128), 2);
        assert_eq!(q.serve(0, 128), 4);
        assert_eq!(q.serve(100, 64), 101);
    }
}
