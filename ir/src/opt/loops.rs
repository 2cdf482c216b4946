//! Natural loops, for the loop passes ([`super::licm`], [`super::lsr`]).
//!
//! Takes a [`Function`]; gives its natural loops (a back edge `latch -> header` where the
//! header dominates the latch, and every block that reaches the latch without passing the
//! header), innermost first, each with its dedicated preheader when it has one: the only
//! predecessor outside the loop, whose only successor is the header. The passes leave loops
//! without a preheader alone rather than make one.

use crate::cfg::{ControlFlowGraph, DominatorTree};
use crate::entities::Block;
use crate::function::Function;
use cranelift_entity::SecondaryMap;

/// One natural loop.
#[derive(Clone, Debug)]
pub struct Loop {
    /// The block every iteration starts in.
    pub header: Block,
    /// The blocks of the loop (header included), in reverse post-order.
    pub blocks: Vec<Block>,
    /// Blocks with a back edge to the header.
    pub latches: Vec<Block>,
    /// The dedicated preheader, if there is one.
    pub preheader: Option<Block>,
}

impl Loop {
    /// Whether `b` belongs to the loop.
    pub fn contains(&self, b: Block) -> bool {
        self.blocks.contains(&b)
    }
}

/// The natural loops of `func`, innermost (fewest blocks) first; loops sharing a header are one.
pub fn find_loops(func: &Function, cfg: &ControlFlowGraph, dom: &DominatorTree) -> Vec<Loop> {
    let mut rpo_index: SecondaryMap<Block, usize> = SecondaryMap::with_default(usize::MAX);
    for (k, &b) in cfg.rpo.iter().enumerate() {
        rpo_index[b] = k;
    }
    let mut loops = Vec::new();
    for &h in &cfg.rpo {
        let latches: Vec<Block> = cfg.preds[h]
            .iter()
            .copied()
            .filter(|&p| rpo_index[p] != usize::MAX && dom.dominates(h, p))
            .collect();
        if latches.is_empty() {
            continue;
        }
        let mut blocks = vec![h];
        let mut work = latches.clone();
        while let Some(b) = work.pop() {
            if blocks.contains(&b) || rpo_index[b] == usize::MAX {
                continue;
            }
            blocks.push(b);
            work.extend(cfg.preds[b].iter().copied());
        }
        blocks.sort_by_key(|&b| rpo_index[b]);
        let outside: Vec<Block> = cfg.preds[h]
            .iter()
            .copied()
            .filter(|p| !blocks.contains(p))
            .collect();
        let preheader = match outside.as_slice() {
            [p] if func.successors(*p).iter().all(|&s| s == h) => Some(*p),
            _ => None,
        };
        loops.push(Loop {
            header: h,
            blocks,
            latches,
            preheader,
        });
    }
    loops.sort_by_key(|l| l.blocks.len());
    loops
}

/// The block defining each value (instruction results and block parameters) in the layout.
pub fn def_blocks(func: &Function) -> SecondaryMap<crate::Value, Option<Block>> {
    let mut def: SecondaryMap<crate::Value, Option<Block>> = SecondaryMap::new();
    def.resize(func.values.len());
    for &b in &func.layout {
        for &p in &func.blocks[b].params {
            def[p] = Some(b);
        }
        for &i in &func.blocks[b].insts {
            for &r in &func.results[i] {
                def[r] = Some(b);
            }
        }
    }
    def
}

/// Runs a test kernel `k(s: u32, x: buf_mut<u32>)` on one workgroup of `lanes` work-items and
/// gives `x` (64 words, zeroed before) afterwards: the loop passes' tests compare it before and
/// after a pass.
#[cfg(test)]
pub(crate) fn run_u32_kernel(f: &Function, s: u32, lanes: u32) -> Vec<u32> {
    use crate::interp::{run, Arg, BufferData, LaunchDims};
    let mut args = vec![Arg::U32(s), Arg::Buffer(BufferData::U32(vec![0; 64]))];
    let launch = LaunchDims {
        grid: [1, 1, 1],
        block: [lanes, 1, 1],
        dynamic_lds: 0,
    };
    run(f, &launch, &mut args).expect("the test kernel runs");
    match args.pop() {
        Some(Arg::Buffer(BufferData::U32(x))) => x,
        other => panic!("the output buffer is gone: {other:?}"),
    }
}
