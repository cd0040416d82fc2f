//! Lexer configurations and their transitions (DESIGN §3, "Lexing is
//! per-terminal longest match").
//!
//! A configuration is the combined-DFA state of the lexeme in progress plus
//! the pending *exclusions*: terminals emitted earlier that could still have
//! matched a longer lexeme, each with its own DFA state advanced over the
//! bytes since. If an excluded terminal reaches an accepting state, the early
//! emission was not the longest match and the branch dies; once it can no
//! longer accept, the exclusion is dropped. A configuration whose DFA state is
//! the start state is a *boundary*: nothing is pending in the current lexeme.
//!
//! All configurations reachable from the start are enumerated when the
//! grammar is compiled, so runtime lexing is table lookups:
//! `next(config, byte)` continues the lexeme in progress, `emits(config)` lists
//! the terminals that may end here with the boundary configuration that
//! follows each.

use rustc_hash::FxHashMap;

use super::combined::{LexerDfa, DEAD_STATE};
use super::dfa::TermDfa;
use crate::error::{Error, Result};
use crate::ids::{DfaStateId, LexConfigId, TerminalId};

/// `(terminal, state in that terminal's DFA)`: T must not reach an accepting state.
pub type Exclusion = (TerminalId, u32);

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LexConfig {
    pub dfa: DfaStateId,
    pub exclusions: Vec<Exclusion>,
}

pub const NO_CONFIG: u32 = u32::MAX;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LexConfigs {
    pub configs: Vec<LexConfig>,
    pub num_classes: usize,
    /// `next[config * num_classes + class]`, or `NO_CONFIG`.
    pub next: Vec<u32>,
    /// CSR: `emits[emit_start[c]..emit_start[c+1]]`.
    pub emit_start: Vec<u32>,
    pub emits: Vec<(TerminalId, LexConfigId)>,
    pub start: LexConfigId,
}

impl LexConfigs {
    pub fn build(dfa: &LexerDfa, max_configs: usize) -> Result<LexConfigs> {
        let k = dfa.num_classes;
        let mut ids: FxHashMap<LexConfig, u32> = FxHashMap::default();
        let mut configs = vec![LexConfig { dfa: dfa.start, exclusions: Vec::new() }];
        ids.insert(configs[0].clone(), 0);
        let mut next = Vec::new();
        let mut emit_lists: Vec<Vec<(TerminalId, LexConfigId)>> = Vec::new();
        let mut intern = |c: LexConfig, configs: &mut Vec<LexConfig>| -> Result<u32> {
            if let Some(&id) = ids.get(&c) {
                return Ok(id);
            }
            let id = configs.len() as u32;
            if configs.len() >= max_configs {
                return Err(Error::limit("max_lexer_configs", configs.len() + 1, max_configs));
            }
            ids.insert(c.clone(), id);
            configs.push(c);
            Ok(id)
        };
        // Per (maximal terminal, state): is its exclusion implied ([`starts_with_a_match`])?
        let mut implied: FxHashMap<(TerminalId, u32), bool> = FxHashMap::default();
        let mut i = 0;
        while i < configs.len() {
            let config = configs[i].clone();
            i += 1;
            // Continue the lexeme in progress by one byte class.
            for &rep in &dfa.class_reps {
                let target = match step(dfa, &config, rep) {
                    Some(c) => intern(c, &mut configs)?,
                    None => NO_CONFIG,
                };
                next.push(target);
            }
            // End the lexeme here as any accepting terminal.
            let mut emits = Vec::new();
            if config.dfa != dfa.start {
                for &t in &dfa.accepts[config.dfa.index()] {
                    let mut exclusions = config.exclusions.clone();
                    let s = dfa.component(config.dfa, t).expect("accepting terminal is a component");
                    let term = &dfa.terminals[t.index()];
                    let maximal = dfa.maximal[t.index()];
                    if maximal {
                        exclusions.push((t, term.start)); // no match of t may start here
                    }
                    if term.accepts_later[s as usize]
                        && !(maximal && *implied.entry((t, s)).or_insert_with(|| starts_with_a_match(term, s)))
                    {
                        exclusions.push((t, s));
                    }
                    exclusions.sort_unstable();
                    exclusions.dedup();
                    let fresh = intern(LexConfig { dfa: dfa.start, exclusions }, &mut configs)?;
                    emits.push((t, LexConfigId(fresh)));
                }
            }
            emit_lists.push(emits);
        }
        debug_assert_eq!(next.len(), configs.len() * k);
        let mut emit_start = Vec::with_capacity(configs.len() + 1);
        let mut emits = Vec::new();
        for list in emit_lists {
            emit_start.push(emits.len() as u32);
            emits.extend(list);
        }
        emit_start.push(emits.len() as u32);
        Ok(LexConfigs { configs, num_classes: k, next, emit_start, emits, start: LexConfigId(0) })
    }

    pub fn len(&self) -> usize {
        self.configs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }

    #[inline]
    pub fn next(&self, dfa: &LexerDfa, c: LexConfigId, byte: u8) -> Option<LexConfigId> {
        let t = self.next[c.index() * self.num_classes + dfa.classes[byte as usize] as usize];
        (t != NO_CONFIG).then_some(LexConfigId(t))
    }

    #[inline]
    pub fn next_by_class(&self, c: LexConfigId, class: usize) -> Option<LexConfigId> {
        let t = self.next[c.index() * self.num_classes + class];
        (t != NO_CONFIG).then_some(LexConfigId(t))
    }

    #[inline]
    pub fn emits(&self, c: LexConfigId) -> &[(TerminalId, LexConfigId)] {
        &self.emits[self.emit_start[c.index()] as usize..self.emit_start[c.index() + 1] as usize]
    }

    /// May a fresh lexeme, after one that ends at `c`, begin with a byte of
    /// `class`? Where none may, a lexeme ending at `c` is a dead end before
    /// such a byte (the exclusion it leaves kills the early end of a run, a
    /// number, a name), and the lexeme in progress is the only way on.
    #[inline]
    pub fn fresh_takes_class(&self, c: LexConfigId, class: usize) -> bool {
        self.emits(c).iter().any(|&(_, f)| self.next_by_class(f, class).is_some())
    }

    pub fn is_boundary(&self, dfa: &LexerDfa, c: LexConfigId) -> bool {
        self.configs[c.index()].dfa == dfa.start
    }
}

/// Pairs of states [`starts_with_a_match`] explores before it answers no.
const MAX_MATCH_PAIRS: usize = 4096;

/// Does every match of `t` from state `s` begin with a match of `t` from its
/// start, no longer? Then the exclusion a maximal lexeme leaves at the
/// boundary (no match of `t` next) kills every branch the exclusion of a
/// longer lexeme would, as early, and only that one is kept (`[ ]{1,4}`: both
/// say "no space next"; free text's runs: "no run character next", a
/// multi-byte one too). Decided on the pairs of states the two reach over
/// the same bytes; `false` where that takes more than [`MAX_MATCH_PAIRS`].
fn starts_with_a_match(t: &TermDfa, s: u32) -> bool {
    // One byte of each class: bytes of a class move alike.
    let mut reps = vec![None; t.num_classes];
    for b in 0..=255u8 {
        reps[t.classes[b as usize] as usize].get_or_insert(b);
    }
    let mut seen: FxHashMap<(u32, u32), ()> = FxHashMap::default();
    let mut stack = vec![(s, t.start)];
    seen.insert((s, t.start), ());
    while let Some((x, y)) = stack.pop() {
        for b in reps.iter().flatten().copied() {
            let (x2, y2) = (t.next(x, b), t.next(y, b));
            if t.accept[y2 as usize] || !t.live[x2 as usize] {
                continue; // killed by the boundary's exclusion first, or never a match
            }
            if t.accept[x2 as usize] || !t.live[y2 as usize] {
                return false; // a match from `s` with no match from the start before it
            }
            if seen.insert((x2, y2), ()).is_none() {
                if seen.len() > MAX_MATCH_PAIRS {
                    return false;
                }
                stack.push((x2, y2));
            }
        }
    }
    true
}

/// Continue `config` by one byte: `None` if the lexeme in progress dies or an
/// exclusion is violated.
fn step(dfa: &LexerDfa, config: &LexConfig, byte: u8) -> Option<LexConfig> {
    let d = dfa.next(config.dfa, byte);
    if d == DEAD_STATE {
        return None;
    }
    let mut exclusions = Vec::with_capacity(config.exclusions.len());
    for &(t, s) in &config.exclusions {
        let term = &dfa.terminals[t.index()];
        let s2 = term.next(s, byte);
        if term.accept[s2 as usize] {
            return None; // the earlier emission of t was not its longest match
        }
        if term.live[s2 as usize] {
            exclusions.push((t, s2));
        }
    }
    exclusions.sort_unstable();
    exclusions.dedup();
    Some(LexConfig { dfa: d, exclusions })
}

impl crate::memory::HeapBytes for LexConfig {
    fn heap_bytes(&self) -> usize {
        crate::memory::HeapBytes::heap_bytes(&self.exclusions)
    }
}

impl crate::memory::HeapBytes for LexConfigs {
    fn heap_bytes(&self) -> usize {
        self.configs.heap_bytes() + self.next.heap_bytes() + self.emit_start.heap_bytes() + self.emits.heap_bytes()
    }
}
