//! The vocabulary's *plain text* tokens: whole UTF-8 characters, none of them
//! `"`, `\` or a C0 control (U+0000–U+001F).
//!
//! Nearly every token of a large vocabulary is plain (125k of DeepSeek-V3's
//! 128k), and inside a string lexeme every plain character usually moves the
//! lexer alike: a plain string nowhere, a counted one a count on. Where that
//! holds, a plain token's end depends only on its length in characters, so
//! the Dynamic engine takes these tokens as sets by length, built here once
//! per vocabulary, and walks only the others ([`crate::mask::dynamic`]).

use std::sync::Arc;

use super::Vocab;
use crate::sets::{BitSet, TokenSet};

/// Plain tokens grouped by length, and where the others lie in the trie.
#[derive(Debug)]
pub struct PlainText {
    /// Per token id: its length in characters if plain (at most 255), else 0.
    chars: Vec<u8>,
    /// Per trie node: the longest plain token at or below it, in characters
    /// (0: none), and whether some token there is not plain.
    below: Vec<(u8, bool)>,
    /// Per trie node with only plain tokens below: where the run of such
    /// siblings that it starts ends (the next sibling with another token
    /// below, or the parent's subtree end), and the longest plain token in
    /// the run. A walk that skips plain subtrees skips the run in one step
    /// instead of touching each sibling (a cache miss each in a 300k-node trie).
    runs: Vec<(u32, u8)>,
    /// Per first byte: the plain tokens below it, by length in characters.
    by_first_byte: Vec<Vec<u32>>,
    /// `(length in characters, the plain tokens of that length)`, ascending,
    /// only lengths some token has.
    by_length: Vec<(usize, Arc<TokenSet>)>,
    /// Every plain token.
    all: Arc<TokenSet>,
}

impl PlainText {
    pub fn build(vocab: &Vocab) -> PlainText {
        let (trie, vocab_len) = (vocab.trie(), vocab.len());
        let mut chars = vec![0u8; vocab_len];
        let mut lists: Vec<Vec<u32>> = Vec::new();
        for &t in &trie.token_ids {
            if let Some(n) = plain_length(vocab.bytes(t)) {
                chars[t.index()] = n as u8;
                if lists.len() <= n {
                    lists.resize(n + 1, Vec::new());
                }
                lists[n].push(t.0);
            }
        }
        // Nodes in preorder: a node's subtree follows it, so a reverse pass
        // sees every descendant before the node. Its children, last first,
        // then give the runs of plain-only siblings.
        let mut below = vec![(0u8, false); trie.nodes.len()];
        let mut runs = vec![(0u32, 0u8); trie.nodes.len()];
        let mut children = Vec::new();
        for i in (0..trie.nodes.len()).rev() {
            let node = &trie.nodes[i];
            let mut here = (0, false);
            for t in trie.tokens(node) {
                here = (here.0.max(chars[t.index()]), here.1 || chars[t.index()] == 0);
            }
            children.clear();
            let mut child = i + 1;
            while child < node.subtree_end as usize {
                here = (here.0.max(below[child].0), here.1 || below[child].1);
                children.push(child);
                child = trie.nodes[child].subtree_end as usize;
            }
            below[i] = here;
            let (mut end, mut longest) = (node.subtree_end, 0u8);
            for &c in children.iter().rev() {
                if below[c].1 {
                    (end, longest) = (c as u32, 0);
                } else {
                    longest = longest.max(below[c].0);
                    runs[c] = (end, longest);
                }
            }
        }
        // The tokens below a first byte are one slice of the trie's: bucketed by length.
        let mut by_first_byte = vec![Vec::new(); 256];
        let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); 256];
        let mut first = 1;
        while first < trie.nodes.len() {
            buckets.iter_mut().for_each(Vec::clear);
            for t in trie.subtree_tokens(first) {
                buckets[chars[t.index()] as usize].push(t.0);
            }
            by_first_byte[trie.nodes[first].byte as usize] = buckets[1..].concat();
            first = trie.nodes[first].subtree_end as usize;
        }
        let mut all = BitSet::new(vocab_len);
        let by_length = lists
            .into_iter()
            .enumerate()
            .filter(|(_, ids)| !ids.is_empty())
            .map(|(n, ids)| {
                let set = TokenSet::from_ids(ids, vocab_len);
                set.or_into(&mut all);
                (n, Arc::new(set))
            })
            .collect();
        PlainText { chars, below, runs, by_first_byte, by_length, all: Arc::new(TokenSet::Bits(all)) }
    }

    /// Is token `t` plain text of at most `n` characters?
    #[inline]
    pub fn is_plain_within(&self, t: u32, n: usize) -> bool {
        (1..=n).contains(&(self.chars[t as usize] as usize))
    }

    /// Is every token at or below trie node `node` plain text of at most `n` characters?
    #[inline]
    pub fn plain_within(&self, node: usize, n: usize) -> bool {
        let (longest, other) = self.below[node];
        !other && longest as usize <= n
    }

    /// Where the run of siblings with only plain tokens of at most `n`
    /// characters below, from trie node `node` on, ends; `None` if `node`
    /// has another token below or a longer one is in the run.
    #[inline]
    pub fn plain_siblings_within(&self, node: usize, n: usize) -> Option<usize> {
        let (end, longest) = self.runs[node];
        (!self.below[node].1 && longest as usize <= n).then_some(end as usize)
    }

    /// The plain tokens of at most `n` characters whose first byte is `byte`.
    pub fn under_first_byte_within(&self, byte: u8, n: usize) -> &[u32] {
        let ids = &self.by_first_byte[byte as usize];
        &ids[..ids.partition_point(|&t| self.chars[t as usize] as usize <= n)]
    }

    /// How many plain tokens have at most `n` characters.
    pub fn count_within(&self, n: usize) -> usize {
        self.by_length.iter().take_while(|(m, _)| *m <= n).map(|(_, set)| set.len()).sum()
    }

    /// The lengths in characters that plain tokens have, with their tokens.
    pub fn by_length(&self) -> &[(usize, Arc<TokenSet>)] {
        &self.by_length
    }

    /// The longest plain token, in characters (0: none).
    pub fn max_length(&self) -> usize {
        self.by_length.last().map_or(0, |&(n, _)| n)
    }

    /// Every plain token.
    pub fn all(&self) -> &Arc<TokenSet> {
        &self.all
    }
}

/// The length in characters of `bytes` if it is plain text (and at most 255
/// characters long).
fn plain_length(bytes: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(bytes).ok()?;
    let n = text.chars().count();
    let plain = text.chars().all(|ch| ch >= ' ' && ch != '"' && ch != '\\');
    (plain && (1..=255).contains(&n)).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{TokenDef, Vocab};

    #[test]
    fn plain_tokens_are_whole_characters_without_quotes_escapes_or_controls() {
        let tokens: Vec<&[u8]> = vec![
            b"ab",
            "é".as_bytes(),
            &[0xC3], // half of `é`
            b"a\"",
            b"\\n",
            b"\n",
            "x€😀".as_bytes(),
            b"\x7f",
        ];
        let vocab = Vocab::new(tokens.iter().map(|b| TokenDef::Bytes(b.to_vec())).collect()).unwrap();
        let plain = vocab.plain_text();
        let lengths: Vec<_> = (0..tokens.len() as u32).map(|t| plain.is_plain_within(t, 255)).collect();
        assert_eq!(lengths, [true, true, false, false, false, false, true, true]);
        let of = |n: usize| {
            let (_, set) = plain.by_length().iter().find(|(m, _)| *m == n).expect("a length with tokens");
            let mut bits = BitSet::new(vocab.len());
            set.or_into(&mut bits);
            bits.iter().collect::<Vec<_>>()
        };
        assert_eq!((of(1), of(2), of(3)), (vec![1, 7], vec![0], vec![6]));
        assert_eq!(plain.max_length(), 3);
        assert_eq!(plain.all().len(), 4);
        // The root and `a`'s node lead to `a"`, the half `é` is not plain; `x€😀` is 3 characters.
        let trie = vocab.trie();
        let node_of = |prefix: &[u8]| {
            let mut i = 0;
            for &b in prefix {
                let mut child = i + 1;
                while trie.nodes[child].byte != b {
                    child = trie.nodes[child].subtree_end as usize;
                }
                i = child;
            }
            i
        };
        let within = |prefix: &[u8], n| plain.plain_within(node_of(prefix), n);
        assert!(!within(b"", 255) && !within(b"a", 255) && !within(&[0xC3], 255));
        assert!(within("é".as_bytes(), 1) && within(b"ab", 2) && !within(b"ab", 1) && within(b"x", 3));
        assert!(!plain.is_plain_within(6, 2) && plain.is_plain_within(6, 3) && plain.count_within(2) == 3);
    }
}
