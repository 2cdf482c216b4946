//! A cache of values made once per key and shared by threads: the compile caches of a
//! [`crate::compile::Selected`] kernel and of a register [`crate::regalloc::Allocator`].
//!
//! A tuner compiles a kernel's occupancy levels on several threads over one `Selected`; two
//! levels often need the same schedule, regalloc2 run or allocation. With a plain
//! `Mutex<HashMap>` both threads would miss and make it, doubling the most expensive work of a
//! tuning. Here the second thread waits for the first's value instead.
//!
//! Deadlock: a thread waits only on a key another thread is making. A cycle of such waits
//! means making one key needs itself, which single-threaded would recurse without end; the
//! compile's keys depend only on the key (a budget's allocation on smaller ladder budgets, a
//! schedule's allocation on that schedule), so there is no cycle.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};

/// Values by key, each made once (see the module doc).
pub(crate) struct Memo<K, V> {
    cells: Mutex<HashMap<K, Arc<OnceLock<V>>>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo {
            cells: Mutex::new(HashMap::new()),
        }
    }
}

impl<K, V> std::fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.cells.lock().map(|c| c.len()).unwrap_or(0);
        write!(f, "Memo({n} keys)")
    }
}

impl<K: Eq + Hash, V: Clone> Memo<K, V> {
    /// The value for `key`: a clone of the one made before, else `make()`'s (made by this
    /// thread, or by another one already making it, then waited for). The map's lock is not
    /// held while `make` runs: it may ask the same memo for other keys.
    pub(crate) fn get_or_make(&self, key: K, make: impl FnOnce() -> V) -> V {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
            cells.entry(key).or_default().clone()
        };
        cell.get_or_init(make).clone()
    }

    /// The value made for `key`, if one was (none is made here).
    pub(crate) fn made_value(&self, key: &K) -> Option<V> {
        let cell = {
            let cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
            cells.get(key).cloned()
        };
        cell.and_then(|c| c.get().cloned())
    }

    /// Every (key, value) made so far, for searches over the cache.
    pub(crate) fn made(&self) -> Vec<(K, V)>
    where
        K: Clone,
    {
        let cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
        cells
            .iter()
            .filter_map(|(k, c)| c.get().map(|v| (k.clone(), v.clone())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Memo;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn two_threads_asking_for_one_key_make_it_once() {
        let memo: Memo<u32, u32> = Memo::default();
        let made = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let v = memo.get_or_make(7, || {
                        made.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        49
                    });
                    assert_eq!(v, 49);
                });
            }
        });
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(memo.made(), vec![(7, 49)]);
    }

    #[test]
    fn making_a_value_may_ask_for_other_keys() {
        let memo: Memo<u32, u64> = Memo::default();
        fn fib(m: &Memo<u32, u64>, n: u32) -> u64 {
            m.get_or_make(n, || {
                if n < 2 {
                    n as u64
                } else {
                    fib(m, n - 1) + fib(m, n - 2)
                }
            })
        }
        assert_eq!(fib(&memo, 50), 12_586_269_025);
        assert_eq!(memo.made().len(), 51);
    }
}
