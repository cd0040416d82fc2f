//! The graph-structured stack as an append-only arena.
//!
//! Nodes are never mutated once the shift that created them returns, so a
//! node means the same set of stacks forever. Rollback truncates the arena
//! to a checkpoint; the mask engine appends scratch nodes for hypothetical
//! tokens and truncates them the same way. Each node carries its liveness
//! summary (see `liveness`), stored as bits in `pool`: whole for the nodes
//! of commits, bit by bit as asked for a mask's scratch nodes (a cache of a
//! function of the node, so the node still means the same stacks).

use smallvec::{smallvec, SmallVec};

use crate::ids::{LrStateId, NodeId};

#[derive(Clone, Debug)]
pub struct GssNode {
    pub state: LrStateId,
    pub parents: SmallVec<[NodeId; 2]>,
    /// Offset of the liveness summary bits in `Gss::pool`.
    pub summary: u32,
}

#[derive(Clone, Debug)]
pub struct Gss {
    pub nodes: Vec<GssNode>,
    pub pool: Vec<u32>,
    /// Reductions done and GSS edges they read so far (never reset): what a
    /// commit costs on an ambiguous grammar, where it grows with the input.
    pub work: u64,
    /// New nodes get their summaries bit by bit, when asked ([`LAZY_SUMMARY`]):
    /// set while a Dynamic mask makes scratch nodes, which are asked a few
    /// bits each and then dropped.
    pub lazy: bool,
}

/// A node's `summary` with this bit set is lazy: at the offset, a word per
/// 32 bits says which bits are known, then as many words hold them.
pub const LAZY_SUMMARY: u32 = 1 << 31;

/// An arena length to truncate back to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    nodes: u32,
    pool: u32,
}

pub const ROOT: NodeId = NodeId(0);

impl Checkpoint {
    /// Nodes kept by truncating to this checkpoint.
    pub fn nodes(&self) -> usize {
        self.nodes as usize
    }
}

impl Gss {
    pub fn new(start: LrStateId) -> Gss {
        Gss {
            nodes: vec![GssNode { state: start, parents: smallvec![], summary: 0 }],
            pool: Vec::new(),
            work: 0,
            lazy: false,
        }
    }

    #[inline]
    pub fn node(&self, n: NodeId) -> &GssNode {
        &self.nodes[n.index()]
    }

    #[inline]
    pub fn state(&self, n: NodeId) -> LrStateId {
        self.nodes[n.index()].state
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint { nodes: self.nodes.len() as u32, pool: self.pool.len() as u32 }
    }

    pub fn truncate(&mut self, cp: Checkpoint) {
        self.nodes.truncate(cp.nodes as usize);
        self.pool.truncate(cp.pool as usize);
    }

    pub fn push(&mut self, state: LrStateId, parents: SmallVec<[NodeId; 2]>) -> NodeId {
        let id = NodeId::from_usize(self.nodes.len());
        self.nodes.push(GssNode { state, parents, summary: u32::MAX });
        id
    }

    /// Nodes exactly `d` edges below `start` (deduplicated). With `first`,
    /// the first edge must be `start → first`. Returns the edges read.
    pub fn at_distance(&self, start: NodeId, first: Option<NodeId>, d: usize, out: &mut Vec<NodeId>) -> usize {
        out.clear();
        if d == 0 {
            out.push(start);
            return 0;
        }
        match first {
            Some(f) => out.push(f),
            None => out.extend_from_slice(&self.nodes[start.index()].parents),
        }
        let mut read = out.len();
        let mut next = Vec::new();
        for _ in 1..d {
            next.clear();
            for &n in out.iter() {
                next.extend_from_slice(&self.nodes[n.index()].parents);
            }
            read += next.len();
            next.sort_unstable();
            next.dedup();
            std::mem::swap(out, &mut next);
        }
        if first.is_none() && d == 1 {
            out.sort_unstable();
            out.dedup();
        }
        read
    }
}
