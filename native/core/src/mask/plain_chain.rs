//! Plain runs: where plain text ([`crate::vocab::PlainText`]) takes a lexer
//! configuration.
//!
//! A configuration's *plain step* is the configuration after one plain
//! character when every plain character leads to the same one, passing no
//! configuration where a lexeme may end (nor inside a multi-byte
//! character), or kills the lexeme. A *plain run* from a configuration
//! allows exceptions at the first character only: the first bytes whose
//! characters all lead to the most common target are *regular*, and from
//! that target plain steps go on as far as they exist (up to the longest
//! plain token). A plain token with a regular first byte and `n` characters
//! within the run ends at its `n`th configuration without passing an exit.
//! So inside a JSON string (plain, counted, or beside keys, enum values and
//! formats that only some characters continue) an interior's plain groups
//! are the vocabulary's sets by length, and only the other tokens, and
//! those starting with an exceptional byte, are walked.

use std::sync::Mutex;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::ids::LexConfigId;
use crate::lexer::Lexer;

/// Where the plain characters starting with one byte lead.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// Every one to this configuration, none passing one where a lexeme may end.
    To(LexConfigId),
    /// Every one kills the lexeme.
    Dead,
    /// They differ, or one passes a configuration where a lexeme may end.
    Mixed,
}

use Outcome::{Dead, Mixed, To};

/// Multi-byte UTF-8 characters: lead bytes, the range of the second byte
/// after them, and how many continuation bytes (`80..=BF`) follow that.
/// (Surrogates and overlong forms are not characters: `E0`, `ED`, `F0` and
/// `F4` restrict their second byte.)
const MULTI_BYTE: [(u8, u8, u8, u8, usize); 8] = [
    (0xC2, 0xDF, 0x80, 0xBF, 0),
    (0xE0, 0xE0, 0xA0, 0xBF, 1),
    (0xE1, 0xEC, 0x80, 0xBF, 1),
    (0xED, 0xED, 0x80, 0x9F, 1),
    (0xEE, 0xEF, 0x80, 0xBF, 1),
    (0xF0, 0xF0, 0x90, 0xBF, 2),
    (0xF1, 0xF3, 0x80, 0xBF, 2),
    (0xF4, 0xF4, 0x80, 0x8F, 2),
];

/// Is `b` the first byte of a plain character?
fn starts_plain(b: u8) -> bool {
    ((0x20..=0x7F).contains(&b) && b != b'"' && b != b'\\') || (0xC2..=0xF4).contains(&b)
}

/// How plain text moves one configuration.
#[derive(Debug)]
pub(super) struct PlainRun {
    /// First bytes whose plain characters all go where `chain[0]` says.
    pub regular: [bool; 256],
    /// The configuration after `n` plain characters, the first with a
    /// regular byte (`None`: dead), for `n` in `1..=chain.len()`.
    pub chain: Vec<Option<LexConfigId>>,
}

/// Plain steps a constraint keeps; past this the memo starts over.
const MAX_STEPS: usize = 1 << 16;

/// Plain steps memoised per configuration: a counted string's run from one
/// character is its run from the previous one, a step further.
#[derive(Debug, Default)]
pub(super) struct PlainChains {
    steps: Mutex<FxHashMap<LexConfigId, Outcome>>,
}

impl PlainChains {
    /// The plain run from `c`, up to `max_length` characters.
    pub(super) fn run(&self, lexer: &Lexer, c: LexConfigId, max_length: usize) -> PlainRun {
        let firsts = first_bytes(lexer, c);
        // The most common outcome of a first byte is the regular one.
        let mut counts: SmallVec<[(Outcome, usize); 8]> = SmallVec::new();
        for &o in firsts.iter().flatten() {
            match counts.iter_mut().find(|(x, _)| *x == o) {
                Some((_, n)) => *n += 1,
                None => counts.push((o, 1)),
            }
        }
        let regular_outcome = counts.iter().filter(|(o, _)| *o != Mixed).max_by_key(|(_, n)| *n).map(|(o, _)| *o);
        let (Some(first), true) = (regular_outcome, max_length > 0) else {
            return PlainRun { regular: [false; 256], chain: Vec::new() };
        };
        let regular = std::array::from_fn(|b| firsts[b] == Some(first));
        let mut chain = Vec::with_capacity(max_length);
        chain.push(match first {
            To(y) => Some(y),
            _ => None,
        });
        self.extend(lexer, &mut chain, max_length);
        PlainRun { regular, chain }
    }

    /// `chain` continued by plain steps up to `max_length` configurations.
    fn extend(&self, lexer: &Lexer, chain: &mut Vec<Option<LexConfigId>>, max_length: usize) {
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        if steps.len() >= MAX_STEPS {
            steps.clear();
        }
        while chain.len() < max_length {
            let Some(x) = chain[chain.len() - 1] else {
                chain.resize(max_length, None);
                break;
            };
            let step = *steps.entry(x).or_insert_with(|| plain_step(lexer, x));
            match step {
                // A loop: every longer run ends here too.
                To(y) if y == x => chain.resize(max_length, Some(x)),
                To(y) => chain.push(Some(y)),
                Dead => chain.push(None),
                Mixed => break,
            }
        }
    }
}

/// One plain step from `x`: the outcome every first byte shares, if any.
fn plain_step(lexer: &Lexer, x: LexConfigId) -> Outcome {
    let mut shared = None;
    for &o in first_bytes(lexer, x).iter().flatten() {
        if o == Mixed || *shared.get_or_insert(o) != o {
            return Mixed;
        }
    }
    shared.unwrap_or(Mixed)
}

/// Per first byte of a plain character, where its characters take `x`
/// (`None`: no plain character starts with it). Bytes of one class of the
/// grammar's lexer move alike, so each class is followed once (and, after a
/// lead byte, once per range its next byte has).
fn first_bytes(lexer: &Lexer, x: LexConfigId) -> [Option<Outcome>; 256] {
    let configs = &lexer.configs;
    let classes = &lexer.dfa.classes;
    let may_end = |c: LexConfigId| !configs.emits(c).is_empty();
    let mut out = [None; 256];
    let mut ascii: FxHashMap<u8, Outcome> = FxHashMap::default();
    for b in (0x20..=0x7F).filter(|&b| starts_plain(b)) {
        let class = classes[b as usize];
        out[b as usize] = Some(*ascii.entry(class).or_insert_with(|| match configs.next_by_class(x, class as usize) {
            None => Dead,
            Some(y) if may_end(y) => Mixed,
            Some(y) => To(y),
        }));
    }
    let mut multi: FxHashMap<(u8, usize), Outcome> = FxHashMap::default();
    for (kind, &(lead_lo, lead_hi, ..)) in MULTI_BYTE.iter().enumerate() {
        for lead in lead_lo..=lead_hi {
            let key = (classes[lead as usize], kind);
            out[lead as usize] = Some(*multi.entry(key).or_insert_with(|| after_lead(lexer, x, lead, kind)));
        }
    }
    out
}

/// Where the characters of lead byte `lead` (of [`MULTI_BYTE`]`[kind]`) take `x`.
fn after_lead(lexer: &Lexer, x: LexConfigId, lead: u8, kind: usize) -> Outcome {
    let configs = &lexer.configs;
    let classes = &lexer.dfa.classes;
    let (_, _, second_lo, second_hi, more) = MULTI_BYTE[kind];
    // The configuration every character so far reached (`Some(None)`: dead).
    let mut agreed: Option<Option<LexConfigId>> = None;
    let mut agree = |to: Option<LexConfigId>| *agreed.get_or_insert(to) == to;
    let mut inside: SmallVec<[LexConfigId; 4]> = SmallVec::new();
    match configs.next(&lexer.dfa, x, lead) {
        None => return Dead,
        Some(y) if !configs.emits(y).is_empty() => return Mixed,
        Some(y) => inside.push(y),
    }
    for k in 0..=more {
        let (lo, hi) = if k == 0 { (second_lo, second_hi) } else { (0x80, 0xBF) };
        let last = k == more;
        let mut after: SmallVec<[LexConfigId; 4]> = SmallVec::new();
        let mut seen: SmallVec<[u8; 8]> = SmallVec::new();
        for b in lo..=hi {
            let class = classes[b as usize];
            if seen.contains(&class) {
                continue;
            }
            seen.push(class);
            for &c in &inside {
                match configs.next_by_class(c, class as usize) {
                    None if !agree(None) => return Mixed,
                    None => {}
                    // The character's end: all must agree.
                    Some(y) if last && !agree(Some(y)) => return Mixed,
                    Some(_) if last => {}
                    // Inside the character: no lexeme may end there.
                    Some(y) if !configs.emits(y).is_empty() => return Mixed,
                    Some(y) if !after.contains(&y) => after.push(y),
                    Some(_) => {}
                }
            }
        }
        inside = after;
    }
    match agreed {
        Some(Some(y)) if !configs.emits(y).is_empty() => Mixed,
        Some(Some(y)) => To(y),
        _ => Dead,
    }
}
