//! The DFA of [`Pattern::JsonStrings`](crate::grammar::Pattern::JsonStrings):
//! every JSON encoding of a finite set of strings (an object's keys, a
//! string `enum`), built directly instead of through a Thompson NFA.
//!
//! A code point may be written raw (UTF-8, except `"`, `\` and the controls
//! below U+0020, which JSON forbids raw), as a short escape (`\n`, `\"`, `\/`,
//! ...) or as `\uXXXX` with hex digits in either case (a supplementary code
//! point as a surrogate pair). These are the encodings the JSON Schema front
//! end writes as a regex per code point; a key there became a concatenation
//! of such alternations, and its NFA's subset construction plus minimisation
//! cost ~4 µs per character (~1 ms of a typical schema's compile).
//!
//! Here the strings go into a trie of code points; each trie node is one DFA
//! state, and the encodings of its children's code points form a small byte
//! trie from it to them (encodings are prefix-free: a raw byte never starts
//! an escape, escapes are fixed length). That table is already deterministic
//! and acyclic, so it is minimised bottom-up on its sparse rows (Revuz: a
//! state's successors are final before it), and only the minimal states
//! become a dense table.

use rustc_hash::FxHashMap;

use super::dfa::TermDfa;
use crate::error::{Error, Result};

/// A DFA under construction: sparse rows, state 0 dead.
struct Sparse {
    rows: Vec<Vec<(u8, u32)>>,
    accept: Vec<bool>,
}

impl Sparse {
    fn add(&mut self, accept: bool) -> u32 {
        self.rows.push(Vec::new());
        self.accept.push(accept);
        (self.rows.len() - 1) as u32
    }

    fn target(&self, s: u32, b: u8) -> Option<u32> {
        self.rows[s as usize].iter().find(|&&(x, _)| x == b).map(|&(_, t)| t)
    }

    /// Follow or create the path of `encoding` (one byte set per position,
    /// every byte of a set moving alike) from `from`, its last step to `to`.
    fn insert(&mut self, from: u32, encoding: &[Vec<u8>], to: u32) {
        let mut s = from;
        for (i, set) in encoding.iter().enumerate() {
            let last = i + 1 == encoding.len();
            let next = match self.target(s, set[0]) {
                Some(t) => t,
                None => {
                    let t = if last { to } else { self.add(false) };
                    for &b in set {
                        self.rows[s as usize].push((b, t));
                    }
                    t
                }
            };
            debug_assert!(set.iter().all(|&b| self.target(s, b) == Some(next)), "encodings are prefix-free");
            s = next;
        }
    }
}

/// The DFA of the JSON encodings of `strings`, with the quotes when `quoted`.
pub fn json_strings_dfa(strings: &[String], quoted: bool, max_states: usize) -> Result<TermDfa> {
    // A trie of code points: children per node, and whether a string ends there.
    let mut children: Vec<Vec<(char, u32)>> = vec![Vec::new()];
    let mut ends = vec![false];
    for s in strings {
        let mut node = 0u32;
        for c in s.chars() {
            node = match children[node as usize].iter().find(|&&(x, _)| x == c) {
                Some(&(_, child)) => child,
                None => {
                    children.push(Vec::new());
                    ends.push(false);
                    let child = (children.len() - 1) as u32;
                    children[node as usize].push((c, child));
                    child
                }
            };
        }
        ends[node as usize] = true;
    }
    let mut dfa = Sparse { rows: vec![Vec::new()], accept: vec![false] };
    let start = dfa.add(false);
    // The trie's nodes first (node `i` is state `first + i`), their escape paths after.
    let first = if quoted { dfa.add(false) } else { start };
    for _ in 1..children.len() {
        dfa.add(false);
    }
    if quoted {
        dfa.insert(start, &[vec![b'"']], first);
    }
    let closed = quoted.then(|| dfa.add(true));
    let mut encoding = Vec::new();
    for (node, kids) in children.iter().enumerate() {
        let state = first + node as u32;
        if ends[node] {
            match closed {
                Some(end) => dfa.insert(state, &[vec![b'"']], end),
                None => dfa.accept[state as usize] = true,
            }
        }
        for &(c, child) in kids {
            for_each_encoding(c, &mut encoding, &mut |e| dfa.insert(state, e, first + child));
        }
        if dfa.rows.len() > max_states {
            return Err(Error::limit("max_terminal_dfa_states", dfa.rows.len(), max_states));
        }
    }
    let (dfa, start) = dfa.minimal(start);
    Ok(dense(dfa, start))
}

/// JSON's short escapes: the code point and the letter after `\\`.
pub const SHORT_ESCAPES: [(char, u8); 8] = [
    ('"', b'"'),
    ('\\', b'\\'),
    ('/', b'/'),
    ('\u{8}', b'b'),
    ('\u{c}', b'f'),
    ('\n', b'n'),
    ('\r', b'r'),
    ('\t', b't'),
];

/// Each encoding of `c` as one byte set per position.
fn for_each_encoding(c: char, buf: &mut Vec<Vec<u8>>, f: &mut impl FnMut(&[Vec<u8>])) {
    let code = c as u32;
    let short = SHORT_ESCAPES.iter().find(|&&(x, _)| x == c).map(|&(_, letter)| letter);
    if code >= 0x20 && c != '"' && c != '\\' {
        let mut utf8 = [0u8; 4];
        buf.clear();
        buf.extend(c.encode_utf8(&mut utf8).bytes().map(|b| vec![b]));
        f(buf);
    }
    if let Some(letter) = short {
        buf.clear();
        buf.extend([vec![b'\\'], vec![letter]]);
        f(buf);
    }
    buf.clear();
    if code <= 0xFFFF {
        u_escape(code, buf);
    } else {
        let v = code - 0x10000;
        u_escape(0xD800 + (v >> 10), buf);
        u_escape(0xDC00 + (v & 0x3FF), buf);
    }
    f(buf);
}

/// `\u` and four hex digits of `unit`, each in both cases.
fn u_escape(unit: u32, buf: &mut Vec<Vec<u8>>) {
    buf.extend([vec![b'\\'], vec![b'u']]);
    for shift in [12, 8, 4, 0] {
        let d = ((unit >> shift) & 0xF) as u8;
        buf.push(match d {
            0..=9 => vec![b'0' + d],
            _ => vec![b'a' + d - 10, b'A' + d - 10],
        });
    }
}

impl Sparse {
    /// The minimal DFA (state 0 still dead), by Revuz's bottom-up pass for
    /// acyclic automata: in post-order from `start`, each state's successors
    /// are already merged, so two states are equivalent exactly when their
    /// acceptance and their rows (targets renamed) are equal. Every state but
    /// the dead one reaches acceptance, so nothing else needs merging.
    fn minimal(&self, start: u32) -> (Sparse, u32) {
        const UNSEEN: u32 = u32::MAX;
        let mut block = vec![UNSEEN; self.rows.len()];
        block[0] = 0;
        let mut out = Sparse { rows: vec![Vec::new()], accept: vec![false] };
        let mut by_signature: FxHashMap<(bool, Vec<(u8, u32)>), u32> = FxHashMap::default();
        // (state, successors visited so far)
        let mut stack = vec![(start, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (s, i) = *top;
            if let Some(&(_, t)) = self.rows[s as usize].get(i) {
                top.1 += 1;
                if block[t as usize] == UNSEEN {
                    stack.push((t, 0));
                }
                continue;
            }
            stack.pop();
            let mut row: Vec<(u8, u32)> = self.rows[s as usize].iter().map(|&(b, t)| (b, block[t as usize])).collect();
            row.sort_unstable();
            let accept = self.accept[s as usize];
            block[s as usize] = *by_signature.entry((accept, row)).or_insert_with_key(|(accept, row)| {
                out.rows.push(row.clone());
                out.accept.push(*accept);
                (out.rows.len() - 1) as u32
            });
        }
        (out, block[start as usize])
    }
}

/// The sparse table, minimal already, as a complete one over byte classes
/// (each byte used its own class, the others one class).
fn dense(dfa: Sparse, start: u32) -> TermDfa {
    let mut used = [false; 256];
    for row in &dfa.rows {
        for &(b, _) in row {
            used[b as usize] = true;
        }
    }
    // Class 0 holds the unused bytes, if any.
    let mut k = usize::from(used.contains(&false));
    let mut classes = [0u8; 256];
    for b in 0..256usize {
        if used[b] {
            classes[b] = k as u8;
            k += 1;
        }
    }
    let mut trans = vec![0u32; dfa.rows.len() * k];
    for (s, row) in dfa.rows.iter().enumerate() {
        for &(b, t) in row {
            trans[s * k + classes[b as usize] as usize] = t;
        }
    }
    let identity: Vec<u32> = (0..dfa.rows.len() as u32).collect();
    TermDfa::from_blocks(classes, k, &trans, &dfa.accept, start, &identity, identity.len())
}
