//! Source text and byte spans. Front ends record spans; line and column are
//! computed only when an error is rendered (STYLE §4).

use std::sync::Arc;

/// A byte range into a [`Source`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        let clamp = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        Span { start: clamp(start), end: clamp(end.max(start)) }
    }
    pub fn point(at: usize) -> Self {
        Span::new(at, at)
    }
}

/// Grammar source text with a display name ("<ebnf>", a file name, ...).
#[derive(Debug)]
pub struct Source {
    pub name: String,
    pub text: String,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<Source> {
        Arc::new(Source { name: name.into(), text: text.into() })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = (offset as usize).min(self.text.len());
        let mut offset = offset;
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = self.text[line_start..offset].chars().count() + 1;
        (line, column)
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        self.text.split('\n').nth(line - 1).unwrap_or("").trim_end_matches('\r')
    }

    /// `line | text` followed by a caret line under the span's start.
    pub fn excerpt(&self, span: Span) -> String {
        let (line, column) = self.line_col(span.start);
        let text = self.line_text(line);
        let (end_line, end_column) = self.line_col(span.end);
        let width = if end_line == line && end_column > column { end_column - column } else { 1 };
        let gutter = line.to_string();
        let pad: String = text.chars().take(column - 1).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
        format!(
            "{:w$} |\n{} | {}\n{:w$} | {}{}",
            "",
            gutter,
            text,
            "",
            pad,
            "^".repeat(width.min(80)),
            w = gutter.len()
        )
    }
}
