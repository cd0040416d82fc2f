//! SentencePiece `.model` files, read straight from the protobuf.
//!
//! Takes the file's bytes; gives one token per piece, id = position. The
//! wire format is parsed by hand (varints and length-delimited fields, about
//! 60 lines) instead of pulling in a protobuf crate: we need three messages
//! and six fields of `sentencepiece_model.proto`:
//!
//! - `ModelProto`: `pieces = 1` (repeated), `trainer_spec = 2`, `normalizer_spec = 3`;
//! - `SentencePiece`: `piece = 1`, `type = 3` (NORMAL 1, UNKNOWN 2, CONTROL 3,
//!   USER_DEFINED 4, UNUSED 5, BYTE 6; NORMAL when absent);
//! - `TrainerSpec`: `eos_id = 42` (default 2); `NormalizerSpec`:
//!   `escape_whitespaces = 5` (default true).
//!
//! Bytes of a piece, as `sentencepiece`'s decoder produces them: NORMAL and
//! USER_DEFINED pieces are their text with `▁` (U+2581) turned into a space
//! (when whitespace is escaped); BYTE pieces `<0xXX>` are the byte XX;
//! UNKNOWN, CONTROL and UNUSED pieces are exact-only, named by their piece.
//! The leading space that `add_dummy_prefix` puts on the first word stays in
//! the token's bytes (the decoder strips it only at the start of a text).

use std::path::Path;
use std::sync::Arc;

use super::{read_file, vocab_error, Builder};
use crate::error::{Error, Result};
use crate::vocab::{Vocab, VocabFormat};

/// Piece types of `sentencepiece_model.proto`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PieceType {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

impl PieceType {
    fn from_wire(v: u64) -> Option<PieceType> {
        Some(match v {
            1 => PieceType::Normal,
            2 => PieceType::Unknown,
            3 => PieceType::Control,
            4 => PieceType::UserDefined,
            5 => PieceType::Unused,
            6 => PieceType::Byte,
            _ => return None,
        })
    }
}

/// The parts of a `.model` file the vocabulary needs.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFile {
    pub pieces: Vec<(String, PieceType)>,
    /// `trainer_spec.eos_id`; negative means none.
    pub eos_id: i64,
    /// `normalizer_spec.escape_whitespaces`: spaces are written `▁`.
    pub escape_whitespaces: bool,
}

/// Read a `.model` file. `vocab_size` pads (or cuts) to the model's logits width.
pub fn load(data: &[u8], vocab_size: Option<usize>) -> Result<Arc<Vocab>> {
    let model = parse_model(data)?;
    let mut b = Builder::new(VocabFormat::SentencePiece, model.pieces.len());
    for (id, (piece, kind)) in model.pieces.into_iter().enumerate() {
        match kind {
            PieceType::Normal | PieceType::UserDefined => {
                let text = if model.escape_whitespaces { piece.replace('\u{2581}', " ") } else { piece };
                if text.is_empty() {
                    b.exact(id, text)?;
                } else {
                    b.bytes(id, text.into_bytes(), "sentencepiece piece")?;
                }
            }
            PieceType::Byte => {
                let byte = parse_byte_piece(&piece).ok_or_else(|| {
                    vocab_error(
                        "sentencepiece_invalid_byte_piece",
                        format!("piece {id} has type BYTE but is {piece:?}, not `<0xXX>`"),
                    )
                })?;
                b.bytes(id, vec![byte], "sentencepiece piece")?;
            }
            PieceType::Unknown | PieceType::Control | PieceType::Unused => b.exact(id, piece)?,
        }
    }
    if b.len() == 0 {
        return Err(vocab_error("sentencepiece_no_pieces", "the SentencePiece model has no pieces"));
    }
    if model.eos_id >= 0 && (model.eos_id as usize) < b.len() {
        b.eos(model.eos_id as usize);
    }
    b.finish(vocab_size)
}

/// Read a `.model` file from disk (see [`load`]).
pub fn load_file(path: impl AsRef<Path>, vocab_size: Option<usize>) -> Result<Arc<Vocab>> {
    load(&read_file(path.as_ref())?, vocab_size)
}

/// `<0xXX>` (exactly two hex digits, as sentencepiece writes them) → XX.
pub fn parse_byte_piece(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// Parse the protobuf. Unknown fields are skipped, so newer files load.
pub fn parse_model(data: &[u8]) -> Result<ModelFile> {
    let mut model = ModelFile { pieces: Vec::new(), eos_id: 2, escape_whitespaces: true };
    let mut r = Wire::new(data);
    while let Some((field, value)) = r.next_field()? {
        match (field, value) {
            (1, Value::Bytes(msg)) => model.pieces.push(parse_piece(msg, model.pieces.len())?),
            (2, Value::Bytes(msg)) => {
                let mut t = Wire::new(msg);
                while let Some((f, v)) = t.next_field()? {
                    if let (42, Value::Varint(x)) = (f, v) {
                        // int32 on the wire: negative values are sign-extended to 64 bits.
                        model.eos_id = x as i64 as i32 as i64;
                    }
                }
            }
            (3, Value::Bytes(msg)) => {
                let mut n = Wire::new(msg);
                while let Some((f, v)) = n.next_field()? {
                    if let (5, Value::Varint(x)) = (f, v) {
                        model.escape_whitespaces = x != 0;
                    }
                }
            }
            (1..=3, _) => return Err(malformed("a known field has the wrong wire type")),
            _ => {}
        }
    }
    Ok(model)
}

fn parse_piece(msg: &[u8], index: usize) -> Result<(String, PieceType)> {
    let mut piece = None;
    let mut kind = PieceType::Normal;
    let mut r = Wire::new(msg);
    while let Some((field, value)) = r.next_field()? {
        match (field, value) {
            (1, Value::Bytes(b)) => {
                let text =
                    std::str::from_utf8(b).map_err(|_| malformed(&format!("piece {index} is not valid UTF-8")))?;
                piece = Some(text.to_string());
            }
            (3, Value::Varint(v)) => {
                kind =
                    PieceType::from_wire(v).ok_or_else(|| malformed(&format!("piece {index} has unknown type {v}")))?;
            }
            _ => {}
        }
    }
    let piece = piece.ok_or_else(|| malformed(&format!("piece {index} has no text")))?;
    Ok((piece, kind))
}

fn malformed(why: &str) -> Error {
    vocab_error("sentencepiece_invalid_model", format!("not a SentencePiece model file: {why}"))
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// A reader over protobuf wire format.
struct Wire<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Wire<'a> {
    fn new(data: &'a [u8]) -> Self {
        Wire { data, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let &byte = self.data.get(self.pos).ok_or_else(|| malformed("truncated varint"))?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&end| end <= self.data.len())
            .ok_or_else(|| malformed("field runs past the end of its message"))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn next_field(&mut self) -> Result<Option<(u64, Value<'a>)>> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed
            }
            2 => {
                let n = self.varint()?;
                Value::Bytes(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed
            }
            w => return Err(malformed(&format!("unsupported wire type {w}"))),
        };
        Ok(Some((key >> 3, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TokenId;
    use crate::vocab::TokenKind;

    fn piece(text: &str, kind: u8) -> Vec<u8> {
        let mut m = vec![0x0a, text.len() as u8];
        m.extend_from_slice(text.as_bytes());
        m.extend_from_slice(&[0x15, 0, 0, 0x80, 0xbf]); // score = -1.0 (fixed32)
        if kind != 1 {
            m.extend_from_slice(&[0x18, kind]);
        }
        let mut out = vec![0x0a, m.len() as u8];
        out.extend(m);
        out
    }

    fn model(pieces: &[(&str, u8)], trainer: &[u8]) -> Vec<u8> {
        let mut out: Vec<u8> = pieces.iter().flat_map(|(t, k)| piece(t, *k)).collect();
        out.extend_from_slice(&[0x12, trainer.len() as u8]);
        out.extend_from_slice(trainer);
        out
    }

    #[test]
    fn piece_types() {
        // trainer_spec { eos_id = 1 } : field 42 varint → key (42<<3)|0 = 336 = [0xd0, 0x02].
        let data = model(
            &[("<unk>", 2), ("</s>", 3), ("<0x0A>", 6), ("▁the", 1), ("<tool>", 4), ("<x>", 5)],
            &[0xd0, 0x02, 0x01],
        );
        let v = load(&data, None).unwrap();
        assert_eq!(v.len(), 6);
        assert_eq!(v.kind(TokenId(0)), TokenKind::ExactOnly);
        assert_eq!(v.token_name(TokenId(1)), Some("</s>"));
        assert_eq!(v.bytes(TokenId(2)), b"\n");
        assert_eq!(v.bytes(TokenId(3)), b" the");
        assert_eq!(v.bytes(TokenId(4)), b"<tool>");
        assert_eq!(v.kind(TokenId(5)), TokenKind::ExactOnly);
        assert_eq!(v.eos_token_ids(), &[TokenId(1)]);
    }

    #[test]
    fn negative_eos_id_means_none() {
        // eos_id = -1: ten-byte varint.
        let trainer = [0xd0, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let v = load(&model(&[("a", 1), ("<s>", 3)], &trainer), None).unwrap();
        assert!(v.eos_token_ids().is_empty());
    }

    #[test]
    fn malformed_files() {
        let code = |d: &[u8]| load(d, None).unwrap_err().code();
        assert_eq!(code(b""), "sentencepiece_no_pieces");
        assert_eq!(code(&[0x0a, 0x05, 0x0a]), "sentencepiece_invalid_model");
        assert_eq!(code(&[0x0b]), "sentencepiece_invalid_model");
        assert_eq!(code(&[0x08, 0xff]), "sentencepiece_invalid_model");
        assert_eq!(code(&[0x08; 1]), "sentencepiece_invalid_model");
        assert_eq!(code(&model(&[("<0xZZ>", 6)], &[])), "sentencepiece_invalid_byte_piece");
        assert_eq!(code(&model(&[("a", 9)], &[])), "sentencepiece_invalid_model");
        assert_eq!(code(&[0x0a, 0x02, 0x0a, 0x00, 0x0a, 0x01, 0xff]), "sentencepiece_invalid_model");
    }
}
