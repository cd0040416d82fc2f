//! Token atoms: grammar text that names model tokens instead of bytes.
//!
//! The text front ends share one syntax, the union of what llguidance's Lark
//! and llama.cpp's GBNF write:
//! * `<[128010]>`, `<[128000-128255]>`, `<[1,5-9]>`: tokens by id; ranges are
//!   inclusive and `MAX` is the vocabulary's last id (`<[100-MAX]>`);
//! * `<[^1,5-9]>`: every token but those ids; `<[*]>`: every token;
//! * `<|eot_id|>`, `<think>`: the token whose text is exactly that (a
//!   special token's name, or a byte token's text);
//! * `!<...>` (llama.cpp): every token but the ones the atom names;
//! * `@token(128010)` (seed 004): one token by id.
//!
//! An atom is kept unresolved in the grammar IR ([`TokenSelector`]) and
//! resolved against the vocabulary when a constraint is built, so a grammar
//! parses without a vocabulary. "Every token" means every token the model can
//! produce (bytes or exact-only ids, not gaps) except end tokens: an end
//! token ends the sequence where the grammar accepts and is never a grammar
//! token, so a range or negation skips it, while naming one alone is an
//! error.

use std::fmt;

use crate::ids::TokenId;
use crate::sets::BitSet;
use crate::vocab::{TokenKind, Vocab};

/// One item of an atom: an inclusive id range, or a token's text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum TokenRef {
    /// `hi == None`: up to the vocabulary's last id (`MAX`).
    Ids {
        lo: u32,
        hi: Option<u32>,
    },
    Text(String),
}

/// The tokens an atom names: `refs`, or every token but `refs` when
/// `negated` (`<[*]>` is a negation of nothing).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TokenSelector {
    pub refs: Vec<TokenRef>,
    pub negated: bool,
}

impl fmt::Display for TokenSelector {
    /// The atom in the shared syntax (also the terminal's display name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self
            .refs
            .iter()
            .filter_map(|r| match r {
                TokenRef::Ids { lo, hi: Some(hi) } if lo == hi => Some(lo.to_string()),
                TokenRef::Ids { lo, hi: Some(hi) } => Some(format!("{lo}-{hi}")),
                TokenRef::Ids { lo, hi: None } => Some(format!("{lo}-MAX")),
                TokenRef::Text(_) => None,
            })
            .collect();
        let texts: Vec<&str> = self
            .refs
            .iter()
            .filter_map(|r| match r {
                TokenRef::Text(t) => Some(t.as_str()),
                TokenRef::Ids { .. } => None,
            })
            .collect();
        match (self.negated, ids.is_empty(), texts.as_slice()) {
            (true, true, []) => write!(f, "<[*]>"),
            (true, false, []) => write!(f, "<[^{}]>", ids.join(",")),
            (false, false, []) => write!(f, "<[{}]>", ids.join(",")),
            (negated, true, [text]) => write!(f, "{}{text}", if negated { "!" } else { "" }),
            (negated, _, _) => {
                let mut parts = texts.iter().map(|t| t.to_string()).collect::<Vec<_>>();
                if !ids.is_empty() {
                    parts.push(format!("<[{}]>", ids.join(",")));
                }
                write!(f, "{}({})", if negated { "!" } else { "" }, parts.join("|"))
            }
        }
    }
}

/// A token atom at the start of `text` (which starts with `<`, `!<` or
/// `@token(`): the selector and the number of bytes it spans. `Err` holds a
/// message and the length of the text it is about.
pub fn parse_token_atom(text: &str) -> Result<(TokenSelector, usize), (String, usize)> {
    if let Some(rest) = text.strip_prefix("@token(") {
        let close = rest.find([')', '\n']).filter(|&i| rest.as_bytes()[i] == b')');
        let Some(close) = close else {
            return Err(("`@token(` needs a token id and a closing `)`: `@token(128010)`".into(), 7));
        };
        let len = 7 + close + 1;
        let id = rest[..close].trim();
        return match id.parse::<u32>() {
            Ok(id) => Ok((TokenSelector { refs: vec![TokenRef::Ids { lo: id, hi: Some(id) }], negated: false }, len)),
            Err(_) => Err((format!("`@token(...)` takes a token id (a number), not `{id}`"), len)),
        };
    }
    let (negated, start) = if text.starts_with("!<") { (true, 1) } else { (false, 0) };
    let body = &text[start + 1..];
    if let Some(ids) = body.strip_prefix('[') {
        let Some(close) = ids.find("]>") else {
            return Err(("unclosed token atom: `<[ids]>` ends with `]>`".into(), text.len().min(start + 2)));
        };
        let len = start + 2 + close + 2;
        let mut list = ids[..close].trim();
        let mut sel = TokenSelector { refs: Vec::new(), negated };
        if list == "*" {
            return if negated {
                Err(("`!<[*]>` names no token at all".into(), len))
            } else {
                sel.negated = true;
                Ok((sel, len))
            };
        }
        if let Some(rest) = list.strip_prefix('^') {
            if negated {
                return Err(("use either `!<...>` or `<[^...]>`, not both".into(), len));
            }
            sel.negated = true;
            list = rest;
        }
        for item in list.split(',') {
            let item = item.trim();
            let bad = || (format!("`{item}` is not a token id or range (`12`, `10-20`, `100-MAX`)"), len);
            let (lo, hi) = match item.split_once('-') {
                Some((lo, hi)) => (lo.trim(), Some(hi.trim())),
                None => (item, None),
            };
            let lo: u32 = lo.parse().map_err(|_| bad())?;
            let hi = match hi {
                None => Some(lo),
                Some("MAX") => None,
                Some(hi) => Some(hi.parse::<u32>().map_err(|_| bad())?),
            };
            if hi.is_some_and(|hi| hi < lo) {
                return Err((format!("token range `{item}` is reversed"), len));
            }
            sel.refs.push(TokenRef::Ids { lo, hi });
        }
        return Ok((sel, len));
    }
    let end = body.find(|c: char| c == '>' || c.is_whitespace());
    match end {
        Some(i) if i > 0 && body.as_bytes()[i] == b'>' => {
            let name = format!("<{}>", &body[..i]);
            Ok((TokenSelector { refs: vec![TokenRef::Text(name)], negated }, start + 1 + i + 1))
        }
        _ => Err((
            "a token atom is `<[id]>`, `<[lo-hi,...]>` or `<text>` (a token's text, no spaces)".into(),
            start + 1 + end.unwrap_or(body.len()).min(body.len()),
        )),
    }
}

impl TokenSelector {
    /// The token ids this atom names in `vocab`, ascending; `Err` is a
    /// message for an id or text the vocabulary does not have, or an atom
    /// that names nothing.
    pub fn resolve(&self, vocab: &Vocab, end_tokens: &BitSet) -> Result<Vec<u32>, String> {
        let n = vocab.len();
        let usable = |id: usize| vocab.kind(TokenId(id as u32)) != TokenKind::Missing && !end_tokens.contains(id);
        let mut named = BitSet::new(n);
        for r in &self.refs {
            match r {
                TokenRef::Ids { lo, hi } => {
                    let last = hi.map_or(n.saturating_sub(1), |hi| hi as usize);
                    if *lo as usize >= n || last >= n {
                        return Err(format!(
                            "token id {} is not in the vocabulary (ids 0 to {})",
                            if *lo as usize >= n { *lo as usize } else { last },
                            n.saturating_sub(1)
                        ));
                    }
                    if hi == &Some(*lo) && !self.negated {
                        // One id named alone must be a token the model can produce.
                        let t = TokenId(*lo);
                        if vocab.kind(t) == TokenKind::Missing {
                            return Err(format!("token id {lo} is a gap in this vocabulary (no token has this id)"));
                        }
                        if end_tokens.contains(*lo as usize) {
                            return Err(end_token_message(vocab, t));
                        }
                    }
                    for id in *lo as usize..=last {
                        named.insert(id);
                    }
                }
                TokenRef::Text(text) => {
                    let ids = tokens_with_text(vocab, text);
                    if ids.is_empty() {
                        return Err(format!("no token of this vocabulary has the text `{text}`"));
                    }
                    if !self.negated {
                        if let Some(&end) = ids.iter().find(|&&t| end_tokens.contains(t.index())) {
                            return Err(end_token_message(vocab, end));
                        }
                    }
                    for t in ids {
                        named.insert(t.index());
                    }
                }
            }
        }
        let ids: Vec<u32> =
            (0..n).filter(|&id| named.contains(id) != self.negated && usable(id)).map(|id| id as u32).collect();
        if ids.is_empty() {
            return Err("this token atom names no token the model can produce here".into());
        }
        Ok(ids)
    }
}

impl TokenSelector {
    /// The tokens this atom names one by one (a single id or a text, not a
    /// range or a negation), those `vocab` has.
    pub fn explicit_tokens(&self, vocab: &Vocab) -> Vec<u32> {
        if self.negated {
            return Vec::new();
        }
        let mut out = Vec::new();
        for r in &self.refs {
            match r {
                TokenRef::Ids { lo, hi: Some(hi) } if lo == hi && (*lo as usize) < vocab.len() => out.push(*lo),
                TokenRef::Text(text) => out.extend(tokens_with_text(vocab, text).iter().map(|t| t.0)),
                TokenRef::Ids { .. } => {}
            }
        }
        out
    }
}

fn end_token_message(vocab: &Vocab, t: TokenId) -> String {
    let name = vocab.token_name(t).map(|n| format!(" (`{n}`)")).unwrap_or_default();
    format!("token {}{name} is an end token of this constraint and cannot also be a grammar token; leave it out of the end tokens to name it in the grammar", t.0)
}

/// Tokens whose text is `text`: exact-only tokens by display name, byte
/// tokens by their bytes.
fn tokens_with_text(vocab: &Vocab, text: &str) -> Vec<TokenId> {
    let mut ids: Vec<TokenId> =
        vocab.metadata().token_names.iter().filter(|(_, n)| n == text).map(|(t, _)| *t).collect();
    ids.extend(
        (0..vocab.len() as u32)
            .map(TokenId)
            .filter(|&t| vocab.kind(t) == TokenKind::Bytes && vocab.bytes(t) == text.as_bytes()),
    );
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Token-level questions about a grammar, asked with a vocabulary (here, not in
/// `grammar`, so that the IR does not depend on vocabularies).
impl super::Grammar {
    /// The tokens of `vocab` the grammar names one by one: bound slots, and
    /// token atoms of one id or one text (`<|eom_id|>`, `<[128008]>`; not
    /// ranges or negations, which skip end tokens anyway). A server whose
    /// stop tokens include one of these (Llama's `<|eom_id|>` closing a tool
    /// call) leaves it out of the end tokens: there it is the grammar's.
    pub fn named_tokens(&self, vocab: &Vocab) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for exact in self.terminals.iter().filter_map(|t| t.exact.as_ref()) {
            out.extend(&exact.tokens);
            if let Some(select) = &exact.select {
                out.extend(select.explicit_tokens(vocab));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (String, usize) {
        let (sel, len) = parse_token_atom(text).unwrap_or_else(|(e, _)| panic!("{text}: {e}"));
        (sel.to_string(), len)
    }

    #[test]
    fn syntax_round_trips() {
        assert_eq!(parse("<[12]> x"), ("<[12]>".into(), 6));
        assert_eq!(parse("<[1, 5-9]>"), ("<[1,5-9]>".into(), 10));
        assert_eq!(parse("<[^7,100-MAX]>"), ("<[^7,100-MAX]>".into(), 14));
        assert_eq!(parse("<[*]>"), ("<[*]>".into(), 5));
        assert_eq!(parse("<|eot_id|> rest"), ("<|eot_id|>".into(), 10));
        assert_eq!(parse("!<think>*"), ("!<think>".into(), 8));
        assert_eq!(parse("!<[3]>"), ("<[^3]>".into(), 6));
        assert_eq!(parse("@token( 42 )"), ("<[42]>".into(), 12));
    }

    #[test]
    fn malformed_atoms_are_errors() {
        for bad in ["<[12>", "<[a]>", "<[9-3]>", "< x>", "<>", "!<[*]>", "!<[^1]>", "@token(x)", "@token(1", "<abc"] {
            assert!(parse_token_atom(bad).is_err(), "{bad}");
        }
    }
}
