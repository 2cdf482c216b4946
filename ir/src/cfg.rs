//! Control-flow graph facts: predecessors, reverse post-order, dominators and post-dominators.
//!
//! Takes a [`Function`]; gives the tables the verifier (SSA dominance), the uniformity analysis
//! (where divergent paths join) and the interpreter (where lanes reconverge: at the immediate
//! post-dominator of a divergent branch) need. Dominators use the Cooper–Harvey–Kennedy
//! iteration over reverse post-order.

use crate::entities::Block;
use crate::function::Function;
use cranelift_entity::{EntityRef, SecondaryMap};

/// Successors and predecessors of each block in the layout.
#[derive(Clone, Debug, Default)]
pub struct ControlFlowGraph {
    /// Successors, deduplicated, in branch order.
    pub succs: SecondaryMap<Block, Vec<Block>>,
    /// Predecessors, deduplicated.
    pub preds: SecondaryMap<Block, Vec<Block>>,
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
            let mut s = Vec::new();
            for t in func.successors(b) {
                if !s.contains(&t) {
                    s.push(t);
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
            let mut seen: SecondaryMap<Block, bool> = SecondaryMap::with_capacity(n);
            seen.resize(n);
            let mut post = Vec::with_capacity(n);
            // Iterative DFS: (block, next successor index).
            let mut stack = vec![(entry, 0usize)];
            seen[entry] = true;
            while let Some((b, i)) = stack.pop() {
                if i < cfg.succs[b].len() {
                    stack.push((b, i + 1));
                    let s = cfg.succs[b][i];
                    if !seen[s] {
                        seen[s] = true;
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

/// Immediate dominators over generic node indices; `succ` lists successors, node `root` starts.
/// Returns `idom[n]` (the root is its own idom; unreachable nodes get `None`) and the RPO order.
fn dominators(
    n: usize,
    root: usize,
    succ: &dyn Fn(usize) -> Vec<usize>,
) -> (Vec<Option<usize>>, Vec<usize>) {
    let mut order = Vec::new();
    let mut seen = vec![false; n];
    let mut stack = vec![(root, 0usize, succ(root))];
    seen[root] = true;
    while let Some((b, i, s)) = stack.pop() {
        if i < s.len() {
            let t = s[i];
            stack.push((b, i + 1, s));
            if !seen[t] {
                seen[t] = true;
                let st = succ(t);
                stack.push((t, 0, st));
            }
        } else {
            order.push(b);
        }
    }
    order.reverse();
    let mut rpo_index = vec![usize::MAX; n];
    for (i, &b) in order.iter().enumerate() {
        rpo_index[b] = i;
    }
    let mut preds = vec![Vec::new(); n];
    for &b in &order {
        for t in succ(b) {
            preds[t].push(b);
        }
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    idom[root] = Some(root);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new: Option<usize> = None;
            for &p in &preds[b] {
                if idom[p].is_none() {
                    continue;
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
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    (idom, order)
}

/// The dominator tree of the reachable blocks.
#[derive(Clone, Debug, Default)]
pub struct DominatorTree {
    idom: SecondaryMap<Block, Option<Block>>,
    depth: SecondaryMap<Block, u32>,
}

impl DominatorTree {
    /// Computes dominators of `func` from its CFG.
    pub fn new(func: &Function, cfg: &ControlFlowGraph) -> Self {
        let mut dt = DominatorTree::default();
        let Some(entry) = func.entry() else { return dt };
        let blocks: Vec<Block> = func.blocks.keys().collect();
        let (idom, order) = dominators(blocks.len(), entry.index(), &|i| {
            cfg.succs[Block::from_u32(i as u32)]
                .iter()
                .map(|b| b.index())
                .collect()
        });
        for &i in &order {
            let b = Block::from_u32(i as u32);
            if i == entry.index() {
                dt.idom[b] = None;
                dt.depth[b] = 0;
            } else if let Some(d) = idom[i] {
                let d = Block::from_u32(d as u32);
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
        let (idom, _) = dominators(n + 1, exit, &|i| {
            if i == exit {
                exits.iter().chain(stuck.iter()).copied().collect()
            } else {
                cfg.preds[Block::from_u32(i as u32)]
                    .iter()
                    .map(|b| b.index())
                    .collect()
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
