//! The text form of a [`Function`]: parsing what [`crate::write`] prints.
//!
//! Value and block numbers are kept: `v17` in the text is `Value` 17 in the result, so that
//! printing a parsed function gives back the same text and error messages name the same values.
//! Numbers the text skips become detached values and unused blocks. The parser checks syntax and
//! that every value is defined once; types and dominance are the verifier's job.

use crate::entities::{Block, Inst, LdsArray, Value};
use crate::function::{Flags, Function, LdsDecl, Param, ValueData, ValueDef};
use crate::instructions::*;
use crate::mfma::MfmaOp;
use crate::types::{ElemType, FragType, Type};
use cranelift_entity::EntityRef;
use smallvec::SmallVec;

/// A syntax error with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// Line number, from 1.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(String),
    Punct(char),
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let st = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_' || cs[i] == '.') {
                i += 1;
            }
            out.push(Tok::Ident(cs[st..i].iter().collect()));
        } else if c.is_ascii_digit()
            || (c == '-' && i + 1 < cs.len() && cs[i + 1].is_ascii_alphanumeric())
        {
            let st = i;
            i += 1;
            while i < cs.len()
                && (cs[i].is_ascii_alphanumeric()
                    || cs[i] == '.'
                    || ((cs[i] == '-' || cs[i] == '+')
                        && matches!(cs[i - 1], 'e' | 'E')
                        && !cs[st..i].contains(&'x')))
            {
                i += 1;
            }
            out.push(Tok::Num(cs[st..i].iter().collect()));
        } else if "(){}[],:=+<>".contains(c) {
            out.push(Tok::Punct(c));
            i += 1;
        } else {
            return Err(format!("unexpected character {c:?}"));
        }
    }
    Ok(out)
}

struct Line {
    toks: Vec<Tok>,
    pos: usize,
}

impl Line {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Result<Tok, String> {
        let t = self
            .toks
            .get(self.pos)
            .cloned()
            .ok_or("unexpected end of line")?;
        self.pos += 1;
        Ok(t)
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{c}`, found {}", self.describe()))
        }
    }
    fn describe(&self) -> String {
        match self.peek() {
            None => "end of line".into(),
            Some(Tok::Ident(s)) | Some(Tok::Num(s)) => format!("`{s}`"),
            Some(Tok::Punct(c)) => format!("`{c}`"),
        }
    }
    fn ident(&mut self) -> Result<String, String> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            t => Err(format!("expected a name, found {t:?}")),
        }
    }
    fn number(&mut self) -> Result<u64, String> {
        match self.next()? {
            Tok::Num(s) => parse_uint(&s),
            t => Err(format!("expected a number, found {t:?}")),
        }
    }
    fn done(&self) -> Result<(), String> {
        if self.pos == self.toks.len() {
            Ok(())
        } else {
            Err(format!("unexpected {} at end of line", self.describe()))
        }
    }
    fn ty(&mut self) -> Result<Type, String> {
        let name = self.ident()?;
        let text = if name == "buf" || name == "buf_mut" {
            self.expect('<')?;
            let e = self.ident()?;
            self.expect('>')?;
            format!("{name}<{e}>")
        } else {
            name
        };
        Type::parse(&text).ok_or_else(|| format!("unknown type `{text}`"))
    }
}

fn parse_uint(s: &str) -> Result<u64, String> {
    let r = if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
    } else {
        s.parse::<u64>()
    };
    r.map_err(|_| format!("bad number `{s}`"))
}

fn entity_number(s: &str, prefix: &str) -> Option<usize> {
    let d = s.strip_prefix(prefix)?;
    if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) || (d.len() > 1 && d.starts_with('0'))
    {
        return None;
    }
    d.parse().ok()
}

/// Parses a constant literal of type `ty` as [`crate::write::format_const`] prints it.
pub fn parse_const(ty: Type, s: &str) -> Result<u64, String> {
    let s = s.trim();
    let bad = || format!("`{s}` is not a {ty} constant");
    let nan = |w: u32| -> Result<u64, String> {
        let bits = parse_uint(s.strip_prefix("nan:").ok_or_else(bad)?)?;
        if w < 64 && bits >> w != 0 {
            return Err(bad());
        }
        Ok(bits)
    };
    Ok(match ty {
        Type::Bool => match s {
            "true" => 1,
            "false" => 0,
            _ => return Err(bad()),
        },
        Type::I32 => s.parse::<i32>().map_err(|_| bad())? as u32 as u64,
        Type::U32 => s.parse::<u32>().map_err(|_| bad())? as u64,
        Type::I64 => s.parse::<i64>().map_err(|_| bad())? as u64,
        Type::U64 => s.parse::<u64>().map_err(|_| bad())?,
        Type::F16 => {
            if s.starts_with("nan") {
                nan(16)?
            } else {
                let x: f32 = s.parse().map_err(|_| bad())?;
                let h = half::f16::from_f32(x);
                if h.to_f32() != x && !x.is_nan() {
                    return Err(format!("`{s}` is not exactly representable as f16"));
                }
                h.to_bits() as u64
            }
        }
        Type::F32 => {
            if s.starts_with("nan") {
                nan(32)?
            } else {
                s.parse::<f32>().map_err(|_| bad())?.to_bits() as u64
            }
        }
        Type::F64 => {
            if s.starts_with("nan") {
                nan(64)?
            } else {
                s.parse::<f64>().map_err(|_| bad())?.to_bits()
            }
        }
        Type::Buffer { .. } | Type::Frag(_) => {
            return Err("buffers and fragments have no constants".into())
        }
    })
}

struct Parser {
    func: Function,
    defined: Vec<bool>,
    block_seen: Vec<bool>,
}

impl Parser {
    fn value(&self, s: &str) -> Result<Value, String> {
        let n = entity_number(s, "v").ok_or_else(|| format!("expected a value, found `{s}`"))?;
        if n >= self.func.values.len() {
            return Err(format!("v{n} is out of range"));
        }
        Ok(Value::new(n))
    }
    fn block(&self, s: &str) -> Result<Block, String> {
        let n =
            entity_number(s, "block").ok_or_else(|| format!("expected a block, found `{s}`"))?;
        Ok(Block::new(n))
    }
    fn define(&mut self, v: Value, ty: Type, def: ValueDef) -> Result<(), String> {
        if self.defined[v.index()] {
            return Err(format!("{v} is defined twice"));
        }
        self.defined[v.index()] = true;
        self.func.values[v] = ValueData { ty, def };
        Ok(())
    }
    fn val_tok(&self, l: &mut Line) -> Result<Value, String> {
        let s = l.ident()?;
        self.value(&s)
    }
    fn list(&self, l: &mut Line) -> Result<SmallVec<[Value; 4]>, String> {
        let mut v = SmallVec::new();
        v.push(self.val_tok(l)?);
        while l.eat(',') {
            v.push(self.val_tok(l)?);
        }
        Ok(v)
    }
    fn call(&self, l: &mut Line) -> Result<BlockCall, String> {
        let b = self.block(&l.ident()?)?;
        let mut args = SmallVec::new();
        if l.eat('(') && !l.eat(')') {
            args = self.list(l)?;
            l.expect(')')?;
        }
        Ok(BlockCall { block: b, args })
    }
    fn mem(&self, l: &mut Line) -> Result<(Mem, Value, u32), String> {
        let s = l.ident()?;
        let mem = if let Some(n) = entity_number(&s, "lds") {
            if n >= self.func.lds.len() {
                return Err(format!("lds{n} is not declared"));
            }
            Mem::Lds(LdsArray::new(n))
        } else {
            Mem::Global(self.value(&s)?)
        };
        l.expect('[')?;
        let index = self.val_tok(l)?;
        let mut offset = 0;
        if l.eat('+') {
            offset = u32::try_from(l.number()?).map_err(|_| "offset too large".to_string())?;
        }
        l.expect(']')?;
        Ok((mem, index, offset))
    }

    fn inst(&mut self, l: &mut Line, rest: &str, result_tys: &[Type]) -> Result<InstData, String> {
        let op = l.ident()?;
        let (base, suffix) = match op.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (op.as_str(), None),
        };
        let dim = |s: Option<&str>| -> Result<Dim, String> {
            match s {
                Some("x") => Ok(Dim::X),
                Some("y") => Ok(Dim::Y),
                Some("z") => Ok(Dim::Z),
                _ => Err(format!("`{op}` needs a dimension .x, .y or .z")),
            }
        };
        let reduce = |s: Option<&str>| -> Result<ReduceOp, String> {
            REDUCE_OPS
                .iter()
                .copied()
                .find(|r| Some(reduce_name(*r)) == s)
                .ok_or_else(|| format!("`{op}` needs .add, .min or .max"))
        };
        let one_ty = || -> Result<Type, String> {
            match result_tys {
                [t] => Ok(*t),
                _ => Err(format!("`{op}` has one result")),
            }
        };
        let data = match base {
            "const" => {
                let ty = Type::parse(suffix.unwrap_or(""))
                    .ok_or_else(|| format!("bad constant type in `{op}`"))?;
                let lit = rest
                    .trim_start()
                    .strip_prefix(op.as_str())
                    .unwrap_or("")
                    .trim();
                l.pos = l.toks.len();
                return Ok(InstData::Const {
                    ty,
                    bits: parse_const(ty, lit)?,
                });
            }
            "workitem_id" => InstData::Special {
                reg: SpecialReg::WorkitemId(dim(suffix)?),
            },
            "workgroup_id" => InstData::Special {
                reg: SpecialReg::WorkgroupId(dim(suffix)?),
            },
            "workgroup_size" => InstData::Special {
                reg: SpecialReg::WorkgroupSize(dim(suffix)?),
            },
            "num_workgroups" => InstData::Special {
                reg: SpecialReg::NumWorkgroups(dim(suffix)?),
            },
            "lane_id" => InstData::Special {
                reg: SpecialReg::LaneId,
            },
            "select" => {
                let a = self.list(l)?;
                InstData::Select { args: three(&a)? }
            }
            "convert" => InstData::Convert {
                to: one_ty()?,
                arg: self.val_tok(l)?,
            },
            "bitcast" => InstData::Bitcast {
                to: one_ty()?,
                arg: self.val_tok(l)?,
            },
            "buffer_len" => InstData::BufferLen {
                buf: self.val_tok(l)?,
            },
            "load" => {
                let width = match suffix {
                    None => 1,
                    Some("x2") => 2,
                    Some("x4") => 4,
                    _ => return Err(format!("bad width in `{op}`")),
                };
                let (mem, index, offset) = self.mem(l)?;
                InstData::Load {
                    mem,
                    index,
                    offset,
                    width,
                }
            }
            "store" => {
                let (mem, index, offset) = self.mem(l)?;
                l.expect(',')?;
                let values = self.list(l)?;
                let want = match suffix {
                    None => 1,
                    Some("x2") => 2,
                    Some("x4") => 4,
                    _ => return Err(format!("bad width in `{op}`")),
                };
                if values.len() != want {
                    return Err(format!(
                        "`{op}` stores {want} value(s), {} given",
                        values.len()
                    ));
                }
                InstData::Store {
                    mem,
                    index,
                    offset,
                    values,
                }
            }
            "frag_load" => {
                let ty = suffix
                    .and_then(FragType::parse)
                    .ok_or_else(|| format!("bad fragment type in `{op}`"))?;
                let (mem, index, offset) = self.mem(l)?;
                InstData::FragLoad {
                    mem,
                    index,
                    offset,
                    ty,
                }
            }
            "frag_store" => {
                let (mem, index, offset) = self.mem(l)?;
                l.expect(',')?;
                InstData::FragStore {
                    mem,
                    index,
                    offset,
                    value: self.val_tok(l)?,
                }
            }
            "frag_build" => InstData::FragBuild {
                ty: suffix
                    .and_then(FragType::parse)
                    .ok_or_else(|| format!("bad fragment type in `{op}`"))?,
                args: self.list(l)?,
            },
            "frag_extract" => {
                let arg = self.val_tok(l)?;
                l.expect(',')?;
                let item = u8::try_from(l.number()?).map_err(|_| "item too large".to_string())?;
                InstData::FragExtract { arg, item }
            }
            "mfma" => InstData::Mfma {
                op: suffix
                    .and_then(MfmaOp::parse)
                    .ok_or_else(|| format!("unknown MFMA operation `{op}`"))?,
                args: three(&self.list(l)?)?,
            },
            "barrier" => InstData::Barrier,
            "wave_shuffle" => {
                let a = self.list(l)?;
                InstData::WaveShuffle { args: two(&a)? }
            }
            "wave_broadcast" => {
                let arg = self.val_tok(l)?;
                l.expect(',')?;
                let lane = u8::try_from(l.number()?).map_err(|_| "lane too large".to_string())?;
                InstData::WaveBroadcast { arg, lane }
            }
            "wave_reduce" => InstData::WaveReduce {
                op: reduce(suffix)?,
                arg: self.val_tok(l)?,
            },
            "wave_scan" => InstData::WaveScan {
                op: reduce(suffix)?,
                arg: self.val_tok(l)?,
            },
            "jump" => InstData::Jump {
                dest: self.call(l)?,
            },
            "brif" => {
                let cond = self.val_tok(l)?;
                l.expect(',')?;
                let then_dest = self.call(l)?;
                l.expect(',')?;
                let else_dest = self.call(l)?;
                InstData::Brif {
                    cond,
                    then_dest,
                    else_dest,
                }
            }
            "return" => InstData::Return,
            _ => {
                if let Some(a) = ATOMIC_OPS.iter().find(|a| atomic_name(**a) == op) {
                    let (mem, index, offset) = self.mem(l)?;
                    l.expect(',')?;
                    let args = self.list(l)?;
                    InstData::Atomic {
                        op: *a,
                        mem,
                        index,
                        offset,
                        args: args.into_iter().collect(),
                    }
                } else if let Some(u) = UNARY_OPS.iter().find(|u| unary_name(**u) == op) {
                    InstData::Unary {
                        op: *u,
                        arg: self.val_tok(l)?,
                    }
                } else if let Some(b) = BINARY_OPS.iter().find(|b| binary_name(**b) == op) {
                    InstData::Binary {
                        op: *b,
                        args: two(&self.list(l)?)?,
                    }
                } else if let Some(t) = TERNARY_OPS.iter().find(|t| ternary_name(**t) == op) {
                    InstData::Ternary {
                        op: *t,
                        args: three(&self.list(l)?)?,
                    }
                } else if let Some(c) = CMP_OPS.iter().find(|c| cmp_name(**c) == op) {
                    InstData::Cmp {
                        op: *c,
                        args: two(&self.list(l)?)?,
                    }
                } else {
                    return Err(format!("unknown operation `{op}`"));
                }
            }
        };
        Ok(data)
    }
}

fn two(a: &[Value]) -> Result<[Value; 2], String> {
    a.try_into()
        .map_err(|_| format!("expected 2 operands, found {}", a.len()))
}
fn three(a: &[Value]) -> Result<[Value; 3], String> {
    a.try_into()
        .map_err(|_| format!("expected 3 operands, found {}", a.len()))
}

/// Parses one kernel in the text form.
pub fn parse_function(text: &str) -> Result<Function, ParseError> {
    let err = |line: usize, message: String| ParseError { line, message };
    // Numbering: find the largest value and block numbers so entities can keep their numbers.
    let (mut max_v, mut max_b) = (None::<usize>, None::<usize>);
    for (n, raw) in text.lines().enumerate() {
        for t in tokenize(raw).map_err(|m| err(n + 1, m))? {
            if let Tok::Ident(s) = t {
                if let Some(k) = entity_number(&s, "v") {
                    max_v = Some(max_v.map_or(k, |m| m.max(k)));
                } else if let Some(k) = entity_number(&s, "block") {
                    max_b = Some(max_b.map_or(k, |m| m.max(k)));
                }
            }
        }
    }
    const LIMIT: usize = 1 << 24;
    if max_v.unwrap_or(0) >= LIMIT || max_b.unwrap_or(0) >= LIMIT {
        return Err(err(1, "entity numbers above 2^24 are not supported".into()));
    }
    let mut p = Parser {
        func: Function::default(),
        defined: Vec::new(),
        block_seen: Vec::new(),
    };
    for _ in 0..max_v.map_or(0, |m| m + 1) {
        p.func.values.push(ValueData {
            ty: Type::Bool,
            def: ValueDef::Detached,
        });
        p.defined.push(false);
    }
    for _ in 0..max_b.map_or(0, |m| m + 1) {
        p.func.create_block();
        p.block_seen.push(false);
    }

    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    // Header.
    let (hn, header) = lines.next().ok_or_else(|| err(1, "empty text".into()))?;
    {
        let hl = hn + 1;
        let mut l = Line {
            toks: tokenize(header).map_err(|m| err(hl, m))?,
            pos: 0,
        };
        let r: Result<(), String> = (|| {
            if l.ident()? != "kernel" {
                return Err("expected `kernel`".into());
            }
            p.func.name = l.ident()?;
            l.expect('(')?;
            if !l.eat(')') {
                loop {
                    let name = l.ident()?;
                    l.expect(':')?;
                    let ty = l.ty()?;
                    p.func.params.push(Param { name, ty });
                    if l.eat(')') {
                        break;
                    }
                    l.expect(',')?;
                }
            }
            let mut flags = Flags::default();
            while let Some(Tok::Ident(s)) = l.peek().cloned() {
                match s.as_str() {
                    "contract" => {
                        flags.contract = true;
                        l.pos += 1;
                    }
                    "noalias" => {
                        flags.noalias = true;
                        l.pos += 1;
                    }
                    "workgroup_size" => {
                        l.pos += 1;
                        l.expect('(')?;
                        let mut size = [0u32; 3];
                        for (d, v) in size.iter_mut().enumerate() {
                            if d > 0 {
                                l.expect(',')?;
                            }
                            *v = u32::try_from(l.number()?)
                                .map_err(|_| "workgroup size out of range".to_string())?;
                        }
                        l.expect(')')?;
                        p.func.workgroup_size = Some(size);
                    }
                    _ => return Err(format!("unknown flag `{s}`")),
                }
            }
            p.func.flags = flags;
            l.expect('{')?;
            l.done()
        })();
        r.map_err(|m| err(hl, m))?;
    }
    let mut cur: Option<Block> = None;
    let mut closed = false;
    for (n, raw) in lines {
        let ln = n + 1;
        if closed {
            return Err(err(ln, "text after the closing `}`".into()));
        }
        let trimmed = raw.trim();
        if trimmed == "}" {
            closed = true;
            continue;
        }
        let mut l = Line {
            toks: tokenize(raw).map_err(|m| err(ln, m))?,
            pos: 0,
        };
        let r: Result<(), String> = (|| {
            let first = match l.peek() {
                Some(Tok::Ident(s)) => s.clone(),
                _ => return Err(format!("unexpected {}", l.describe())),
            };
            if let Some(k) = entity_number(&first, "lds") {
                l.pos += 1;
                if cur.is_some() || k != p.func.lds.len() {
                    return Err("LDS arrays are declared first, in order lds0, lds1, ...".into());
                }
                l.expect('=')?;
                if l.ident()? != "lds" {
                    return Err("expected `lds`".into());
                }
                let name = l.ident()?;
                l.expect(':')?;
                let elem: ElemType = l.ty()?.elem().ok_or("LDS elements are numbers")?;
                l.expect('[')?;
                let dynamic = matches!(l.peek(), Some(Tok::Ident(s)) if s == "dynamic");
                let len = if dynamic {
                    l.pos += 1;
                    0
                } else {
                    u32::try_from(l.number()?).map_err(|_| "LDS array too large".to_string())?
                };
                l.expect(']')?;
                l.done()?;
                p.func.lds.push(LdsDecl {
                    name,
                    elem,
                    len,
                    dynamic,
                });
                return Ok(());
            }
            if let Some(k) = entity_number(&first, "block") {
                l.pos += 1;
                let b = Block::new(k);
                if p.block_seen[k] {
                    return Err(format!("{b} is defined twice"));
                }
                p.block_seen[k] = true;
                if l.eat('(') {
                    loop {
                        let v = p.val_tok(&mut l)?;
                        l.expect(':')?;
                        let ty = l.ty()?;
                        let idx = p.func.blocks[b].params.len() as u16;
                        p.define(v, ty, ValueDef::Param(b, idx))?;
                        p.func.blocks[b].params.push(v);
                        if l.eat(')') {
                            break;
                        }
                        l.expect(',')?;
                    }
                }
                l.expect(':')?;
                l.done()?;
                p.func.layout.push(b);
                cur = Some(b);
                return Ok(());
            }
            let b = cur.ok_or("an instruction outside a block")?;
            // Results.
            let mut results: Vec<(Value, Type)> = Vec::new();
            if entity_number(&first, "v").is_some() {
                loop {
                    let v = p.val_tok(&mut l)?;
                    l.expect(':')?;
                    let t = l.ty()?;
                    results.push((v, t));
                    if l.eat('=') {
                        break;
                    }
                    l.expect(',')?;
                }
            }
            let rest: String = {
                // The raw text after `=` (constants are read from it verbatim).
                match raw.split_once('=') {
                    Some((_, r)) if !results.is_empty() => r.to_string(),
                    _ => raw.to_string(),
                }
            };
            let tys: Vec<Type> = results.iter().map(|r| r.1).collect();
            let data = p.inst(&mut l, &rest, &tys)?;
            l.done()?;
            let inst: Inst = p.func.insts.push(data);
            let mut rs = SmallVec::new();
            for (k, (v, t)) in results.into_iter().enumerate() {
                p.define(v, t, ValueDef::Result(inst, k as u16))?;
                rs.push(v);
            }
            p.func.results[inst] = rs;
            p.func.blocks[b].insts.push(inst);
            Ok(())
        })();
        r.map_err(|m| err(ln, m))?;
    }
    if !closed {
        return Err(err(text.lines().count(), "missing closing `}`".into()));
    }
    // Every used value must be defined.
    for &b in &p.func.layout {
        for &i in &p.func.blocks[b].insts {
            let mut bad = None;
            p.func.insts[i].for_each_arg(|a| {
                if !p.defined[a.index()] && bad.is_none() {
                    bad = Some(a)
                }
            });
            if let Some(a) = bad {
                return Err(err(0, format!("{a} is used but never defined")));
            }
        }
    }
    Ok(p.func)
}
