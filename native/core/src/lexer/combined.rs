//! The combined lexer DFA: the product of every terminal's minimal DFA.
//!
//! A state is the list of terminals still possible, each with its own DFA
//! state. Because each component DFA is minimal, two combined states are
//! equal exactly when they behave the same for every terminal, so the product
//! needs no further minimisation. Per state we keep the terminals that accept
//! here; the components let a longest-match exclusion start from the exact
//! state of the terminal being emitted.

use rustc_hash::FxHashMap;

use super::dfa::{merge_classes, TermDfa, DEAD};
use crate::error::{Error, Result};
use crate::grammar::Grammar;
use crate::ids::{DfaStateId, TerminalId};

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LexerDfa {
    /// One minimal DFA per terminal, indexed by `TerminalId`.
    pub terminals: Vec<TermDfa>,
    #[serde(with = "crate::wire::byte_table")]
    pub classes: [u8; 256],
    pub num_classes: usize,
    /// One representative byte per class.
    pub class_reps: Vec<u8>,
    /// `trans[state * num_classes + class]`; state 0 is dead.
    pub trans: Vec<u32>,
    /// Live components of each state: `(terminal, state in that terminal's DFA)`.
    pub components: Vec<Vec<(TerminalId, u32)>>,
    /// Terminals that may end a lexeme in each state (sorted): those that
    /// accept here, restricted to the highest priority among them.
    pub accepts: Vec<Vec<TerminalId>>,
    pub start: DfaStateId,
    /// Per terminal: [`crate::grammar::Terminal::maximal`].
    pub maximal: Vec<bool>,
}

pub const DEAD_STATE: DfaStateId = DfaStateId(0);

#[derive(Clone, Debug)]
pub struct LexerLimits {
    /// States of one terminal's DFA (counted repetition unrolls). Speed: ~1M/s.
    pub max_terminal_dfa_states: usize,
    /// States of the combined DFA over all terminals.
    pub max_lexer_dfa_states: usize,
    /// Lexer configurations (DFA state × pending exclusions).
    pub max_lexer_configs: usize,
}

impl Default for LexerLimits {
    fn default() -> Self {
        LexerLimits { max_terminal_dfa_states: 200_000, max_lexer_dfa_states: 500_000, max_lexer_configs: 500_000 }
    }
}

impl LexerDfa {
    pub fn build(grammar: &Grammar, limits: &LexerLimits) -> Result<LexerDfa> {
        let mut terminals = Vec::with_capacity(grammar.terminals.len());
        for t in &grammar.terminals {
            let dfa = TermDfa::cached(&t.pattern, limits.max_terminal_dfa_states)
                .map_err(|e| e.at(&grammar.source, t.span))?;
            if dfa.accepts_empty() {
                return Err(Error::grammar(
                    "empty_terminal",
                    format!("terminal {} matches the empty string; terminals must consume at least one byte", t.name),
                )
                .at(&grammar.source, t.span));
            }
            terminals.push(dfa);
        }
        let (classes, num_classes, class_reps) = merge_classes(terminals.iter().map(|d| &d.classes));
        let mut ids: FxHashMap<Vec<(TerminalId, u32)>, u32> = FxHashMap::default();
        let mut components: Vec<Vec<(TerminalId, u32)>> = vec![Vec::new()];
        ids.insert(Vec::new(), 0);
        let start: Vec<(TerminalId, u32)> = terminals
            .iter()
            .enumerate()
            .filter(|(_, d)| d.live[d.start as usize])
            .map(|(i, d)| (TerminalId::from_usize(i), d.start))
            .collect();
        let start_id = if start.is_empty() {
            0
        } else {
            // Not interned: a state with the same components reached by bytes
            // (`b*a` after `b`) is a lexeme in progress, not a boundary.
            components.push(start);
            1
        };
        // The dead state's row first.
        let mut trans = vec![0u32; num_classes];
        // Each terminal's own class of each combined class, so that a state's
        // successors on every class come from one pass over each component's
        // row (sequential reads), not a lookup per class and component.
        let class_in: Vec<Vec<u8>> =
            terminals.iter().map(|d| class_reps.iter().map(|&r| d.classes[r as usize]).collect()).collect();
        // Scratch lists, looked up by slice: a list is allocated only for a
        // new state (most transitions lead to known ones).
        let mut next: Vec<Vec<(TerminalId, u32)>> = vec![Vec::new(); num_classes];
        let mut i = 1;
        while i < components.len() {
            next.iter_mut().for_each(Vec::clear);
            for &(t, s) in &components[i] {
                let d = &terminals[t.index()];
                let row = &d.trans[s as usize * d.num_classes..(s as usize + 1) * d.num_classes];
                for (list, &c) in next.iter_mut().zip(&class_in[t.index()]) {
                    // A minimal DFA's only dead state is 0.
                    let s2 = row[c as usize];
                    if s2 != DEAD {
                        list.push((t, s2));
                    }
                }
            }
            for c in 0..num_classes {
                // Neighbouring classes often agree (the letters inside a string).
                if c > 0 && next[c] == next[c - 1] {
                    let prev = trans[trans.len() - 1];
                    trans.push(prev);
                    continue;
                }
                let id = match ids.get(next[c].as_slice()) {
                    Some(&id) => id,
                    None => {
                        let id = components.len() as u32;
                        ids.insert(next[c].clone(), id);
                        components.push(next[c].clone());
                        id
                    }
                };
                if components.len() > limits.max_lexer_dfa_states {
                    return Err(Error::limit("max_lexer_dfa_states", components.len(), limits.max_lexer_dfa_states));
                }
                trans.push(id);
            }
            i += 1;
        }
        // Priorities only break ties between terminals accepting the same lexeme.
        let accepts = components
            .iter()
            .map(|comps| {
                let accepting: Vec<TerminalId> =
                    comps.iter().filter(|(t, s)| terminals[t.index()].accept[*s as usize]).map(|(t, _)| *t).collect();
                let top = accepting.iter().map(|t| grammar.terminals[t.index()].priority).max();
                accepting.into_iter().filter(|t| Some(grammar.terminals[t.index()].priority) == top).collect()
            })
            .collect();
        Ok(LexerDfa {
            terminals,
            classes,
            num_classes,
            class_reps,
            trans,
            components,
            accepts,
            start: DfaStateId(start_id),
            maximal: grammar.terminals.iter().map(|t| t.maximal).collect(),
        })
    }

    pub fn num_states(&self) -> usize {
        self.components.len()
    }

    #[inline]
    pub fn next(&self, state: DfaStateId, byte: u8) -> DfaStateId {
        DfaStateId(self.trans[state.index() * self.num_classes + self.classes[byte as usize] as usize])
    }

    /// The state of terminal `t`'s own DFA inside combined state `state`.
    pub fn component(&self, state: DfaStateId, t: TerminalId) -> Option<u32> {
        let comps = &self.components[state.index()];
        comps.binary_search_by_key(&t, |&(x, _)| x).ok().map(|i| comps[i].1)
    }
}

impl crate::memory::HeapBytes for LexerDfa {
    fn heap_bytes(&self) -> usize {
        self.terminals.heap_bytes()
            + self.class_reps.heap_bytes()
            + self.trans.heap_bytes()
            + self.components.heap_bytes()
            + self.accepts.heap_bytes()
            + self.maximal.heap_bytes()
    }
}
