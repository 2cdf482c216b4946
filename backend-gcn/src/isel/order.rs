//! Loops of the IR CFG and the section layout: a topological order of the forward edges in
//! which every loop's blocks are contiguous (so that one latch after a loop's last block can
//! send the wave back to its header). Irreducible control flow is rejected.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use cranelift_entity::SecondaryMap;
use kjit_ir::cfg::{ControlFlowGraph, DominatorTree};
use kjit_ir::{Block, Function};

use super::IselError;

/// Natural loops, by header.
#[derive(Clone, Debug, Default)]
pub struct LoopInfo {
    headers: Vec<Block>,
    body: HashMap<Block, HashSet<Block>>,
}

impl LoopInfo {
    /// Finds the natural loop of every back edge (an edge to a block that dominates its source).
    pub fn compute(func: &Function) -> Result<LoopInfo, IselError> {
        let cfg = ControlFlowGraph::new(func);
        let dt = DominatorTree::new(func, &cfg);
        let mut li = LoopInfo::default();
        for &b in &cfg.rpo {
            for &s in &cfg.succs[b] {
                if dt.dominates(s, b) {
                    let body = li.body.entry(s).or_insert_with(|| {
                        let mut h = HashSet::default();
                        h.insert(s);
                        h
                    });
                    let mut work = vec![b];
                    while let Some(x) = work.pop() {
                        if body.insert(x) {
                            work.extend(cfg.preds[x].iter().copied());
                        }
                    }
                    if !li.headers.contains(&s) {
                        li.headers.push(s);
                    }
                }
            }
        }
        // Retreating edges that are not back edges mean irreducible control flow.
        let mut rpo_pos: SecondaryMap<Block, usize> = SecondaryMap::new();
        for (i, &b) in cfg.rpo.iter().enumerate() {
            rpo_pos[b] = i;
        }
        for &b in &cfg.rpo {
            for &s in &cfg.succs[b] {
                if rpo_pos[s] <= rpo_pos[b] && !dt.dominates(s, b) {
                    return Err(IselError::Unsupported(format!(
                        "irreducible control flow ({b} -> {s})"
                    )));
                }
            }
        }
        Ok(li)
    }

    /// Loop headers.
    pub fn headers(&self) -> &[Block] {
        &self.headers
    }

    /// Whether `b` heads a loop.
    pub fn is_header(&self, b: Block) -> bool {
        self.body.contains_key(&b)
    }

    /// Whether the loop headed by `h` contains `b`.
    pub fn contains(&self, h: Block, b: Block) -> bool {
        self.body.get(&h).is_some_and(|s| s.contains(&b))
    }

    /// Headers of the loops containing `b`.
    pub fn loops_containing(&self, b: Block) -> Vec<Block> {
        self.headers
            .iter()
            .copied()
            .filter(|&h| self.contains(h, b))
            .collect()
    }

    /// Loop nesting depth of `b`.
    pub fn depth(&self, b: Block) -> u32 {
        self.loops_containing(b).len() as u32
    }

    /// Whether every loop containing `def` also contains `user`.
    pub fn same_or_inner_all(&self, def: Block, user: Block) -> bool {
        self.loops_containing(def)
            .into_iter()
            .all(|h| self.contains(h, user))
    }

    fn size(&self, h: Block) -> usize {
        self.body.get(&h).map_or(0, |s| s.len())
    }

    /// Headers of the loops whose last block in `order` is `b`, innermost (smallest) first.
    pub fn loops_ending_at(
        &self,
        b: Block,
        order: &[Block],
        pos: &SecondaryMap<Block, usize>,
    ) -> Vec<Block> {
        let _ = order;
        let mut v: Vec<Block> = self
            .headers
            .iter()
            .copied()
            .filter(|&h| self.body[&h].iter().map(|&x| pos[x]).max() == Some(pos[b]))
            .collect();
        v.sort_by_key(|&h| self.size(h));
        v
    }
}

/// The section layout of `func`.
pub fn layout(func: &Function, loops: &LoopInfo) -> Result<Vec<Block>, IselError> {
    let cfg = ControlFlowGraph::new(func);
    let entry = func
        .entry()
        .ok_or_else(|| IselError::Invalid("no entry block".into()))?;
    let all: HashSet<Block> = cfg.rpo.iter().copied().collect();
    let mut out = Vec::new();
    region(func, &cfg, loops, &all, entry, None, &mut out);
    // Check: every edge goes forward or back to a header of a loop containing its source.
    let mut pos: SecondaryMap<Block, usize> = SecondaryMap::new();
    for (i, &b) in out.iter().enumerate() {
        pos[b] = i;
    }
    for &b in &out {
        for &s in &cfg.succs[b] {
            if pos[s] <= pos[b] && !(loops.is_header(s) && loops.contains(s, b)) {
                return Err(IselError::Unsupported(format!(
                    "control flow isel cannot lay out ({b} -> {s})"
                )));
            }
        }
    }
    if out.len() != all.len() {
        return Err(IselError::Unsupported("layout lost blocks".into()));
    }
    Ok(out)
}

/// Orders the blocks of `set` (a loop body with header `header`, or the whole function).
fn region(
    func: &Function,
    cfg: &ControlFlowGraph,
    loops: &LoopInfo,
    set: &HashSet<Block>,
    start: Block,
    header: Option<Block>,
    out: &mut Vec<Block>,
) {
    let _ = func;
    // Representative of each block: the outermost proper sub-loop header containing it.
    let rep = |b: Block| -> Block {
        let mut best: Option<Block> = None;
        for &h in loops.headers() {
            if Some(h) == header || !set.contains(&h) || !loops.contains(h, b) {
                continue;
            }
            if let Some(hh) = header {
                if !loops.contains(hh, h) {
                    continue;
                }
            }
            match best {
                None => best = Some(h),
                Some(cur) if loops.contains(h, cur) && h != cur => best = Some(h),
                _ => {}
            }
        }
        best.unwrap_or(b)
    };
    // Collapsed successor lists.
    let mut succ: HashMap<Block, Vec<Block>> = HashMap::default();
    for &b in set {
        let rb = rep(b);
        for &s in &cfg.succs[b] {
            if !set.contains(&s) || Some(s) == header {
                continue;
            }
            let rs = rep(s);
            if rs != rb {
                let e = succ.entry(rb).or_default();
                if !e.contains(&rs) {
                    e.push(rs);
                }
            }
        }
    }
    // Reverse post-order of the collapsed DAG from the region's start, successors in the
    // function's RPO order so the layout follows the source.
    let mut rpo_pos: HashMap<Block, usize> = HashMap::default();
    for (i, &b) in cfg.rpo.iter().enumerate() {
        rpo_pos.insert(b, i);
    }
    let mut seen: HashSet<Block> = HashSet::default();
    let mut post = Vec::new();
    let mut stack: Vec<(Block, usize)> = vec![(rep(start), 0)];
    seen.insert(rep(start));
    while let Some((b, k)) = stack.pop() {
        let mut ss = succ.get(&b).cloned().unwrap_or_default();
        ss.sort_by_key(|s| std::cmp::Reverse(rpo_pos.get(s).copied().unwrap_or(0)));
        if k < ss.len() {
            stack.push((b, k + 1));
            let s = ss[k];
            if seen.insert(s) {
                stack.push((s, 0));
            }
        } else {
            post.push(b);
        }
    }
    post.reverse();
    for r in post {
        if loops.is_header(r) && Some(r) != header {
            let body: HashSet<Block> = set
                .iter()
                .copied()
                .filter(|&b| loops.contains(r, b))
                .collect();
            region(func, cfg, loops, &body, r, Some(r), out);
        } else {
            out.push(r);
        }
    }
}
