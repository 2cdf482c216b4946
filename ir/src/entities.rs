//! Entity references: small `u32` indices into the maps of a [`crate::Function`].
//!
//! As in Cranelift, instructions, values and blocks are not pointers but numbers, so that side
//! tables are `SecondaryMap`s and a function can be cloned, compared and printed cheaply.

use cranelift_entity::entity_impl;

/// A basic block. Its parameters take the place of phi nodes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block(u32);
entity_impl!(Block, "block");

/// An instruction.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Inst(u32);
entity_impl!(Inst, "inst");

/// An SSA value: an instruction result or a block parameter.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(u32);
entity_impl!(Value, "v");

/// A statically sized array in workgroup memory (LDS).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LdsArray(u32);
entity_impl!(LdsArray, "lds");
