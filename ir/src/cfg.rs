//! Control-flow graph facts: predecessors, reverse post-order, dominators and post-dominators.
//!
//! Takes a [`Function`]; gives the tables the verifier (SSA dominance), the uniformity analysis
//! (where divergent paths join) and the interpreter (where lanes reconverge: at the immediate
//! post-dominator of a divergent branch) need. Dominators use the Cooper–Harvey–Kennedy
//! iteration over reverse post-order.

use crate::entities::Block;
use crate::function::Function;
use cranelift_entity::{EntityRef, SecondaryMap};
use smallvec::SmallVec;

/// Successors and predecessors of each block in the layout.
///
/// The lists are held inline (most blocks have one or two of each): a CFG is made a dozen
/// times per compile, and a vector per block per list was most of its cost.
#[derive(Clone, Debug, Default)]
pub struct ControlFlowGraph {
    /// Successors, deduplicated, in branch order.
    pub succs: SecondaryMap<Block, SmallVec<[Block; 2]>>,
    /// Predecessors, deduplicated.
    pub preds: SecondaryMap<Block, SmallVec<[Block; 2]>>,
    /// Blocks reachable from the entry, in reverse post-order.
    pub rpo: Vec<Block>,
}

impl ControlFlowGraph {
    /// Builds the graph of `func`'s layout.
    pub fn new(func: &Function) -> Self {
        let mut cfg = ControlFlowGraph::default();
        // Sized once (indexing past the end grows a map one block at a time).
        let n = func.blocks.len();
        cfg.succs.resize(n);
        cfg.preds.resize(n);
        for &b in &func.layout {
            let mut s = func.successors(b);
            // Deduplicated in branch order (the first of equal targets stays).
            let mut k = 0;
            while k < s.len() {
                if s[..k].contains(&s[k]) {
                    s.remove(k);
                } else {
                    k += 1;
                }
            }
            for &t in &s {
                if !cfg.preds[t].contains(&b) {
                    cfg.preds[t].push(b);
                }
            }
            cfg.succs[b] = s;
        }
        if let Some(entry) = func.entry() {
            let mut seen = vec![false; n];
            let mut post = Vec::with_capacity(n);
            // Iterative DFS: (block, next successor index).
            let mut stack = vec![(entry, 0usize)];
            seen[entry.index()] = true;
            while let Some((b, i)) = stack.pop() {
                if i < cfg.succs[b].len() {
                    stack.push((b, i + 1));
                    let s = cfg.succs[b][i];
                    if !seen[s.index()] {
                        seen[s.index()] = true;
                        stack.push((s, 0));
                    }
                } else {
                    post.push(b);
                }
            }
            post.reverse();
            cfg.rpo = post;
        }
        cfg
    }

    /// Whether `b` is reachable from the entry.
    pub fn is_reachable(&self, b: Block) -> bool {
        self.rpo.contains(&b)
    }
}

/// Immediate dominators over node indices `0..n` (Cooper–Harvey–Kennedy): `order` is the
/// reachable nodes in reverse post-order from the root (`order[0]`), `preds(b, f)` calls `f`
/// with each predecessor of `b`. Returns `idom[n]` (the root is its own idom; unreachable
/// nodes get `None`). The fixed point is the dominator tree whatever order the predecessors
/// come in, so callers pass the lists they already have.
fn dominators(
    n: usize,
    order: &[usize],
    preds: &dyn Fn(usize, &mut dyn FnMut(usize)),
) -> Vec<Option<usize>> {
    let mut idom: Vec<Option<usize>> = vec![None; n];
    let Some(&root) = order.first() else {
        return idom;
    };
    let mut rpo_index = vec![usize::MAX; n];
    for (i, &b) in order.iter().enumerate() {
        rpo_index[b] = i;
    }
    idom[root] = Some(root);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new: Option<usize> = None;
            preds(b, &mut |p| {
                // Unreachable predecessors (no RPO index) and those not processed yet.
                if rpo_index[p] == usize::MAX || idom[p].is_none() {
                    return;
                }
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while rpo_index[a] > rpo_index[c] {
                                a = idom[a].unwrap_or(root);
                            }
                            while rpo_index[c] > rpo_index[a] {
                                c = idom[c].unwrap_or(root);
                            }
                        }
                        a
                    }
                });
            });
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

/// The dominator tree of the reachable blocks.
#[derive(Clone, Debug, Default)]
pub struct DominatorTree {
    idom: SecondaryMap<Block, Option<Block>>,
    depth: SecondaryMap<Block, u32>,
}

impl DominatorTree {
    /// Computes dominators of `func` from its CFG (its reverse post-order and predecessors).
    pub fn new(func: &Function, cfg: &ControlFlowGraph) -> Self {
        let mut dt = DominatorTree::default();
        let Some(entry) = func.entry() else { return dt };
        let n = func.blocks.len();
        dt.idom.resize(n);
        dt.depth.resize(n);
        let order: Vec<usize> = cfg.rpo.iter().map(|b| b.index()).collect();
        debug_assert_eq!(order.first(), Some(&entry.index()));
        let idom = dominators(n, &order, &|b, f| {
            for p in &cfg.preds[Block::new(b)] {
                f(p.index());
            }
        });
        for &i in &order {
            let b = Block::new(i);
            if i == entry.index() {
                dt.idom[b] = None;
                dt.depth[b] = 0;
            } else if let Some(d) = idom[i] {
                let d = Block::new(d);
                dt.idom[b] = Some(d);
                dt.depth[b] = dt.depth[d] + 1;
            }
        }
        dt
    }

    /// Immediate dominator (`None` for the entry and unreachable blocks).
    pub fn idom(&self, b: Block) -> Option<Block> {
        self.idom[b]
    }

    /// Whether `a` dominates `b` (every block dominates itself).
    pub fn dominates(&self, a: Block, mut b: Block) -> bool {
        loop {
            if a == b {
                return true;
            }
            if self.depth[b] <= self.depth[a] {
                return false;
            }
            match self.idom[b] {
                Some(d) => b = d,
                None => return false,
            }
        }
    }
}

/// Post-dominators, with a virtual exit after every `return`.
#[derive(Clone, Debug, Default)]
pub struct PostDominatorTree {
    /// Immediate post-dominator; `None` means the virtual exit (no block post-dominates).
    ipdom: SecondaryMap<Block, Option<Block>>,
}

impl PostDominatorTree {
    /// Computes post-dominators over the reverse CFG.
    pub fn new(func: &Function, cfg: &ControlFlowGraph) -> Self {
        let mut pt = PostDominatorTree::default();
        let n = func.blocks.len();
        let exit = n; // the virtual exit node
        let exits: Vec<usize> = cfg
            .rpo
            .iter()
            .filter(|b| cfg.succs[**b].is_empty())
            .map(|b| b.index())
            .collect();
        // Blocks that cannot reach an exit (endless loops) hang off the exit too, so that every
        // reachable block has an immediate post-dominator.
        let mut reaches = vec![false; n + 1];
        let mut work = exits.clone();
        for &e in &exits {
            reaches[e] = true;
        }
        while let Some(b) = work.pop() {
            for &p in &cfg.preds[Block::from_u32(b as u32)] {
                if !reaches[p.index()] {
                    reaches[p.index()] = true;
                    work.push(p.index());
                }
            }
        }
        let stuck: Vec<usize> = cfg
            .rpo
            .iter()
            .map(|b| b.index())
            .filter(|i| !reaches[*i])
            .collect();
        // The reverse graph from the virtual exit: its successors are the exits and the
        // stuck blocks, a block's are its predecessors; its predecessors are a block's
        // successors, and the exit for an exit or stuck block.
        let rsucc = |i: usize| -> &[Block] {
            if i == exit {
                &[]
            } else {
                &cfg.preds[Block::new(i)]
            }
        };
        let mut order = Vec::with_capacity(n + 1);
        let mut seen = vec![false; n + 1];
        seen[exit] = true;
        // Iterative DFS in the reverse graph: (node, next successor index).
        let mut stack = vec![(exit, 0usize)];
        while let Some((b, i)) = stack.pop() {
            let next = if b == exit {
                exits.get(i).or_else(|| stuck.get(i - exits.len())).copied()
            } else {
                rsucc(b).get(i).map(|p| p.index())
            };
            match next {
                Some(t) => {
                    stack.push((b, i + 1));
                    if !seen[t] {
                        seen[t] = true;
                        stack.push((t, 0));
                    }
                }
                None => order.push(b),
            }
        }
        order.reverse();
        let mut from_exit = vec![false; n + 1];
        for &e in exits.iter().chain(&stuck) {
            from_exit[e] = true;
        }
        let idom = dominators(n + 1, &order, &|b, f| {
            if from_exit[b] {
                f(exit);
            }
            for s in &cfg.succs[Block::new(b)] {
                f(s.index());
            }
        });
        for &b in &cfg.rpo {
            pt.ipdom[b] = match idom[b.index()] {
                Some(d) if d != exit => Some(Block::from_u32(d as u32)),
                _ => None,
            };
        }
        pt
    }

    /// Immediate post-dominator; `None` is the virtual exit.
    pub fn ipdom(&self, b: Block) -> Option<Block> {
        self.ipdom[b]
    }
}
