//! Source text and byte spans. Front ends record spans; line and column are
//! computed only when an error is rendered (STYLE §4).

use std::sync::Arc;

/// A byte range into a [`Source`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
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

/// Characters of a long source line shown before and after an error's column.
const EXCERPT_BEFORE: usize = 60;
const EXCERPT_AFTER: usize = 80;

/// Grammar source text with a display name ("<ebnf>", a file name, ...).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
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

    /// `line | text` followed by a caret line under the span's start. A
    /// long line is cut to a window around the column (`…` marks the cuts),
    /// so an error in a 1 MB one-line regex stays a short message.
    pub fn excerpt(&self, span: Span) -> String {
        let (line, column) = self.line_col(span.start);
        let full: Vec<char> = self.line_text(line).chars().collect();
        let (end_line, end_column) = self.line_col(span.end);
        let width = if end_line == line && end_column > column { end_column - column } else { 1 };
        let from = (column - 1).saturating_sub(EXCERPT_BEFORE);
        let to = full.len().min((column - 1).max(from) + EXCERPT_AFTER);
        let mut text: String = if from > 0 { "…".into() } else { String::new() };
        text.extend(&full[from..to.max(from)]);
        if to < full.len() {
            text.push('…');
        }
        let lead = usize::from(from > 0);
        let pad: String = std::iter::repeat_n(' ', lead)
            .chain(full[from..(column - 1).min(full.len())].iter().map(|&c| if c == '\t' { '\t' } else { ' ' }))
            .collect();
        let gutter = line.to_string();
        format!(
            "{:w$} |\n{} | {}\n{:w$} | {}{}",
            "",
            gutter,
            text,
            "",
            pad,
            "^".repeat(width.min(EXCERPT_AFTER)),
            w = gutter.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_around_the_column() {
        let text = format!("{}XY{}", "a".repeat(1_000_000), "b".repeat(1_000_000));
        let source = Source::new("<regex>", text);
        let excerpt = source.excerpt(Span::new(1_000_000, 1_000_002));
        assert!(excerpt.len() < 600, "{} bytes", excerpt.len());
        let lines: Vec<&str> = excerpt.lines().collect();
        // Columns, not bytes: `…` is one column.
        let caret = lines[2].chars().position(|c| c == '^').unwrap();
        let shown: String = lines[1].chars().skip(caret).take(2).collect();
        assert_eq!(shown, "XY", "{excerpt}");
        assert!(lines[1].starts_with("1 | …") && lines[1].ends_with('…'));
    }

    #[test]
    fn a_short_line_is_whole() {
        let source = Source::new("<ebnf>", "root ::= \"a\" |");
        let excerpt = source.excerpt(Span::new(13, 14));
        assert_eq!(excerpt, "  |\n1 | root ::= \"a\" |\n  |              ^");
    }
}
