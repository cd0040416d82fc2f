//! Bounds checks on every length and index of loaded tables.
//!
//! The runtime indexes its tables without checks of its own (they are
//! consistent by construction when compiled). A loaded artifact is not
//! trusted: each table's lengths must agree with the tables it is indexed
//! by, and each stored index or range must fall inside its target, so that
//! masks and commits on a loaded constraint can neither panic nor read
//! outside a table. Checks are linear in the artifact's size.

use crate::compile::CompiledGrammar;
use crate::grammar::normal::Symbol;
use crate::grammar::{Expr, Grammar};
use crate::lexer::combined::LexerDfa;
use crate::lexer::config::{LexConfigs, NO_CONFIG};
use crate::lexer::dfa::TermDfa;
use crate::liveness::Liveness;
use crate::lr::LrTables;
use crate::mask::compiled::dwa::NONE;
use crate::mask::compiled::weights::ClassSet;
use crate::mask::compiled::{ParserDwa, TokenClasses};
use crate::sets::BitSet;
use crate::sets::TokenSet;
use crate::vocab::Vocab;

type Check = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!("artifact table out of bounds: {}", format!($($msg)+)));
        }
    };
}

fn below(what: &str, i: usize, n: usize) -> Check {
    ensure!(i < n, "{what} {i} (of {n})");
    Ok(())
}

pub fn compiled_grammar(g: &CompiledGrammar) -> Check {
    let terminals = g.grammar.terminals.len();
    grammar(&g.grammar)?;
    let n = &g.normal;
    ensure!(n.num_terminals == terminals, "normal form has {} terminals, the grammar {terminals}", n.num_terminals);
    let nts = n.nonterminals.len();
    below("start nonterminal", n.start.index(), nts)?;
    for nt in &n.nonterminals {
        below("nonterminal origin rule", nt.origin.index(), g.grammar.rules.len())?;
    }
    for p in &n.productions {
        below("production lhs", p.lhs.index(), nts)?;
        for s in &p.rhs {
            match *s {
                Symbol::T(t) => below("production terminal", t.index(), terminals)?,
                Symbol::N(a) => below("production nonterminal", a.index(), nts)?,
            }
        }
    }
    let lex = lexer_dfa(&g.lexer.dfa, terminals)?;
    configs(&g.lexer.configs, &g.lexer.dfa, lex, terminals)?;
    lr(&g.lr, g, terminals)?;
    liveness(&g.liveness, g, terminals)
}

pub fn grammar(g: &Grammar) -> Check {
    below("start rule", g.start.index(), g.rules.len())?;
    for rule in &g.rules {
        // Flat walk (trees are bounded by `crate::wire`, but stay iterative anyway).
        let mut stack = vec![&rule.body];
        while let Some(e) = stack.pop() {
            match e {
                Expr::Terminal(t) => below("rule terminal", t.index(), g.terminals.len())?,
                Expr::Rule(r) => below("rule reference", r.index(), g.rules.len())?,
                Expr::Seq(es) | Expr::Alt(es) => stack.extend(es),
                Expr::Repeat { expr, .. } => stack.push(expr),
                Expr::Empty => {}
            }
        }
    }
    Ok(())
}

fn term_dfa(d: &TermDfa) -> Check {
    let states = d.num_states();
    ensure!(d.num_classes > 0 && d.classes.iter().all(|&c| (c as usize) < d.num_classes), "terminal DFA classes");
    ensure!(
        d.trans.len() == states * d.num_classes,
        "terminal DFA transitions ({} for {states} states)",
        d.trans.len()
    );
    ensure!(d.trans.iter().all(|&s| (s as usize) < states), "terminal DFA transition target");
    ensure!(d.live.len() == states && d.accepts_later.len() == states, "terminal DFA per-state flags");
    below("terminal DFA start", d.start as usize, states)
}

/// Returns the number of combined DFA states.
fn lexer_dfa(d: &LexerDfa, terminals: usize) -> Result<usize, String> {
    ensure!(d.terminals.len() == terminals, "lexer has {} terminal DFAs for {terminals} terminals", d.terminals.len());
    for t in &d.terminals {
        term_dfa(t)?;
    }
    let states = d.num_states();
    ensure!(states > 0, "the lexer DFA has no states");
    ensure!(d.num_classes > 0 && d.classes.iter().all(|&c| (c as usize) < d.num_classes), "lexer DFA classes");
    ensure!(d.class_reps.len() == d.num_classes, "lexer DFA class representatives");
    ensure!(d.trans.len() == states * d.num_classes, "lexer DFA transitions ({} for {states} states)", d.trans.len());
    ensure!(d.trans.iter().all(|&s| (s as usize) < states), "lexer DFA transition target");
    ensure!(d.accepts.len() == states, "lexer DFA accept lists");
    ensure!(d.maximal.len() == terminals, "lexer DFA maximal flags");
    below("lexer DFA start", d.start.index(), states)?;
    for comps in &d.components {
        for &(t, s) in comps {
            below("lexer DFA component terminal", t.index(), terminals)?;
            below("lexer DFA component state", s as usize, d.terminals[t.index()].num_states())?;
        }
    }
    for acc in &d.accepts {
        for t in acc {
            below("lexer DFA accepted terminal", t.index(), terminals)?;
        }
    }
    Ok(states)
}

fn configs(c: &LexConfigs, dfa: &LexerDfa, dfa_states: usize, terminals: usize) -> Check {
    let n = c.configs.len();
    ensure!(n > 0, "no lexer configurations");
    ensure!(c.num_classes == dfa.num_classes, "lexer configuration classes");
    below("start configuration", c.start.index(), n)?;
    for config in &c.configs {
        below("configuration DFA state", config.dfa.index(), dfa_states)?;
        for &(t, s) in &config.exclusions {
            below("exclusion terminal", t.index(), terminals)?;
            below("exclusion state", s as usize, dfa.terminals[t.index()].num_states())?;
        }
    }
    ensure!(c.next.len() == n * c.num_classes, "configuration transitions");
    ensure!(c.next.iter().all(|&s| s == NO_CONFIG || (s as usize) < n), "configuration transition target");
    ensure!(c.emit_start.len() == n + 1, "configuration emit offsets");
    ensure!(c.emit_start.windows(2).all(|w| w[0] <= w[1]), "configuration emit offsets decrease");
    ensure!(c.emit_start.last().is_some_and(|&e| e as usize == c.emits.len()), "configuration emit offsets end");
    for &(t, to) in &c.emits {
        below("emitted terminal", t.index(), terminals)?;
        below("configuration after a lexeme", to.index(), n)?;
    }
    Ok(())
}

fn lr(lr: &LrTables, g: &CompiledGrammar, terminals: usize) -> Check {
    let n = lr.num_states();
    ensure!(n > 0, "no LR states");
    ensure!(lr.end.index() == terminals, "LR end-of-input terminal");
    let (nts, prods) = (g.normal.nonterminals.len(), g.normal.productions.len());
    for s in &lr.states {
        for item in &s.kernel {
            below("item production", item.production.index(), prods)?;
            ensure!(item.dot as usize <= g.normal.productions[item.production.index()].rhs.len(), "item dot");
        }
        for &(t, to) in &s.shifts {
            below("shift terminal", t.index(), terminals + 1)?;
            below("shift target", to.index(), n)?;
        }
        for &(a, to) in &s.gotos {
            below("goto nonterminal", a.index(), nts)?;
            below("goto target", to.index(), n)?;
        }
        for &(t, p) in &s.reduces {
            below("reduce lookahead", t.index(), terminals + 1)?;
            below("reduce production", p.index(), prods)?;
        }
    }
    Ok(())
}

fn liveness(l: &Liveness, g: &CompiledGrammar, terminals: usize) -> Check {
    let configs = g.lexer.configs.len();
    let (lex, states, nts) = (l.num_lex, g.lr.num_states(), g.normal.nonterminals.len());
    ensure!(lex > 0 && (l.end as usize) < lex, "liveness END index");
    ensure!(l.boundary_index.len() == configs, "liveness boundary index length");
    ensure!(l.boundary_index.iter().all(|&b| b == u32::MAX || (b as usize) < lex), "liveness boundary index");
    ensure!(l.ignored.len() == terminals && l.may_end.len() == terminals, "liveness per-terminal flags");
    ensure!(l.first_reach_of.len() == configs, "liveness first-reach index length");
    ensure!(l.first_reach_of.iter().all(|&i| (i as usize) < l.first_reach_sets.len()), "liveness first-reach index");
    for set in &l.first_reach_sets {
        for &(t, f) in set {
            below("first-reach terminal", t.index(), terminals)?;
            below("first-reach lexical state", f as usize, lex)?;
        }
    }
    ensure!(l.num_states() == states, "liveness tables for {} LR states, not {states}", l.num_states());
    for s in 0..states {
        // A loaded artifact holds every state's entries (split per state,
        // ranges checked, when it was decoded).
        let Some(entries) = l.built_state(s) else { return Err(format!("liveness entries of LR state {s} missing")) };
        let block = g.lr.states[s].gotos.len() * lex;
        ensure!(entries.num_enter() == block, "liveness enter block of LR state {s}");
        entries.check(nts)?;
    }
    Ok(())
}

/// The Static tables against the (validated) grammar and the vocabulary.
pub fn static_tables(g: &CompiledGrammar, vocab: &Vocab, c: &TokenClasses, dwa: &ParserDwa) -> Check {
    let terminals = g.grammar.terminals.len();
    let classes = c.tokens.len();
    let lex = g.liveness.num_lex;
    ensure!(c.outcomes.len() == classes, "class outcomes ({}) for {classes} classes", c.outcomes.len());
    let seqs = &c.seqs.nodes;
    ensure!(!seqs.is_empty(), "empty sequence trie");
    for (i, &(parent, t)) in seqs.iter().enumerate().skip(1) {
        below("sequence parent", parent as usize, i)?;
        below("sequence terminal", t.index(), terminals)?;
    }
    for outs in &c.outcomes {
        for &(s, l) in outs {
            below("outcome sequence", s as usize, seqs.len())?;
            below("outcome lexical state", l as usize, lex)?;
        }
    }
    for &(lo, hi) in &c.key_classes {
        ensure!(lo <= hi && hi as usize <= classes, "key class range {lo}..{hi} of {classes}");
    }
    ensure!(c.config_keys.len() == g.lexer.configs.len(), "class keys per configuration");
    for keys in &c.config_keys {
        for &k in keys {
            below("configuration key", k as usize, c.key_classes.len())?;
        }
    }
    let words = vocab.len().div_ceil(32);
    for set in &c.tokens {
        match set.as_ref() {
            TokenSet::List(ids) => {
                ensure!(ids.iter().all(|&t| (t as usize) < vocab.len()), "class token id");
            }
            TokenSet::Bits(bits) => bit_set(bits, vocab.len(), words)?,
        }
    }

    ensure!(dwa.start.len() == g.lr.num_states(), "DWA start per LR state");
    let (states, weights) = (dwa.states.len(), dwa.weights.len());
    let state_or_none = |q: u32| q == NONE || (q as usize) < states;
    ensure!(dwa.start.iter().all(|&q| state_or_none(q)), "DWA start state");
    for s in &dwa.states {
        ensure!(state_or_none(s.default), "DWA default target");
        ensure!(s.specific.iter().all(|&(p, q)| (p as usize) < g.lr.num_states() && state_or_none(q)), "DWA target");
        ensure!(s.accept == NONE || (s.accept as usize) < weights, "DWA accept weight");
        below("DWA future weight", s.future as usize, weights)?;
        for &(set, w) in &s.checks {
            below("DWA check set", set as usize, dwa.check_sets.len())?;
            below("DWA check weight", w as usize, weights)?;
        }
    }
    for set in &dwa.check_sets {
        for &(nt, l) in set {
            below("check nonterminal", nt.index(), g.normal.nonterminals.len())?;
            below("check lexical state", l as usize, lex)?;
        }
    }
    for w in &dwa.weights {
        class_set(w, classes)?;
    }
    Ok(())
}

fn bit_set(bits: &BitSet, len: usize, words: usize) -> Check {
    ensure!(bits.words().len() == words, "token bit set of {} words for {len} ids", bits.words().len());
    let tail = len % 32;
    if tail != 0 {
        ensure!(bits.words()[words - 1] >> tail == 0, "token bit set names ids past the vocabulary");
    }
    Ok(())
}

fn class_set(w: &ClassSet, classes: usize) -> Check {
    match w {
        ClassSet::Ranges(r) => {
            ensure!(r.iter().all(|&(a, b)| a < b && b as usize <= classes), "class range past {classes} classes");
            ensure!(r.windows(2).all(|p| p[0].1 < p[1].0), "class ranges unsorted or overlapping");
        }
        ClassSet::Bits { first, words } => {
            let end = (*first as usize).checked_add(words.len());
            ensure!(end.is_some_and(|e| e <= classes.div_ceil(32)), "class bits past {classes} classes");
        }
    }
    Ok(())
}
