//! tiktoken rank files: one `base64(bytes) rank` line per token, rank = id.
//!
//! Takes the file's bytes and the encoding's special tokens (name, id) —
//! the rank file does not hold them; [`known_special_tokens`] has the tables
//! of OpenAI's public encodings, copied from tiktoken 0.14
//! (`tiktoken_ext/openai_public.py`). Gives a [`Vocab`] where ranks are byte
//! tokens, specials are exact-only, and every id in between that neither
//! defines (o200k's 199,998 and 200,000–200,017) is missing, so it is never
//! allowed.
//!
//! PERF: o200k (199,998 lines, 3.6 MB) loads in tens of milliseconds in
//! release mode, trie included; see `vocab_loaders.rs::load_times`.

use std::path::Path;
use std::sync::Arc;

use super::{decode_base64, read_file, vocab_error, Builder};
use crate::error::Result;
use crate::vocab::{Vocab, VocabFormat};

/// Special tokens of a tiktoken encoding: name and id.
pub type SpecialTokens = Vec<(String, u32)>;

/// The special tokens of OpenAI's public encodings, by encoding name.
pub fn known_special_tokens(encoding: &str) -> Option<SpecialTokens> {
    const ENDOFTEXT: &str = "<|endoftext|>";
    const ENDOFPROMPT: &str = "<|endofprompt|>";
    let list: Vec<(&str, u32)> = match encoding {
        "gpt2" | "r50k_base" | "p50k_base" => vec![(ENDOFTEXT, 50256)],
        "p50k_edit" => {
            vec![(ENDOFTEXT, 50256), ("<|fim_prefix|>", 50281), ("<|fim_middle|>", 50282), ("<|fim_suffix|>", 50283)]
        }
        "cl100k_base" => vec![
            (ENDOFTEXT, 100257),
            ("<|fim_prefix|>", 100258),
            ("<|fim_middle|>", 100259),
            ("<|fim_suffix|>", 100260),
            (ENDOFPROMPT, 100276),
        ],
        "o200k_base" => vec![(ENDOFTEXT, 199999), (ENDOFPROMPT, 200018)],
        "o200k_harmony" => {
            let mut v: Vec<(String, u32)> = vec![
                ("<|startoftext|>".into(), 199998),
                (ENDOFTEXT.into(), 199999),
                ("<|return|>".into(), 200002),
                ("<|constrain|>".into(), 200003),
                ("<|channel|>".into(), 200005),
                ("<|start|>".into(), 200006),
                ("<|end|>".into(), 200007),
                ("<|message|>".into(), 200008),
                ("<|call|>".into(), 200012),
                (ENDOFPROMPT.into(), 200018),
            ];
            for id in [200000, 200001, 200004, 200009, 200010, 200011].into_iter().chain(200013..201088) {
                if id != 200018 {
                    v.push((format!("<|reserved_{id}|>"), id));
                }
            }
            v.sort_by_key(|(_, id)| *id);
            return Some(v);
        }
        _ => return None,
    };
    Some(list.into_iter().map(|(n, id)| (n.to_string(), id)).collect())
}

/// The public encoding whose rank file has `ranks` lines (r50k and p50k are
/// told apart by count; p50k_edit shares p50k's file and is never guessed).
pub fn guess_encoding(ranks: usize) -> Option<&'static str> {
    match ranks {
        50256 => Some("r50k_base"),
        50280 => Some("p50k_base"),
        100256 => Some("cl100k_base"),
        199998 => Some("o200k_base"),
        _ => None,
    }
}

/// Read a rank file. Blank lines are skipped; ranks may come in any order
/// but each id once. `vocab_size` pads (or cuts) the id space to the
/// model's logits width.
pub fn load(data: &[u8], special_tokens: &[(String, u32)], vocab_size: Option<usize>) -> Result<Arc<Vocab>> {
    with_specials(parse_ranks(data)?, special_tokens, vocab_size)
}

/// Build from an encoding's tables already in memory (a `tiktoken.Encoding`'s
/// mergeable ranks and special tokens): the same rules as [`load`].
pub fn from_ranks(
    ranks: impl IntoIterator<Item = (Vec<u8>, u32)>,
    special_tokens: &[(String, u32)],
    vocab_size: Option<usize>,
) -> Result<Arc<Vocab>> {
    let ranks = ranks.into_iter();
    let mut b = Builder::new(VocabFormat::Tiktoken, ranks.size_hint().0);
    for (token, rank) in ranks {
        if token.is_empty() {
            return Err(vocab_error("tiktoken_empty_token", format!("rank {rank} is an empty byte string")));
        }
        b.bytes(rank as usize, token, "rank given twice")?;
    }
    if b.len() == 0 {
        return Err(vocab_error("tiktoken_empty", "the encoding has no ranks"));
    }
    with_specials(b, special_tokens, vocab_size)
}

fn with_specials(mut b: Builder, special_tokens: &[(String, u32)], vocab_size: Option<usize>) -> Result<Arc<Vocab>> {
    for (name, id) in special_tokens {
        let id = *id as usize;
        if b.is_set(id) {
            return Err(vocab_error(
                "tiktoken_special_id_conflict",
                format!("special token {name:?} has id {id}, which the rank file already uses"),
            ));
        }
        b.exact(id, name.clone())?;
    }
    b.finish(vocab_size)
}

/// Read a rank file from disk. Special tokens: `special_tokens` if given,
/// else those of the public encoding named by the file stem
/// (`o200k_base.tiktoken`), else those of the public encoding with this
/// many ranks ([`guess_encoding`]), else none.
pub fn load_file(
    path: impl AsRef<Path>,
    special_tokens: Option<&[(String, u32)]>,
    vocab_size: Option<usize>,
) -> Result<Arc<Vocab>> {
    let path = path.as_ref();
    let data = read_file(path)?;
    if let Some(s) = special_tokens {
        return load(&data, s, vocab_size);
    }
    let by_name = path.file_stem().and_then(|s| s.to_str()).and_then(known_special_tokens);
    let specials = match by_name {
        Some(s) => s,
        None => {
            let lines = data.split(|&c| c == b'\n').filter(|l| !l.trim_ascii().is_empty()).count();
            guess_encoding(lines).and_then(known_special_tokens).unwrap_or_default()
        }
    };
    load(&data, &specials, vocab_size)
}

fn parse_ranks(data: &[u8]) -> Result<Builder> {
    let mut b = Builder::new(VocabFormat::Tiktoken, data.len() / 16);
    for (n, line) in data.split(|&c| c == b'\n').enumerate() {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| {
            vocab_error(
                "tiktoken_invalid_line",
                format!("line {} of the tiktoken file is not `base64 rank`: {why}", n + 1),
            )
        };
        let mut parts = line.split(|&c| c == b' ').filter(|p| !p.is_empty());
        let (Some(token), Some(rank), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("expected two fields"));
        };
        let token = std::str::from_utf8(token).ok().and_then(decode_base64).ok_or_else(|| bad("bad base64"))?;
        let rank: usize = std::str::from_utf8(rank).ok().and_then(|r| r.parse().ok()).ok_or_else(|| bad("bad rank"))?;
        if token.is_empty() {
            return Err(bad("empty token"));
        }
        b.bytes(rank, token, "rank given twice in the tiktoken file")?;
    }
    if b.len() == 0 {
        return Err(vocab_error("tiktoken_empty", "the tiktoken file has no ranks"));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TokenId;
    use crate::vocab::TokenKind;

    #[test]
    fn ranks_specials_and_gaps() {
        let file = b"YQ== 0\nYmM= 2\n\n";
        let v = load(file, &[("<|endoftext|>".into(), 4)], Some(6)).unwrap();
        assert_eq!(v.len(), 6);
        assert_eq!(v.bytes(TokenId(0)), b"a");
        assert_eq!(v.kind(TokenId(1)), TokenKind::Missing);
        assert_eq!(v.bytes(TokenId(2)), b"bc");
        assert_eq!(v.kind(TokenId(4)), TokenKind::ExactOnly);
        assert_eq!(v.token_name(TokenId(4)), Some("<|endoftext|>"));
        assert_eq!(v.eos_token_ids(), &[TokenId(4)]);
        assert_eq!(v.kind(TokenId(5)), TokenKind::Missing);
    }

    #[test]
    fn from_ranks_matches_load() {
        let specials = [("<|endoftext|>".to_string(), 4)];
        let a = load(b"YQ== 0\nYmM= 2\n", &specials, Some(6)).unwrap();
        let b = from_ranks([(b"bc".to_vec(), 2), (b"a".to_vec(), 0)], &specials, Some(6)).unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.metadata(), b.metadata());
        let code = |r: Vec<(Vec<u8>, u32)>| from_ranks(r, &[], None).unwrap_err().code();
        assert_eq!(code(vec![]), "tiktoken_empty");
        assert_eq!(code(vec![(vec![], 0)]), "tiktoken_empty_token");
        assert_eq!(code(vec![(b"a".to_vec(), 0), (b"b".to_vec(), 0)]), "duplicate_token_id");
    }

    #[test]
    fn malformed_files() {
        let code = |data: &[u8], sp: &[(String, u32)]| load(data, sp, None).unwrap_err().code();
        assert_eq!(code(b"YQ==\n", &[]), "tiktoken_invalid_line");
        assert_eq!(code(b"Y!== 0\n", &[]), "tiktoken_invalid_line");
        assert_eq!(code(b"YQ== -1\n", &[]), "tiktoken_invalid_line");
        assert_eq!(code(b"YQ== 0 1\n", &[]), "tiktoken_invalid_line");
        assert_eq!(code(b"YQ== 0\nYg== 0\n", &[]), "duplicate_token_id");
        assert_eq!(code(b"YQ== 99999999999\n", &[]), "token_id_too_large");
        assert_eq!(code(b"", &[]), "tiktoken_empty");
        assert_eq!(code(b"YQ== 0\n", &[("<|x|>".into(), 0)]), "tiktoken_special_id_conflict");
        assert_eq!(code(&[0xff, b' ', b'0'], &[]), "tiktoken_invalid_line");
    }

    #[test]
    fn harmony_table_is_dense_above_ranks() {
        let s = known_special_tokens("o200k_harmony").unwrap();
        assert_eq!(s.len(), 201088 - 199998);
        assert!(s.windows(2).all(|w| w[0].1 + 1 == w[1].1));
    }
}
