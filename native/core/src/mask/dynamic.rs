//! The Dynamic engine: an online walk of the vocabulary trie (DESIGN §5).
//!
//! The trie is visited in preorder. Frame `d` holds the heads after the first
//! `d` bytes of the current prefix. Before its first child is visited, a
//! frame is *expanded*: every terminal its lexemes may end as is shifted into
//! scratch GSS nodes, once for all children (the shift does not depend on
//! the next byte). A child then only advances lexer configurations by one
//! byte; an empty head set skips the whole subtree. Tokens ending at a node
//! are allowed when some head there is live. Scratch nodes are truncated
//! when the walk leaves the frame that made them.

use rustc_hash::FxHashMap;

use super::TokenMask;
use crate::glr::{Checkpoint, Gss, Head, Parser};
use crate::vocab::Vocab;

/// Reusable buffers, owned by the state so a mask call allocates nothing
/// once warm.
#[derive(Default, Clone, Debug)]
pub struct DynamicScratch {
    heads: Vec<Vec<Head>>,
    expanded: Vec<Vec<Head>>,
    expanded_valid: Vec<bool>,
    after_expand: Vec<Option<Checkpoint>>,
    live_memo: FxHashMap<Head, bool>,
}

pub fn dynamic_mask(
    parser: Parser<'_>,
    gss: &mut Gss,
    heads: &[Head],
    vocab: &Vocab,
    scratch: &mut DynamicScratch,
    out: &mut TokenMask,
) {
    out.clear();
    if heads.is_empty() {
        return;
    }
    let trie = vocab.trie();
    let depth = trie.max_depth + 1;
    if scratch.heads.len() < depth {
        scratch.heads.resize(depth, Vec::new());
        scratch.expanded.resize(depth, Vec::new());
        scratch.expanded_valid.resize(depth, false);
        scratch.after_expand.resize(depth, None);
    }
    scratch.live_memo.clear();
    let base = gss.checkpoint();
    let real_len = gss.len();
    scratch.heads[0].clear();
    scratch.heads[0].extend_from_slice(heads);
    scratch.expanded_valid[0] = false;

    let nodes = &trie.nodes;
    let mut i = 1;
    while i < nodes.len() {
        let node = nodes[i];
        let d = node.depth as usize;
        let parent = d - 1;
        if !scratch.expanded_valid[parent] {
            let (lower, upper) = scratch.heads.split_at(parent + 1);
            let _ = upper;
            let parent_heads = &lower[parent];
            let mut expanded = std::mem::take(&mut scratch.expanded[parent]);
            parser.expand_emissions(gss, parent_heads, &mut |_| true, &mut expanded);
            scratch.expanded[parent] = expanded;
            scratch.expanded_valid[parent] = true;
            scratch.after_expand[parent] = Some(gss.checkpoint());
        } else if let Some(cp) = scratch.after_expand[parent] {
            // Leaving a sibling subtree: drop the scratch nodes it made.
            gss.truncate(cp);
        }
        let mut here = std::mem::take(&mut scratch.heads[d]);
        parser.advance(&scratch.expanded[parent], node.byte, &mut here);
        if here.is_empty() {
            scratch.heads[d] = here;
            i = node.subtree_end as usize;
            continue;
        }
        let tokens = trie.tokens(&node);
        if !tokens.is_empty() && any_live(parser, gss, &here, real_len, &mut scratch.live_memo) {
            for &t in tokens {
                out.insert(t.index());
            }
        }
        scratch.heads[d] = here;
        scratch.expanded_valid[d] = false;
        i += 1;
    }
    gss.truncate(base);
    for v in scratch.expanded_valid.iter_mut() {
        *v = false;
    }
}

fn any_live(
    parser: Parser<'_>,
    gss: &mut Gss,
    heads: &[Head],
    real_len: usize,
    memo: &mut FxHashMap<Head, bool>,
) -> bool {
    heads.iter().any(|&h| {
        if h.node.index() < real_len {
            if let Some(&v) = memo.get(&h) {
                return v;
            }
            let v = parser.live(gss, h);
            memo.insert(h, v);
            v
        } else {
            parser.live(gss, h)
        }
    })
}
