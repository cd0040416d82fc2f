//! Free text up to a trigger: [`any_text`].
//!
//! The text is any UTF-8 string that contains none of the excluded strings.
//! It is followed by one of them (a tag's start, its end string) or by the
//! end of the output, and it may end in a proper prefix of one (`hi <` before
//! `<a>`, or as the whole output): that is what xgrammar's free text means.
//!
//! As one lexeme the text could not end there: by longest match it would
//! swallow the start of the excluded string that follows. So the text is
//! split where an excluded string can begin: every character that starts
//! one (a *head*: `<` for `<tool_call>`) is a lexeme of its own, and the
//! characters between are *runs*, maximal by construction (a run stops only
//! before a head). Whether the text so far contains an excluded string is
//! regular; an Aho-Corasick automaton over the excluded strings tracks it,
//! and the grammar's rules are that automaton read one lexeme at a time:
//! one rule per automaton state at a head boundary. A run's terminal is
//! picked by where the run leaves the automaton, up to what decides the
//! future (the state each head leads to); usually that is one terminal per
//! head, "not starting with the rest of an excluded string".

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::compose::{any_bytes, plain_terminal, single_rule};
use super::{quote_bytes, Expr, Grammar, Pattern, Rule, Terminal};
use crate::error::{Error, Result};
use crate::ids::{RuleId, TerminalId};
use crate::source::{Source, Span};

/// Any UTF-8 text, the empty string included, that contains none of
/// `exclude` (each non-empty and starting with a whole UTF-8 character).
///
/// Meant to be followed by one of `exclude` or by the end of the output
/// (free text up to a trigger, a tag's content up to its end string).
pub fn any_text(exclude: &[Vec<u8>]) -> Result<Grammar> {
    if exclude.iter().any(|e| e.is_empty()) {
        return Err(Error::grammar("empty_exclude", "any_text: an excluded string must not be empty"));
    }
    let name = if exclude.is_empty() {
        "any_text".to_string()
    } else {
        format!("any_text(exclude {})", exclude.iter().map(|e| quote_bytes(e)).collect::<Vec<_>>().join(", "))
    };
    let source = Source::new("<any_text>", name.clone());
    if exclude.is_empty() {
        let span = Span::new(0, source.text.len());
        let text = Pattern::Repeat { pattern: Box::new(Pattern::any_char()), min: 1, max: None };
        let body = Expr::Alt(vec![Expr::Empty, Expr::Terminal(TerminalId::from_usize(0))]);
        return Ok(single_rule(source, vec![plain_terminal(name, text, span)], body));
    }
    let mut heads = Vec::new();
    for e in exclude {
        let Some(c) = first_char(e) else {
            return Err(Error::grammar(
                "bad_exclude",
                format!("any_text: the excluded string {} does not start with a UTF-8 character", quote_bytes(e)),
            ));
        };
        heads.push(c);
    }
    heads.sort_unstable();
    heads.dedup();
    Ok(Builder::new(exclude, heads, name, source).build())
}

fn first_char(bytes: &[u8]) -> Option<char> {
    let chunk = bytes.utf8_chunks().next()?;
    chunk.valid().chars().next()
}

/// The Aho-Corasick automaton of the excluded strings (states are the trie's
/// nodes; [`Trie::step`] follows failure links).
struct Trie {
    children: Vec<BTreeMap<u8, usize>>,
    fail: Vec<usize>,
    /// The node's string: a proper prefix of an excluded string, or one.
    label: Vec<Vec<u8>>,
    /// Some excluded string ends here (the node's string, or a suffix of it).
    dead: Vec<bool>,
}

const ROOT: usize = 0;

impl Trie {
    fn new(strings: &[Vec<u8>]) -> Trie {
        let mut t =
            Trie { children: vec![BTreeMap::new()], fail: vec![ROOT], label: vec![Vec::new()], dead: vec![false] };
        for s in strings {
            let mut n = ROOT;
            for &b in s {
                n = match t.children[n].get(&b) {
                    Some(&c) => c,
                    None => {
                        let c = t.children.len();
                        let mut label = t.label[n].clone();
                        label.push(b);
                        t.children.push(BTreeMap::new());
                        t.fail.push(ROOT);
                        t.label.push(label);
                        t.dead.push(false);
                        t.children[n].insert(b, c);
                        c
                    }
                };
            }
            t.dead[n] = true;
        }
        // Failure links breadth first: a node's link is shallower than it.
        let mut queue: VecDeque<usize> = t.children[ROOT].values().copied().collect();
        while let Some(n) = queue.pop_front() {
            for (&b, &c) in &t.children[n].clone() {
                let f = if n == ROOT { ROOT } else { t.step_byte(t.fail[n], b) };
                t.fail[c] = f;
                t.dead[c] |= t.dead[f];
                queue.push_back(c);
            }
        }
        t
    }

    fn step_byte(&self, mut n: usize, b: u8) -> usize {
        loop {
            if let Some(&c) = self.children[n].get(&b) {
                return c;
            }
            if n == ROOT {
                return ROOT;
            }
            n = self.fail[n];
        }
    }

    /// The state after `bytes` from `n`, or `None` once an excluded string is complete.
    fn step(&self, mut n: usize, bytes: &[u8]) -> Option<usize> {
        for &b in bytes {
            n = self.step_byte(n, b);
            if self.dead[n] {
                return None;
            }
        }
        Some(n)
    }

    /// Bytes with a child somewhere on `n`'s failure chain: the only bytes
    /// that do not fall back to the root.
    fn live_bytes(&self, mut n: usize) -> Vec<u8> {
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            bytes.extend(self.children[n].keys());
            if n == ROOT {
                break;
            }
            n = self.fail[n];
        }
        bytes.sort_unstable();
        bytes.dedup();
        bytes
    }
}

/// Where runs (texts without a head) lead from one automaton state.
#[derive(Default)]
struct Runs {
    /// Runs with one of these as prefix complete an excluded string.
    completing: Vec<Vec<u8>>,
    /// Runs that end inside an excluded string begun before them, with the
    /// state they end in; every other run ends in the root state.
    inside: Vec<(Vec<u8>, usize)>,
}

/// How a string stands against the heads: a whole run, the start of one
/// (ends inside a character), or neither (holds a head or is not UTF-8).
enum RunShape {
    Run,
    Partial,
    Neither,
}

fn run_shape(bytes: &[u8], heads: &[char]) -> RunShape {
    let mut chunks = bytes.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        if chunk.valid().chars().any(|c| heads.binary_search(&c).is_ok()) {
            return RunShape::Neither;
        }
        if !chunk.invalid().is_empty() {
            // Only an unfinished character at the very end may still become a run.
            let last = chunks.peek().is_none();
            return if last && std::str::from_utf8(chunk.invalid()).err().is_some_and(|e| e.error_len().is_none()) {
                RunShape::Partial
            } else {
                RunShape::Neither
            };
        }
    }
    RunShape::Run
}

struct Builder {
    trie: Trie,
    /// The heads' UTF-8 bytes, in the order of `head_chars`.
    heads: Vec<Vec<u8>>,
    head_chars: Vec<char>,
    name: String,
    source: Arc<Source>,
    span: Span,
    terminals: Vec<Terminal>,
    /// Automaton states at a boundary (the start, or right after a head), in discovery order.
    boundaries: Vec<usize>,
    boundary_index: FxHashMap<usize, usize>,
    /// Per boundary: the ways to reach it (alternatives of its rule).
    boundary_ways: Vec<Vec<Expr>>,
    /// After a run: the boundary each head leads to (`None`: it would complete
    /// an excluded string). One rule per distinct row.
    after_run: Vec<Vec<Option<usize>>>,
    after_run_index: FxHashMap<Vec<Option<usize>>, usize>,
    after_run_ways: Vec<Vec<Expr>>,
}

impl Builder {
    fn new(exclude: &[Vec<u8>], head_chars: Vec<char>, name: String, source: Arc<Source>) -> Builder {
        let heads = head_chars.iter().map(|c| c.to_string().into_bytes()).collect();
        let span = Span::new(0, source.text.len());
        Builder {
            trie: Trie::new(exclude),
            heads,
            head_chars,
            name,
            source,
            span,
            terminals: Vec::new(),
            boundaries: Vec::new(),
            boundary_index: FxHashMap::default(),
            boundary_ways: Vec::new(),
            after_run: Vec::new(),
            after_run_index: FxHashMap::default(),
            after_run_ways: Vec::new(),
        }
    }

    // Rule ids: 0 the start, then one per boundary, then one per after-run row.
    fn boundary_rule(&self, i: usize) -> RuleId {
        RuleId::from_usize(1 + i)
    }

    fn boundary(&mut self, state: usize) -> usize {
        if let Some(&i) = self.boundary_index.get(&state) {
            return i;
        }
        let i = self.boundaries.len();
        self.boundaries.push(state);
        self.boundary_index.insert(state, i);
        self.boundary_ways.push(Vec::new());
        i
    }

    /// The row of boundaries the heads lead to from `state`.
    fn head_row(&mut self, state: usize) -> Vec<Option<usize>> {
        let targets: Vec<Option<usize>> = self.heads.iter().map(|h| self.trie.step(state, h)).collect();
        targets.into_iter().map(|t| t.map(|t| self.boundary(t))).collect()
    }

    fn after_run_row(&mut self, row: Vec<Option<usize>>) -> usize {
        if let Some(&i) = self.after_run_index.get(&row) {
            return i;
        }
        let i = self.after_run.len();
        self.after_run_index.insert(row.clone(), i);
        self.after_run.push(row);
        self.after_run_ways.push(Vec::new());
        i
    }

    /// The terminal of `pattern`, added at first use. Runs are `maximal`: no
    /// run character may follow one (the grammar already says a head or the
    /// end does), which lets the lexer forget where in the run it ended.
    fn intern_terminal(&mut self, name: String, pattern: Pattern, maximal: bool) -> TerminalId {
        if let Some(i) = self.terminals.iter().position(|t| t.pattern == pattern) {
            return TerminalId::from_usize(i);
        }
        self.terminals.push(Terminal { maximal, ..plain_terminal(name, pattern, self.span) });
        TerminalId::from_usize(self.terminals.len() - 1)
    }

    /// Runs from `state`, explored through the trie: only runs that stay
    /// inside an excluded string begun before them (at `state`) can end
    /// anywhere but the root state or complete one.
    fn runs(&self, state: usize) -> Runs {
        let mut runs = Runs::default();
        let mut stack = vec![(state, Vec::new())];
        while let Some((n, w)) = stack.pop() {
            for b in self.trie.live_bytes(n) {
                let mut next = w.clone();
                next.push(b);
                let m = self.trie.step_byte(n, b);
                if self.trie.dead[m] {
                    runs.completing.push(next);
                    continue;
                }
                // Matched text that starts inside the run starts with a head: not a run.
                if self.trie.label[m].len() <= next.len() {
                    continue;
                }
                match run_shape(&next, &self.head_chars) {
                    RunShape::Run => {
                        runs.inside.push((next.clone(), m));
                        stack.push((m, next));
                    }
                    RunShape::Partial => stack.push((m, next)),
                    RunShape::Neither => {}
                }
            }
        }
        runs.completing.sort();
        runs.inside.sort();
        runs
    }

    fn build(mut self) -> Grammar {
        let head_terminals: Vec<TerminalId> = (0..self.heads.len())
            .map(|i| {
                let bytes = self.heads[i].clone();
                self.intern_terminal(quote_bytes(&bytes), Pattern::literal(&bytes), false)
            })
            .collect();
        let ranges = complement(&self.head_chars);
        let run = Pattern::Repeat { pattern: Box::new(Pattern::char_class(&ranges)), min: 1, max: None };
        self.boundary(ROOT);
        // A run that ends outside every excluded string leaves the root's row.
        let root_row = self.head_row(ROOT);
        let root_class = self.after_run_row(root_row);
        let mut done = 0;
        while done < self.boundaries.len() {
            let from = done;
            done += 1;
            let state = self.boundaries[from];
            let from_rule = Expr::Rule(self.boundary_rule(from));
            // A head right at the boundary.
            for (h, to) in self.head_row(state).into_iter().enumerate() {
                if let Some(to) = to {
                    self.boundary_ways[to].push(Expr::Seq(vec![from_rule.clone(), Expr::Terminal(head_terminals[h])]));
                }
            }
            // A run: its terminal per after-run row it can lead to.
            let runs = self.runs(state);
            let mut by_row: BTreeMap<usize, Vec<Vec<u8>>> = BTreeMap::new();
            by_row.entry(root_class).or_default();
            for (w, end) in runs.inside {
                let row = self.head_row(end);
                let class = self.after_run_row(row);
                by_row.entry(class).or_default().push(w);
            }
            let label = quote_bytes(&self.trie.label[state]);
            let others: Vec<Pattern> = by_row
                .iter()
                .filter(|&(&class, _)| class != root_class)
                .flat_map(|(_, ws)| ws.iter().map(|w| Pattern::literal(w)))
                .collect();
            for (class, ws) in by_row {
                let pattern = if class == root_class {
                    let mut parts = vec![run.clone()];
                    if !runs.completing.is_empty() {
                        let starts = Pattern::Alt(runs.completing.iter().map(|w| Pattern::literal(w)).collect());
                        parts.push(Pattern::Not(Box::new(Pattern::Concat(vec![starts, any_bytes()]))));
                    }
                    if !others.is_empty() {
                        parts.push(Pattern::Not(Box::new(Pattern::Alt(others.clone()))));
                    }
                    if parts.len() == 1 {
                        run.clone()
                    } else {
                        Pattern::And(parts)
                    }
                } else {
                    Pattern::Alt(ws.iter().map(|w| Pattern::literal(w)).collect())
                };
                let name = if state == ROOT {
                    format!("{} run", self.name)
                } else {
                    format!("{} run after {label}", self.name)
                };
                let t = self.intern_terminal(name, pattern, true);
                self.after_run_ways[class].push(Expr::Seq(vec![from_rule.clone(), Expr::Terminal(t)]));
            }
        }
        // Heads after runs, now that every row is known (rows only point at known boundaries).
        let first_after = 1 + self.boundaries.len();
        for class in 0..self.after_run.len() {
            let from_rule = Expr::Rule(RuleId::from_usize(first_after + class));
            for (h, to) in self.after_run[class].clone().into_iter().enumerate() {
                if let Some(to) = to {
                    self.boundary_ways[to].push(Expr::Seq(vec![from_rule.clone(), Expr::Terminal(head_terminals[h])]));
                }
            }
        }
        self.boundary_ways[0].insert(0, Expr::Empty);
        let mut rules = Vec::new();
        let every: Vec<Expr> =
            (1..first_after + self.after_run.len()).map(|r| Expr::Rule(RuleId::from_usize(r))).collect();
        rules.push(Rule { name: "start".into(), body: Expr::Alt(every), span: self.span, slot: false });
        for (i, ways) in self.boundary_ways.into_iter().enumerate() {
            let name = format!("text@{}", quote_bytes(&self.trie.label[self.boundaries[i]]));
            rules.push(Rule { name, body: Expr::Alt(ways), span: self.span, slot: false });
        }
        for (i, ways) in self.after_run_ways.into_iter().enumerate() {
            rules.push(Rule { name: format!("text+run{i}"), body: Expr::Alt(ways), span: self.span, slot: false });
        }
        Grammar { source: self.source, terminals: self.terminals, rules, start: RuleId::from_usize(0) }
    }
}

/// Every character but `chars` (sorted), as inclusive ranges.
fn complement(chars: &[char]) -> Vec<(char, char)> {
    let mut ranges = Vec::new();
    let mut next = Some('\0');
    for &c in chars {
        if let Some(lo) = next {
            if lo < c {
                ranges.push((lo, prev_char(c)));
            }
        }
        next = next_char(c);
    }
    if let Some(lo) = next {
        ranges.push((lo, char::MAX));
    }
    ranges
}

fn prev_char(c: char) -> char {
    match c {
        '\u{E000}' => '\u{D7FF}',
        c => char::from_u32(c as u32 - 1).expect("a scalar value"),
    }
}

fn next_char(c: char) -> Option<char> {
    match c {
        '\u{D7FF}' => Some('\u{E000}'),
        char::MAX => None,
        c => char::from_u32(c as u32 + 1),
    }
}
