//! Test support: an independent reference for language membership, and
//! helpers to build constraints.
//!
//! The reference shares nothing with the engine but the grammar IR:
//! * lexing: for every position and terminal, the `regex` crate finds every
//!   end where the substring fully matches; the terminal's lexeme there can
//!   only be the longest one (per-terminal longest match, DESIGN §3), and
//!   a maximal terminal's lexeme only one that no match of it follows;
//! * parsing: an Earley recognizer (with the Aycock–Horspool nullable fix)
//!   over the resulting lattice of lexemes, on a BNF lowered here from the
//!   IR by a different construction (right-recursive stars, unrolled counts).

#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::Arc;

use glrmask_core::grammar::{Expr, Grammar, Pattern};
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, ConstraintState, Optimization, Vocab};
use regex_syntax::hir::{Hir, HirKind};

pub struct Reference {
    regexes: Vec<TerminalMatcher>,
    ignored: Vec<bool>,
    maximal: Vec<bool>,
    /// prods[i] = (lhs, rhs); symbols: terminals as T(i), nonterminals as N(i).
    prods: Vec<(usize, Vec<Sym>)>,
    nullable: Vec<bool>,
    start: usize,
    num_nt: usize,
}

/// Whole-string membership in a terminal's pattern: the `regex` crate for
/// regexes, with intersection and complement on top (the EBNF fusion pass
/// writes `L(E) \ {ε}` as `And[E, Not(ε)]`).
enum TerminalMatcher {
    Regex(regex::bytes::Regex),
    And(Vec<TerminalMatcher>),
    Not(Box<TerminalMatcher>),
}

impl TerminalMatcher {
    fn new(p: &Pattern) -> TerminalMatcher {
        match p {
            Pattern::Hir(hir) => TerminalMatcher::Regex(
                regex::bytes::Regex::new(&format!("^(?:{})$", regex_text(hir))).expect("HIR prints as a valid regex"),
            ),
            Pattern::And(parts) => TerminalMatcher::And(parts.iter().map(TerminalMatcher::new).collect()),
            Pattern::Not(inner) => TerminalMatcher::Not(Box::new(TerminalMatcher::new(inner))),
            other => TerminalMatcher::Regex(
                regex::bytes::Regex::new(&format!(
                    "^(?:{})$",
                    pattern_regex(other).expect("reference: And/Not only at the top of a pattern")
                ))
                .expect("pattern prints as a valid regex"),
            ),
        }
    }

    fn is_match(&self, bytes: &[u8]) -> bool {
        match self {
            TerminalMatcher::Regex(re) => re.is_match(bytes),
            TerminalMatcher::And(parts) => parts.iter().all(|m| m.is_match(bytes)),
            TerminalMatcher::Not(inner) => !inner.is_match(bytes),
        }
    }
}

/// A regex for a pattern built of regexes by concatenation, alternation and
/// repetition (`None` if it has an intersection or complement inside).
fn pattern_regex(p: &Pattern) -> Option<String> {
    Some(match p {
        Pattern::Hir(hir) => format!("(?:{})", regex_text(hir)),
        Pattern::Concat(parts) => parts.iter().map(pattern_regex).collect::<Option<Vec<_>>>()?.concat(),
        Pattern::Alt(parts) if parts.is_empty() => "(?-u:[^\\x00-\\xff])".to_string(),
        Pattern::Alt(parts) => {
            format!("(?:{})", parts.iter().map(pattern_regex).collect::<Option<Vec<_>>>()?.join("|"))
        }
        Pattern::Repeat { pattern, min, max } => {
            let max = max.map_or(String::new(), |m| m.to_string());
            format!("(?:{}){{{min},{max}}}", pattern_regex(pattern)?)
        }
        Pattern::JsonStrings { strings, quoted } => json_strings_regex(strings, *quoted),
        Pattern::And(_) | Pattern::Not(_) => return None,
    })
}

/// A regex for every JSON encoding of `strings`: per code point raw (not a
/// control, `"` or `\`), a short escape, or `\uXXXX` in any hex case (a
/// surrogate pair above the BMP).
fn json_strings_regex(strings: &[String], quoted: bool) -> String {
    let hex = |unit: u32| -> String {
        format!("{unit:04x}")
            .chars()
            .map(|d| if d.is_ascii_digit() { d.to_string() } else { format!("[{d}{}]", d.to_ascii_uppercase()) })
            .collect()
    };
    let one = |c: char| -> String {
        let mut alts = Vec::new();
        if c >= ' ' && c != '"' && c != '\\' {
            alts.push(regex::escape(&c.to_string()));
        }
        let short = [
            ('"', '"'),
            ('\\', '\\'),
            ('/', '/'),
            ('\u{8}', 'b'),
            ('\u{c}', 'f'),
            ('\n', 'n'),
            ('\r', 'r'),
            ('\t', 't'),
        ];
        if let Some(&(_, l)) = short.iter().find(|&&(x, _)| x == c) {
            alts.push(format!("\\\\{}", regex::escape(&l.to_string())));
        }
        let code = c as u32;
        alts.push(match code {
            0..=0xFFFF => format!("\\\\u{}", hex(code)),
            _ => format!(
                "\\\\u{}\\\\u{}",
                hex(0xD800 + ((code - 0x10000) >> 10)),
                hex(0xDC00 + ((code - 0x10000) & 0x3FF))
            ),
        });
        format!("(?:{})", alts.join("|"))
    };
    let words: Vec<String> = strings.iter().map(|s| s.chars().map(one).collect()).collect();
    let q = if quoted { "\"" } else { "" };
    format!("{q}(?:{}){q}", if words.is_empty() { "(?-u:[^\\x00-\\xff])".to_string() } else { words.join("|") })
}

/// A regex for `hir` with every operand grouped. `Hir`'s own printer is
/// used for leaves only: for a hand-built nested repetition it prints
/// `(a+)?` as `a+?`, a lazy `a+`.
fn regex_text(hir: &Hir) -> String {
    match hir.kind() {
        HirKind::Concat(parts) => parts.iter().map(|p| format!("(?:{})", regex_text(p))).collect(),
        HirKind::Alternation(parts) => {
            parts.iter().map(|p| format!("(?:{})", regex_text(p))).collect::<Vec<_>>().join("|")
        }
        HirKind::Repetition(rep) => {
            let max = rep.max.map_or(String::new(), |m| m.to_string());
            format!("(?:{}){{{},{max}}}", regex_text(&rep.sub), rep.min)
        }
        HirKind::Capture(cap) => format!("(?:{})", regex_text(&cap.sub)),
        _ => hir.to_string(),
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Sym {
    T(usize),
    N(usize),
}

impl Reference {
    pub fn new(g: &Grammar) -> Reference {
        let regexes = g.terminals.iter().map(|t| TerminalMatcher::new(&t.pattern)).collect();
        let mut r = Reference {
            regexes,
            ignored: g.terminals.iter().map(|t| t.ignored).collect(),
            maximal: g.terminals.iter().map(|t| t.maximal).collect(),
            prods: Vec::new(),
            nullable: Vec::new(),
            start: 0,
            num_nt: g.rules.len(),
        };
        for (i, rule) in g.rules.iter().enumerate() {
            let alts = r.alternatives(&rule.body);
            for alt in alts {
                r.prods.push((i, alt));
            }
        }
        let start = r.new_nt();
        r.prods.push((start, vec![Sym::N(g.start.0 as usize)]));
        r.start = start;
        r.nullable = vec![false; r.num_nt];
        let mut changed = true;
        while changed {
            changed = false;
            for (lhs, rhs) in &r.prods {
                if !r.nullable[*lhs] && rhs.iter().all(|s| matches!(s, Sym::N(n) if r.nullable[*n])) {
                    r.nullable[*lhs] = true;
                    changed = true;
                }
            }
        }
        r
    }

    fn new_nt(&mut self) -> usize {
        self.num_nt += 1;
        self.num_nt - 1
    }

    fn alternatives(&mut self, e: &Expr) -> Vec<Vec<Sym>> {
        match e {
            Expr::Alt(items) => items.iter().flat_map(|i| self.alternatives(i)).collect(),
            Expr::Seq(items) => vec![items.iter().filter_map(|i| self.symbol(i)).collect()],
            other => vec![self.symbol(other).into_iter().collect()],
        }
    }

    fn symbol(&mut self, e: &Expr) -> Option<Sym> {
        match e {
            Expr::Empty => None,
            Expr::Terminal(t) => Some(Sym::T(t.0 as usize)),
            Expr::Rule(r) => Some(Sym::N(r.0 as usize)),
            Expr::Seq(_) | Expr::Alt(_) => {
                let n = self.new_nt();
                for alt in self.alternatives(e) {
                    self.prods.push((n, alt));
                }
                Some(Sym::N(n))
            }
            Expr::Repeat { expr, min, max } => {
                let item = self.symbol(expr);
                let n = self.new_nt();
                let Some(item) = item else {
                    self.prods.push((n, vec![]));
                    return Some(Sym::N(n));
                };
                match max {
                    Some(max) => {
                        for k in *min..=*max {
                            self.prods.push((n, vec![item; k as usize]));
                        }
                    }
                    None => {
                        // star → ε | item star  (right recursion, unlike the engine)
                        let star = self.new_nt();
                        self.prods.push((star, vec![]));
                        self.prods.push((star, vec![item, Sym::N(star)]));
                        let mut rhs = vec![item; *min as usize];
                        rhs.push(Sym::N(star));
                        self.prods.push((n, rhs));
                    }
                }
                Some(Sym::N(n))
            }
        }
    }

    /// Lexeme lattice: for each position, `(terminal, end)` pairs.
    fn lattice(&self, input: &[u8]) -> Vec<Vec<(usize, usize)>> {
        let n = input.len();
        let mut edges = vec![Vec::new(); n + 1];
        for (i, out) in edges.iter_mut().enumerate().take(n) {
            for (t, re) in self.regexes.iter().enumerate() {
                if let Some(j) = (i + 1..=n).rev().find(|&j| re.is_match(&input[i..j])) {
                    if !(self.maximal[t] && (j + 1..=n).any(|k| re.is_match(&input[j..k]))) {
                        out.push((t, j));
                    }
                }
            }
        }
        edges
    }

    /// Is `input` a complete member of the language?
    pub fn member(&self, input: &[u8]) -> bool {
        let n = input.len();
        let edges = self.lattice(input);
        let mut charts: Vec<HashSet<(usize, usize, usize)>> = vec![HashSet::new(); n + 1];
        let mut lists: Vec<Vec<(usize, usize, usize)>> = vec![Vec::new(); n + 1];
        let add = |charts: &mut Vec<HashSet<_>>, lists: &mut Vec<Vec<_>>, at: usize, item: (usize, usize, usize)| {
            if charts[at].insert(item) {
                lists[at].push(item);
            }
        };
        for (p, (lhs, _)) in self.prods.iter().enumerate() {
            if *lhs == self.start {
                add(&mut charts, &mut lists, 0, (p, 0, 0));
            }
        }
        for i in 0..=n {
            let mut k = 0;
            while k < lists[i].len() {
                let (p, dot, origin) = lists[i][k];
                k += 1;
                let rhs = &self.prods[p].1;
                if dot < rhs.len() {
                    if let Sym::N(b) = rhs[dot] {
                        for (q, (lhs, _)) in self.prods.iter().enumerate() {
                            if *lhs == b {
                                add(&mut charts, &mut lists, i, (q, 0, i));
                            }
                        }
                        if self.nullable[b] {
                            add(&mut charts, &mut lists, i, (p, dot + 1, origin));
                        }
                    }
                } else {
                    let lhs = self.prods[p].0;
                    let parents: Vec<_> = lists[origin].clone();
                    for (q, d, o) in parents {
                        if self.prods[q].1.get(d) == Some(&Sym::N(lhs)) {
                            add(&mut charts, &mut lists, i, (q, d + 1, o));
                        }
                    }
                }
            }
            if i == n {
                break;
            }
            for &(t, j) in &edges[i] {
                let items: Vec<_> = lists[i].clone();
                for (p, dot, origin) in items {
                    if self.ignored[t] {
                        add(&mut charts, &mut lists, j, (p, dot, origin));
                    } else if self.prods[p].1.get(dot) == Some(&Sym::T(t)) {
                        add(&mut charts, &mut lists, j, (p, dot + 1, origin));
                    }
                }
            }
        }
        lists[n].iter().any(|&(p, dot, origin)| origin == 0 && self.prods[p].0 == self.start && dot == 1)
    }

    /// Some extension of `prefix` of at most `extra` bytes from `alphabet` is a member.
    pub fn has_completion(&self, prefix: &[u8], alphabet: &[u8], extra: usize) -> bool {
        let mut frontier = vec![prefix.to_vec()];
        for depth in 0..=extra {
            let mut next = Vec::new();
            for s in &frontier {
                if self.member(s) {
                    return true;
                }
                if depth < extra {
                    for &b in alphabet {
                        let mut t = s.clone();
                        t.push(b);
                        next.push(t);
                    }
                }
            }
            frontier = next;
        }
        false
    }
}

pub fn vocab_of(tokens: &[Vec<u8>]) -> Arc<Vocab> {
    Vocab::from_pairs(tokens.iter().enumerate().map(|(i, t)| (i as u32, t.clone()))).expect("valid vocab")
}

pub fn constraint(g: Grammar, tokens: &[Vec<u8>], end: &[u32]) -> Arc<Constraint> {
    let g = CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles");
    Constraint::new(Arc::new(g), vocab_of(tokens), end, Optimization::Auto).expect("constraint")
}

/// Every engine agrees with the brute-force oracle at the current state
/// (DESIGN §4.1, §4.2): the constraint's own engine and Dynamic.
///
/// The Static walk is read twice: as configured, and with every frame
/// through its memo (which both masks leave behind for later steps).
pub fn assert_masks_agree(state: &mut ConstraintState, context: &str) {
    let oracle = state.oracle_mask();
    let engine = state.mask();
    state.set_static_memo_from(0);
    let memo = state.mask();
    state.set_static_memo_from(glrmask_core::mask::compiled::runtime::MEMO_FROM_DEPTH);
    let dynamic = state.dynamic_mask();
    for (name, mask) in [("engine", &engine), ("engine with the walk memo from depth 0", &memo), ("dynamic", &dynamic)]
    {
        if *mask != oracle {
            let d: Vec<usize> = mask.iter().collect();
            let o: Vec<usize> = oracle.iter().collect();
            panic!("{name} mask differs from the oracle {context}\n {name}: {d:?}\n oracle: {o:?}");
        }
    }
}

/// Up to `steps` random allowed tokens from `state`, every engine checked
/// against the oracle before each ([`assert_masks_agree`]).
pub fn walk_agreeing(state: &mut ConstraintState, rng: &mut Rng, steps: usize, context: &str) {
    for step in 0..steps {
        assert_masks_agree(state, &format!("{context} (step {step})"));
        let allowed: Vec<usize> = state.mask().iter().collect();
        if allowed.is_empty() {
            break;
        }
        state.commit_token(allowed[rng.below(allowed.len())] as u32).unwrap();
    }
}

/// A small deterministic RNG for walks (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
