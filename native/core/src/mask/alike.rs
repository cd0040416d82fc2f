//! Configurations that behave alike as far as a token reaches.
//!
//! Inside a counted string (`maxLength`, `{24}`) every character position is a
//! lexer configuration of its own, so the Dynamic engine met a new one at
//! nearly every step and walked most of the vocabulary trie to build its
//! interior (4-5 ms on a 129k vocabulary). Yet two positions far enough from
//! the count's end behave the same for every token: the same bytes lead on,
//! to configurations that again correspond, and lexemes may end at the same
//! places, before the same bytes a fresh lexeme may begin. An interior
//! depends on nothing else (the trie from the configuration, by lexer steps
//! alone, with exits where a fresh lexeme may begin), so the interior of one
//! is the other's with configurations renamed.

use rustc_hash::FxHashMap;

use crate::ids::LexConfigId;
use crate::lexer::Lexer;

/// Pairs explored before giving up (a check that fails costs at most this).
const MAX_PAIRS: usize = 8192;

/// The correspondence between the configurations reachable from `from` and
/// from `to` within `depth` bytes (the longest token): a bijection that the
/// transitions of every byte class respect, and that keeps whether a lexeme
/// may end and before which bytes a fresh one may begin. `None` if there is
/// none (or it has more than [`MAX_PAIRS`] pairs).
pub(super) fn correspondence(
    lexer: &Lexer,
    from: LexConfigId,
    to: LexConfigId,
    depth: usize,
) -> Option<FxHashMap<LexConfigId, LexConfigId>> {
    let configs = &lexer.configs;
    let emits = |c: LexConfigId| !configs.emits(c).is_empty();
    // Where a lexeme may end, the interior has an exit before the bytes a
    // fresh lexeme may take, and goes on with the lexeme in progress.
    let fresh = |c: LexConfigId, class: usize| configs.fresh_takes_class(c, class);
    let ends_alike = |x: LexConfigId, y: LexConfigId| match (emits(x), emits(y)) {
        (true, true) => (0..configs.num_classes).all(|k| fresh(x, k) == fresh(y, k)),
        (a, b) => a == b,
    };
    if !ends_alike(from, to) {
        return None;
    }
    let mut forward: FxHashMap<LexConfigId, LexConfigId> = FxHashMap::default();
    let mut backward: FxHashMap<LexConfigId, LexConfigId> = FxHashMap::default();
    forward.insert(from, to);
    backward.insert(to, from);
    // Breadth-first, so a configuration is expanded at its least depth.
    let mut queue = std::collections::VecDeque::from([(from, to, 0usize)]);
    while let Some((x, y, d)) = queue.pop_front() {
        // No token reaches past `depth` bytes.
        if d == depth {
            continue;
        }
        for class in 0..configs.num_classes {
            match (configs.next_by_class(x, class), configs.next_by_class(y, class)) {
                (None, None) => {}
                (Some(nx), Some(ny)) => match (forward.get(&nx), backward.get(&ny)) {
                    (Some(&fy), Some(&bx)) if fy == ny && bx == nx => {}
                    (None, None) if ends_alike(nx, ny) => {
                        if forward.len() >= MAX_PAIRS {
                            return None;
                        }
                        forward.insert(nx, ny);
                        backward.insert(ny, nx);
                        queue.push_back((nx, ny, d + 1));
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }
    Some(forward)
}
