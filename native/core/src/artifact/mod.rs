//! Saved constraints: compile once, load in every process of a deployment.
//!
//! An artifact is a fixed header and a body:
//!
//! ```text
//! magic "GLRMART\0" | format version u32 | core version [u8; 16]
//! | engine u8 | vocabulary u8 (0 embedded, 1 external) | kind u8 | reserved u8
//! | vocabulary fingerprint u64 | body length u64 | body CRC-32 u32 | body
//! ```
//!
//! (little-endian). Kind 0 is a `Constraint`, kind 1 an
//! [`UnlinkedConstraint`] (its grammar IR, vocabulary and end tokens: it is
//! compiled at link). A constraint's body is its runtime tables in
//! `postcard`: the compiled grammar (lexer, LR tables, liveness, the grammar
//! IR for introspection), the Static tables when that engine serves, the
//! end tokens, and the vocabulary unless it is external. Tables derived
//! from others (production index, left corners, class spans, the exact-token
//! map) are recomputed on load rather than trusted.
//!
//! Loading trusts nothing: the header is checked field by field, the body's
//! length and checksum must match, decoding never preallocates more than
//! the input justifies (serde's cautious size hints) and trees are rebuilt
//! without recursion ([`crate::wire`]), and every index in every table is bounds
//! checked ([`validate`]) before the constraint is built. An artifact that
//! passes is safe to mask and commit with: a bad one is an `Artifact`
//! error naming what is wrong, never a panic.

pub mod cache;
mod validate;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::compile::CompiledGrammar;
use crate::constraint::{Constraint, Engine, Optimization, RuntimeLimits};
use crate::error::{Error, ErrorKind, Result};
use crate::grammar::Grammar;
use crate::mask::compiled::{ParserDwa, StaticStats, StaticTables, TokenClasses};
use crate::mask::VocabCaches;
use crate::unlinked::UnlinkedConstraint;
use crate::vocab::{TokenDef, TokenKind, Vocab, VocabMetadata};

const MAGIC: &[u8; 8] = b"GLRMART\0";
/// Bumped whenever the body's layout or meaning changes.
pub const FORMAT_VERSION: u32 = 3;
const CORE_VERSION: &str = env!("CARGO_PKG_VERSION");
const HEADER_LEN: usize = 8 + 4 + 16 + 4 + 8 + 8 + 4;

/// What `save` writes, borrowed from the constraint.
#[derive(Serialize)]
struct BodyRef<'a> {
    grammar: &'a CompiledGrammar,
    vocab: Option<VocabBody>,
    end_tokens: Vec<u32>,
    optimization: Optimization,
    limits: &'a RuntimeLimits,
    static_tables: Option<(&'a TokenClasses, &'a ParserDwa, &'a StaticStats)>,
    fallback: Option<&'a str>,
}

/// What `load` reads: [`BodyRef`] field for field.
#[derive(Deserialize)]
struct Body {
    grammar: CompiledGrammar,
    vocab: Option<VocabBody>,
    end_tokens: Vec<u32>,
    optimization: Optimization,
    limits: RuntimeLimits,
    static_tables: Option<(TokenClasses, ParserDwa, StaticStats)>,
    fallback: Option<String>,
}

/// An unlinked constraint's body, borrowed for `save_unlinked`.
#[derive(Serialize)]
struct UnlinkedBodyRef<'a> {
    grammar: &'a Grammar,
    vocab: Option<VocabBody>,
    end_tokens: &'a [u32],
}

#[derive(Deserialize)]
struct UnlinkedBody {
    grammar: Grammar,
    vocab: Option<VocabBody>,
    end_tokens: Vec<u32>,
}

#[derive(Serialize, Deserialize)]
struct VocabBody {
    tokens: Vec<TokenDef>,
    meta: VocabMetadata,
}

impl VocabBody {
    fn of(vocab: &Vocab) -> VocabBody {
        let tokens = (0..vocab.len() as u32)
            .map(|i| {
                let t = crate::ids::TokenId(i);
                match vocab.kind(t) {
                    TokenKind::Bytes => TokenDef::Bytes(vocab.bytes(t).to_vec()),
                    TokenKind::ExactOnly => TokenDef::ExactOnly,
                    TokenKind::Missing => TokenDef::Missing,
                }
            })
            .collect();
        VocabBody { tokens, meta: vocab.metadata().clone() }
    }
}

/// What an artifact holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Constraint,
    Unlinked,
}

/// The fields of an artifact's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub format_version: u32,
    pub core_version: String,
    pub engine: Engine,
    pub external_vocab: bool,
    pub kind: Kind,
    pub vocab_fingerprint: u64,
    pub body_len: u64,
    pub checksum: u32,
}

fn bad(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Artifact, "bad_artifact", message)
}

/// Serialize `c` (waiting for a pending background Static build first, so
/// the artifact carries the engine the constraint settles on).
pub fn save(c: &Constraint, external_vocab: bool) -> Result<Vec<u8>> {
    c.wait_built();
    // An artifact holds every LR state's liveness entries, built or not yet.
    c.grammar.liveness.complete(&c.grammar.normal, &c.grammar.lr)?;
    let tables = c.static_tables();
    let body = BodyRef {
        grammar: &c.grammar,
        vocab: (!external_vocab).then(|| VocabBody::of(&c.vocab)),
        end_tokens: c.end_tokens().iter().map(|t| t.0).collect(),
        optimization: c.optimization,
        limits: &c.limits,
        static_tables: tables.map(|t| (&t.classes, &t.dwa, &t.stats)),
        fallback: c.fallback(),
    };
    let engine = if tables.is_some() { Engine::Static } else { Engine::Dynamic };
    seal(&body, engine, external_vocab, Kind::Constraint, &c.vocab)
}

/// An unlinked constraint as an artifact (kind 1).
pub fn save_unlinked(u: &UnlinkedConstraint, external_vocab: bool) -> Result<Vec<u8>> {
    let body = UnlinkedBodyRef {
        grammar: &u.grammar,
        vocab: (!external_vocab).then(|| VocabBody::of(&u.vocab)),
        end_tokens: &u.end_tokens,
    };
    seal(&body, Engine::Dynamic, external_vocab, Kind::Unlinked, &u.vocab)
}

/// Header + postcard body.
fn seal(body: &impl Serialize, engine: Engine, external_vocab: bool, kind: Kind, vocab: &Vocab) -> Result<Vec<u8>> {
    let body = postcard::to_stdvec(body).map_err(|e| Error::internal(format!("serializing an artifact: {e}")))?;
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let mut version = [0u8; 16];
    version[..CORE_VERSION.len()].copy_from_slice(CORE_VERSION.as_bytes());
    out.extend_from_slice(&version);
    out.push(match engine {
        Engine::Dynamic => 0,
        Engine::Static => 1,
    });
    out.push(external_vocab as u8);
    out.push(match kind {
        Kind::Constraint => 0,
        Kind::Unlinked => 1,
    });
    out.push(0);
    out.extend_from_slice(&vocab.fingerprint().to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Make the header's body length and checksum agree with the body that
/// follows (fuzzing: so that mutations reach the decoder and the checks
/// behind the checksum, as a hostile artifact can).
#[doc(hidden)]
pub fn reseal(data: &mut [u8]) {
    if data.len() >= HEADER_LEN {
        let body_len = (data.len() - HEADER_LEN) as u64;
        let crc = crc32fast::hash(&data[HEADER_LEN..]);
        data[40..48].copy_from_slice(&body_len.to_le_bytes());
        data[48..52].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Read and check the header; returns it with the body.
pub fn read_header(data: &[u8]) -> Result<(Header, &[u8])> {
    if data.len() < 8 || &data[..8] != MAGIC {
        return Err(bad("not a glrmask artifact (the data does not start with the artifact magic bytes)"));
    }
    if data.len() < HEADER_LEN {
        return Err(bad(format!("artifact truncated: {} bytes, the header alone is {HEADER_LEN}", data.len())));
    }
    let u32_at = |i: usize| u32::from_le_bytes(data[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().expect("8 bytes"));
    let format_version = u32_at(8);
    if format_version != FORMAT_VERSION {
        return Err(bad(format!(
            "artifact format version {format_version}; this glrmask reads version {FORMAT_VERSION} (recompile the grammar)"
        )));
    }
    let raw_version = &data[12..28];
    let end = raw_version.iter().position(|&b| b == 0).unwrap_or(16);
    let core_version = String::from_utf8_lossy(&raw_version[..end]).into_owned();
    if core_version != CORE_VERSION {
        return Err(bad(format!(
            "artifact written by glrmask-core {core_version:?}; this is {CORE_VERSION} (recompile the grammar)"
        )));
    }
    let engine = match data[28] {
        0 => Engine::Dynamic,
        1 => Engine::Static,
        e => return Err(bad(format!("artifact names an unknown engine ({e})"))),
    };
    let external_vocab = match data[29] {
        0 => false,
        1 => true,
        v => return Err(bad(format!("artifact has an unknown vocabulary mode ({v})"))),
    };
    let kind = match data[30] {
        0 => Kind::Constraint,
        1 => Kind::Unlinked,
        k => return Err(bad(format!("artifact holds an unknown kind of object ({k})"))),
    };
    if data[31] != 0 {
        return Err(bad("artifact header has a non-zero reserved byte"));
    }
    let header = Header {
        format_version,
        core_version,
        engine,
        external_vocab,
        kind,
        vocab_fingerprint: u64_at(32),
        body_len: u64_at(40),
        checksum: u32_at(48),
    };
    let body = &data[HEADER_LEN..];
    if header.body_len != body.len() as u64 {
        return Err(bad(format!(
            "artifact truncated or padded: the header gives a {}-byte body, {} bytes follow it",
            header.body_len,
            body.len()
        )));
    }
    if crc32fast::hash(body) != header.checksum {
        return Err(bad("artifact corrupted: the body's checksum does not match the header"));
    }
    Ok((header, body))
}

/// Load a constraint. `vocab` is required for an external-vocabulary
/// artifact; for an embedded one it is optional and, if given, must be the
/// same token mapping (it is then shared instead of rebuilt).
pub fn load(data: &[u8], vocab: Option<Arc<Vocab>>) -> Result<Arc<Constraint>> {
    load_sharing(data, vocab, None)
}

/// As [`load`]; the constraint shares a session's `caches` (when given,
/// they must be over `vocab`'s token mapping).
pub(crate) fn load_sharing(
    data: &[u8],
    vocab: Option<Arc<Vocab>>,
    caches: Option<Arc<VocabCaches>>,
) -> Result<Arc<Constraint>> {
    let (header, body) = read_header(data)?;
    if header.kind != Kind::Constraint {
        return Err(bad("this artifact holds an UnlinkedConstraint: load it with UnlinkedConstraint.load"));
    }
    load_body_sharing(&header, body, vocab, caches)
}

/// Load an unlinked constraint (`vocab` as for [`load`]).
pub fn load_unlinked(data: &[u8], vocab: Option<Arc<Vocab>>) -> Result<UnlinkedConstraint> {
    let (header, body) = read_header(data)?;
    if header.kind != Kind::Unlinked {
        return Err(bad("this artifact holds a Constraint: load it with Constraint.load"));
    }
    let body: UnlinkedBody =
        postcard::from_bytes(body).map_err(|e| bad(format!("artifact body does not decode: {e}")))?;
    let vocab = artifact_vocab(&header, body.vocab, vocab)?;
    validate::grammar(&body.grammar).map_err(bad)?;
    UnlinkedConstraint::new(body.grammar, vocab, body.end_tokens)
}

/// The vocabulary an artifact is loaded with: the caller's, or the embedded
/// one; either way it must have the fingerprint the artifact was made for.
fn artifact_vocab(header: &Header, saved: Option<VocabBody>, given: Option<Arc<Vocab>>) -> Result<Arc<Vocab>> {
    let vocab = match (saved, given, header.external_vocab) {
        (_, Some(v), _) => v,
        (Some(saved), None, false) => Vocab::with_metadata(saved.tokens, saved.meta)
            .map_err(|e| bad(format!("artifact's vocabulary is invalid: {}", e.message())))?,
        (None, None, true) => {
            return Err(Error::new(
                ErrorKind::Vocab,
                "vocab_required",
                "this artifact was saved with external_vocab=True: pass the vocabulary it was compiled with",
            ))
        }
        _ => return Err(bad("artifact's vocabulary mode does not match its body")),
    };
    if vocab.fingerprint() != header.vocab_fingerprint {
        return Err(Error::new(
            ErrorKind::Vocab,
            "vocab_mismatch",
            format!(
                "the artifact was compiled for another vocabulary (fingerprint {:#018x}) than this one \
                 ({} ids, fingerprint {:#018x}): load it with the tokenizer it was compiled with",
                header.vocab_fingerprint,
                vocab.len(),
                vocab.fingerprint()
            ),
        ));
    }
    Ok(vocab)
}

/// [`load`] after the header: also the entry point of the fuzz target,
/// which fixes up the checksum so that mutations reach the decoder.
pub fn load_body(header: &Header, body: &[u8], vocab: Option<Arc<Vocab>>) -> Result<Arc<Constraint>> {
    load_body_sharing(header, body, vocab, None)
}

fn load_body_sharing(
    header: &Header,
    body: &[u8],
    vocab: Option<Arc<Vocab>>,
    caches: Option<Arc<VocabCaches>>,
) -> Result<Arc<Constraint>> {
    if header.kind != Kind::Constraint {
        return Err(bad("artifact header's kind does not match its body"));
    }
    let body: Body = postcard::from_bytes(body).map_err(|e| bad(format!("artifact body does not decode: {e}")))?;
    let vocab = artifact_vocab(header, body.vocab, vocab)?;
    let mut grammar = body.grammar;
    validate::compiled_grammar(&grammar).map_err(bad)?;
    grammar.restore_derived();
    let tables = match body.static_tables {
        Some((classes, dwa, stats)) => {
            validate::static_tables(&grammar, &vocab, &classes, &dwa).map_err(bad)?;
            Some(StaticTables::restore(classes, dwa, stats))
        }
        None => None,
    };
    if (header.engine == Engine::Static) != tables.is_some() {
        return Err(bad("artifact header's engine does not match its body"));
    }
    Constraint::from_parts(
        Arc::new(grammar),
        vocab,
        &body.end_tokens,
        body.optimization,
        body.limits,
        tables,
        body.fallback,
        caches.unwrap_or_default(),
    )
}
