//! Mistral tekken JSON: a tiktoken vocabulary behind a special-token id space.
//!
//! Takes the file's bytes. Ids `0..num_special` are special tokens (the
//! file's `special_tokens` list, or — for files of version ≤ v7 that have
//! none — mistral-common's deprecated list of 20 names), filled up to
//! `num_special` with `<SPECIAL_{i}>`; all are exact-only. Id
//! `num_special + rank` is the rank's `token_bytes` (base64), for the first
//! `default_vocab_size - num_special` ranks only: the file may hold more
//! ranks than the model uses (tekken_240718 has 150,000 and uses 130,072).
//! This follows `Tekkenizer.from_file` in mistral-common 1.13
//! (`mistral_common/tokens/tokenizers/tekken.py`). The EOS is `</s>`.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::{decode_base64, read_file, vocab_error, Builder};
use crate::error::Result;
use crate::vocab::{Vocab, VocabFormat};

#[derive(Deserialize)]
struct TekkenFile {
    config: Config,
    vocab: Vec<RankEntry>,
    #[serde(default)]
    special_tokens: Option<Vec<SpecialEntry>>,
}

#[derive(Deserialize)]
struct Config {
    default_vocab_size: usize,
    default_num_special_tokens: usize,
    #[serde(default)]
    version: Option<String>,
}

#[derive(Deserialize)]
struct RankEntry {
    rank: usize,
    token_bytes: String,
}

#[derive(Deserialize)]
struct SpecialEntry {
    rank: usize,
    token_str: String,
}

/// mistral-common's `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`, ids 0..20.
const DEPRECATED_SPECIAL_TOKENS: [&str; 20] = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
];

/// Read a tekken file. `vocab_size` is the model's logits width; `None`
/// uses the file's `default_vocab_size`.
pub fn load(data: &[u8], vocab_size: Option<usize>) -> Result<Arc<Vocab>> {
    let file: TekkenFile = serde_json::from_slice(data)
        .map_err(|e| vocab_error("tekken_invalid_json", format!("not a tekken tokenizer file: {e}")))?;
    let num_special = file.config.default_num_special_tokens;
    let total = file.config.default_vocab_size;
    if num_special > total || total - num_special > file.vocab.len() {
        return Err(vocab_error(
            "tekken_invalid_config",
            format!(
                "tekken config asks for {total} ids with {num_special} special tokens, but the file has {} ranks",
                file.vocab.len()
            ),
        ));
    }
    let mut b = Builder::new(VocabFormat::Tekken, total);
    let mut names: Vec<Option<String>> = vec![None; num_special];
    match &file.special_tokens {
        Some(list) => {
            for s in list {
                let slot = names.get_mut(s.rank).ok_or_else(|| {
                    vocab_error(
                        "tekken_invalid_special_token",
                        format!(
                            "special token {:?} has rank {}, past the {num_special} special ids",
                            s.token_str, s.rank
                        ),
                    )
                })?;
                if slot.is_some() {
                    return Err(vocab_error(
                        "tekken_invalid_special_token",
                        format!("special token rank {} is given twice", s.rank),
                    ));
                }
                *slot = Some(s.token_str.clone());
            }
        }
        None => {
            let version = file.config.version.as_deref().unwrap_or("");
            let number: Option<u32> = version.strip_prefix('v').and_then(|n| n.parse().ok());
            if number.is_none_or(|n| n > 7) {
                return Err(vocab_error(
                    "tekken_missing_special_tokens",
                    format!(
                        "tekken file of version {version:?} has no `special_tokens`; only files up to v7 may omit them"
                    ),
                ));
            }
            for (slot, name) in names.iter_mut().zip(DEPRECATED_SPECIAL_TOKENS) {
                *slot = Some(name.to_string());
            }
        }
    }
    for (id, name) in names.into_iter().enumerate() {
        b.exact(id, name.unwrap_or_else(|| format!("<SPECIAL_{id}>")))?;
    }
    for (i, entry) in file.vocab.iter().take(total - num_special).enumerate() {
        if entry.rank != i {
            return Err(vocab_error(
                "tekken_invalid_rank",
                format!("vocab entry {i} has rank {}; tekken ranks must be 0, 1, 2, … in order", entry.rank),
            ));
        }
        let bytes = decode_base64(&entry.token_bytes).filter(|b| !b.is_empty()).ok_or_else(|| {
            vocab_error("tekken_invalid_base64", format!("rank {i} has bad `token_bytes` {:?}", entry.token_bytes))
        })?;
        b.bytes(num_special + i, bytes, "tekken rank")?;
    }
    b.finish(Some(vocab_size.unwrap_or(total)))
}

/// Read a tekken file from disk (see [`load`]).
pub fn load_file(path: impl AsRef<Path>, vocab_size: Option<usize>) -> Result<Arc<Vocab>> {
    load(&read_file(path.as_ref())?, vocab_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TokenId;
    use crate::vocab::TokenKind;

    fn file(special: &str, version: &str, size: usize, nspecial: usize) -> String {
        format!(
            r#"{{"config": {{"pattern": "", "num_vocab_tokens": 3, "default_vocab_size": {size},
                "default_num_special_tokens": {nspecial}, "version": "{version}"}},
              "vocab": [{{"rank": 0, "token_bytes": "YQ==", "token_str": "a"}},
                        {{"rank": 1, "token_bytes": "/w==", "token_str": null}},
                        {{"rank": 2, "token_bytes": "Yg==", "token_str": "b"}}]{special}}}"#
        )
    }

    #[test]
    fn special_space_then_ranks_cut_to_size() {
        let special = r#", "special_tokens": [{"rank": 0, "token_str": "<unk>", "is_control": true},
                                           {"rank": 1, "token_str": "</s>", "is_control": true}]"#;
        let v = load(file(special, "v13", 5, 3).as_bytes(), None).unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v.token_name(TokenId(1)), Some("</s>"));
        assert_eq!(v.token_name(TokenId(2)), Some("<SPECIAL_2>"));
        assert_eq!(v.kind(TokenId(2)), TokenKind::ExactOnly);
        assert_eq!(v.bytes(TokenId(3)), b"a");
        assert_eq!(v.bytes(TokenId(4)), b"\xff");
        assert_eq!(v.eos_token_ids(), &[TokenId(1)]);
    }

    #[test]
    fn deprecated_specials_for_old_versions_only() {
        let v = load(file("", "v3", 23, 20).as_bytes(), None).unwrap();
        assert_eq!(v.token_name(TokenId(2)), Some("</s>"));
        assert_eq!(v.token_name(TokenId(19)), Some("[TOOL_CONTENT]"));
        assert_eq!(v.bytes(TokenId(22)), b"b");
        let e = load(file("", "v11", 23, 20).as_bytes(), None).unwrap_err();
        assert_eq!(e.code(), "tekken_missing_special_tokens");
    }

    #[test]
    fn malformed_files() {
        assert_eq!(load(b"{", None).unwrap_err().code(), "tekken_invalid_json");
        assert_eq!(load(b"[]", None).unwrap_err().code(), "tekken_invalid_json");
        assert_eq!(load(file("", "v3", 30, 20).as_bytes(), None).unwrap_err().code(), "tekken_invalid_config");
        assert_eq!(load(file("", "v3", 3, 20).as_bytes(), None).unwrap_err().code(), "tekken_invalid_config");
        let bad = file("", "v3", 23, 20).replace("\"Yg==\"", "\"*\"");
        assert_eq!(load(bad.as_bytes(), None).unwrap_err().code(), "tekken_invalid_base64");
        let bad = file("", "v3", 23, 20).replace("\"rank\": 2", "\"rank\": 7");
        assert_eq!(load(bad.as_bytes(), None).unwrap_err().code(), "tekken_invalid_rank");
        let special = r#", "special_tokens": [{"rank": 5, "token_str": "<x>", "is_control": true}]"#;
        assert_eq!(
            load(file(special, "v13", 5, 2).as_bytes(), None).unwrap_err().code(),
            "tekken_invalid_special_token"
        );
    }
}
