//! The vocabulary trie, flattened in depth-first preorder.
//!
//! Node 0 is the empty prefix. A node's subtree is the index range
//! `[i, subtree_end)`, so a walk visits nodes in order and skips a dead
//! subtree with one jump (the layout llguidance's toktrie popularised).
//! Tokens that end at a node are a contiguous slice of `token_ids`.

use super::{TokenKind, Vocab};
use crate::ids::TokenId;

#[derive(Copy, Clone, Debug, Default)]
pub struct TrieNode {
    pub byte: u8,
    pub depth: u32,
    pub subtree_end: u32,
    pub tokens_start: u32,
    pub tokens_end: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Trie {
    pub nodes: Vec<TrieNode>,
    pub token_ids: Vec<TokenId>,
    pub max_depth: usize,
}

impl Trie {
    pub fn build(vocab: &Vocab) -> Trie {
        let mut ids: Vec<TokenId> =
            (0..vocab.len()).map(TokenId::from_usize).filter(|&t| vocab.kind(t) == TokenKind::Bytes).collect();
        ids.sort_by(|&a, &b| vocab.bytes(a).cmp(vocab.bytes(b)).then(a.cmp(&b)));
        Trie::from_sorted(ids.iter().map(|&id| (vocab.bytes(id), id)))
    }

    /// The trie of `(bytes, token)` pairs sorted by bytes, then token.
    pub fn from_sorted<'a>(pairs: impl IntoIterator<Item = (&'a [u8], TokenId)>) -> Trie {
        let mut nodes = vec![TrieNode::default()];
        let mut token_ids = Vec::new();
        // open[d] = index of the open node at depth d (open[0] = root).
        let mut open: Vec<usize> = vec![0];
        let mut prev: &[u8] = &[];
        let mut max_depth = 0;
        for (bytes, id) in pairs {
            let lcp = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            while open.len() > lcp + 1 {
                let n = open.pop().expect("non-empty");
                nodes[n].subtree_end = nodes.len() as u32;
            }
            for (d, &b) in bytes.iter().enumerate().skip(lcp) {
                let tokens_start = token_ids.len() as u32;
                nodes.push(TrieNode {
                    byte: b,
                    depth: d as u32 + 1,
                    subtree_end: 0,
                    tokens_start,
                    tokens_end: tokens_start,
                });
                open.push(nodes.len() - 1);
            }
            // Sorted order puts a token before every longer token it prefixes,
            // so the node it ends at is the deepest open one and its slice is
            // still growing at the end of `token_ids`.
            let last = *open.last().expect("non-empty");
            debug_assert_eq!(nodes[last].tokens_end, token_ids.len() as u32);
            token_ids.push(id);
            nodes[last].tokens_end = token_ids.len() as u32;
            max_depth = max_depth.max(bytes.len());
            prev = bytes;
        }
        while let Some(n) = open.pop() {
            nodes[n].subtree_end = nodes.len() as u32;
        }
        Trie { nodes, token_ids, max_depth }
    }

    #[inline]
    pub fn tokens(&self, node: &TrieNode) -> &[TokenId] {
        &self.token_ids[node.tokens_start as usize..node.tokens_end as usize]
    }

    /// The tokens at or below node `i`: tokens are stored in byte order,
    /// which is preorder, so they are one slice.
    pub fn subtree_tokens(&self, i: usize) -> &[TokenId] {
        let last = &self.nodes[self.nodes[i].subtree_end as usize - 1];
        &self.token_ids[self.nodes[i].tokens_start as usize..last.tokens_end as usize]
    }
}
