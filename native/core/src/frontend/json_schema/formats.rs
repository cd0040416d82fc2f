//! `format` as regular languages, written as ECMA regexes from the RFC
//! grammars and compiled like `pattern` (so escapes in the JSON text are
//! handled the same way).
//!
//! Exact: `date` (days per month, leap years), `time` and `date-time`
//! (RFC 3339; leap seconds see [`time`]), `duration`
//! (RFC 3339 appendix A), `ipv4` (no leading zeros), `ipv6` (RFC 3986
//! `IPv6address`), `uuid`, `uri`, `uri-reference`, `iri`, `iri-reference`
//! (RFC 3986/3987 syntax), `json-pointer`, `relative-json-pointer`,
//! `uri-template` (RFC 6570 level 4 syntax), `hostname` (RFC 1123 labels of
//! ≤ 63 characters; the 253-character total is not checked, as counting it
//! across labels multiplies the DFA by 253, nor is Punycode in `xn--` labels),
//! `email` (RFC 5321 mailbox: dot-atom or quoted local part; hostname or
//! address-literal domain). Unknown formats (and `regex`, `idn-*`, which are
//! not regular or need IDNA tables) are annotations: not enforced, reported.

use super::regex::parse_ecma;
use super::strings::full_match_language;
use crate::error::Result;
use crate::grammar::Pattern;
use std::sync::RwLock;

const DIGIT: &str = "[0-9]";
const HEX: &str = "[0-9A-Fa-f]";

fn date() -> String {
    let md = "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))";
    let leap = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
    format!("(?:[0-9]{{4}}-{md}|{leap}-02-29)")
}

/// RFC 3339 `full-time`. A leap second (`:60`) is 23:59 UTC: exact with
/// `Z`/`±00:00`; with another offset any time is accepted (checking the
/// local time against the offset takes 1440 DFA states per use, which every
/// grammar with a `date-time` would pay), an over-approximation.
fn time() -> String {
    let frac = "(?:\\.[0-9]+)?";
    let hour = "(?:[01][0-9]|2[0-3])";
    let offset = format!("[+-]{hour}:[0-5][0-9]");
    let nonzero_offset = "[+-](?:00:(?:0[1-9]|[1-5][0-9])|(?:0[1-9]|1[0-9]|2[0-3]):[0-5][0-9])";
    format!(
        "(?:{hour}:[0-5][0-9]:[0-5][0-9]{frac}(?:[Zz]|{offset})|23:59:60{frac}(?:[Zz]|[+-]00:00)|{hour}:[0-5][0-9]:60{frac}{nonzero_offset})"
    )
}

fn duration() -> String {
    let d = "[0-9]+";
    let time = format!("T(?:{d}H(?:{d}M(?:{d}S)?)?|{d}M(?:{d}S)?|{d}S)");
    let date = format!("(?:{d}D|{d}M(?:{d}D)?|{d}Y(?:{d}M(?:{d}D)?)?)");
    format!("P(?:{date}(?:{time})?|{time}|{d}W)")
}

fn ipv4() -> String {
    let octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
    format!("{octet}(?:\\.{octet}){{3}}")
}

/// RFC 3986 `IPv6address`.
fn ipv6() -> String {
    let h16 = format!("{HEX}{{1,4}}");
    let ls32 = format!("(?:{h16}:{h16}|{})", ipv4());
    let pre = |n: usize| -> String {
        // [ *n( h16 ":" ) h16 ]
        if n == 0 {
            format!("(?:{h16})?")
        } else {
            format!("(?:(?:{h16}:){{0,{n}}}{h16})?")
        }
    };
    let rep = |n: usize| format!("(?:{h16}:){{{n}}}");
    let alts = [
        format!("{}{ls32}", rep(6)),
        format!("::{}{ls32}", rep(5)),
        format!("{}::{}{ls32}", pre(0), rep(4)),
        format!("{}::{}{ls32}", pre(1), rep(3)),
        format!("{}::{}{ls32}", pre(2), rep(2)),
        format!("{}::{h16}:{ls32}", pre(3)),
        format!("{}::{ls32}", pre(4)),
        format!("{}::{h16}", pre(5)),
        format!("{}::", pre(6)),
    ];
    format!("(?:{})", alts.join("|"))
}

fn uuid() -> String {
    format!("{HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}")
}

/// RFC 3986 (`iri = false`) or RFC 3987 (`iri = true`) pieces.
struct Uri {
    unreserved: String,
    pct: String,
    sub: &'static str,
    private: &'static str,
}

impl Uri {
    fn new(iri: bool) -> Uri {
        let ucs = if iri {
            "\\u00A0-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF\\u{10000}-\\u{1FFFD}\\u{20000}-\\u{2FFFD}\\u{30000}-\\u{3FFFD}\\u{40000}-\\u{4FFFD}\\u{50000}-\\u{5FFFD}\\u{60000}-\\u{6FFFD}\\u{70000}-\\u{7FFFD}\\u{80000}-\\u{8FFFD}\\u{90000}-\\u{9FFFD}\\u{A0000}-\\u{AFFFD}\\u{B0000}-\\u{BFFFD}\\u{C0000}-\\u{CFFFD}\\u{D0000}-\\u{DFFFD}\\u{E1000}-\\u{EFFFD}"
        } else {
            ""
        };
        Uri {
            unreserved: format!("A-Za-z0-9\\-._~{ucs}"),
            pct: format!("%{HEX}{HEX}"),
            sub: "!$&'()*+,;=",
            private: if iri { "\\uE000-\\uF8FF\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}" } else { "" },
        }
    }

    fn pchar(&self) -> String {
        format!("(?:[{}{}:@]|{})", self.unreserved, self.sub, self.pct)
    }

    fn authority(&self) -> String {
        let userinfo = format!("(?:[{}{}:]|{})*", self.unreserved, self.sub, self.pct);
        let ipfuture = format!("[Vv]{HEX}+\\.[{}{}:]+", self.unreserved, self.sub);
        let ip_literal = format!("\\[(?:{}|{ipfuture})\\]", ipv6());
        let reg_name = format!("(?:[{}{}]|{})*", self.unreserved, self.sub, self.pct);
        let host = format!("(?:{ip_literal}|{}|{reg_name})", ipv4());
        format!("(?:{userinfo}@)?{host}(?::[0-9]*)?")
    }

    fn query(&self) -> String {
        format!("(?:{}|[/?{}])*", self.pchar(), self.private)
    }

    fn fragment(&self) -> String {
        format!("(?:{}|[/?])*", self.pchar())
    }

    fn absolute(&self) -> String {
        let seg = format!("{}*", self.pchar());
        let seg_nz = format!("{}+", self.pchar());
        let hier = format!("(?://{}(?:/{seg})*|/(?:{seg_nz}(?:/{seg})*)?|{seg_nz}(?:/{seg})*|)", self.authority());
        format!("[A-Za-z][A-Za-z0-9+\\-.]*:{hier}(?:\\?{})?(?:#{})?", self.query(), self.fragment())
    }

    fn relative(&self) -> String {
        let seg = format!("{}*", self.pchar());
        let seg_nz = format!("{}+", self.pchar());
        let seg_nz_nc = format!("(?:[{}{}@]|{})+", self.unreserved, self.sub, self.pct);
        let part = format!("(?://{}(?:/{seg})*|/(?:{seg_nz}(?:/{seg})*)?|{seg_nz_nc}(?:/{seg})*|)", self.authority());
        format!("{part}(?:\\?{})?(?:#{})?", self.query(), self.fragment())
    }
}

fn hostname() -> String {
    let label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    format!("{label}(?:\\.{label})*")
}

fn email() -> String {
    let atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
    let local = format!("(?:{atext}+(?:\\.{atext}+)*|\"(?:[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\x20-\\x7E])*\")");
    let domain = format!("(?:{}|\\[{}\\]|\\[[Ii][Pp][Vv]6:{}\\])", hostname(), ipv4(), ipv6());
    format!("{local}@{domain}")
}

fn json_pointer() -> &'static str {
    "(?:/(?:[^~/]|~[01])*)*"
}

fn uri_template() -> String {
    let pct = format!("%{HEX}{HEX}");
    let ucs = "\\u00A0-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF\\u{10000}-\\u{EFFFD}\\uE000-\\uF8FF\\u{F0000}-\\u{10FFFD}";
    let literal = format!("(?:[\\x21\\x23\\x24\\x26-\\x3B\\x3D\\x3F-\\x5B\\x5D\\x5F\\x61-\\x7A\\x7E{ucs}]|{pct})");
    let varchar = format!("(?:[A-Za-z0-9_]|{pct})");
    let varname = format!("{varchar}(?:\\.?{varchar})*");
    let varspec = format!("{varname}(?::[1-9][0-9]{{0,3}}|\\*)?");
    let expression = format!("\\{{[+#./;?&=,!@|]?{varspec}(?:,{varspec})*\\}}");
    format!("(?:{literal}|{expression})*")
}

/// What an enforced format does not check (reported as a note).
pub(crate) fn format_caveat(name: &str) -> Option<&'static str> {
    match name {
        "hostname" => Some("is checked label by label: the 253-character total and Punycode in `xn--` labels are not"),
        "email" => Some(
            "domain is checked as a hostname: its 253-character total is not, nor the address's 254 (RFC 5321 §4.5.3.1)",
        ),
        "time" | "date-time" => Some("accepts a leap second (`:60`) at any time when the offset is not zero"),
        _ => None,
    }
}

/// Patterns (ECMA search) of which every string that the enforced language
/// of a caveated format accepts but the format rejects matches one: the
/// slack of [`format_caveat`], which an exclusive `oneOf` checks against the
/// other alternatives (see `Ctx::caveat_slack`). Each is a superset, argued here:
/// - `hostname`: the enforced language admits only `[A-Za-z0-9.-]`, and what it
///   wrongly admits is longer than 253 characters or has an `xn--` label;
/// - `email`: the same of its hostname domain, or longer than 254
///   characters, so a wrong one has an `xn--` label or at least 255
///   printable ASCII characters (the whole language is printable ASCII);
/// - `time`, `date-time`: a wrong one has a leap second, `:60`.
pub(crate) fn caveat_slack(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "hostname" => Some(&["^[A-Za-z0-9.-]{254}", "[Xx][Nn]--"]),
        "email" => Some(&["^[\\x20-\\x7E]{255}", "[Xx][Nn]--"]),
        "time" | "date-time" => Some(&[":60"]),
        _ => None,
    }
}

/// The most characters a caveated format admits, when its caveat is that
/// this total is not checked: a `maxLength` at or above it is implied by
/// the format, and unchecked with it (see `Ctx::string`).
pub(crate) fn unchecked_total(name: &str) -> Option<u32> {
    match name {
        "hostname" => Some(253),
        "email" => Some(254),
        _ => None,
    }
}

/// The content language of a known format, or `None` for an annotation-only
/// one. Each is a constant, built once per process: building one (the regex
/// of every JSON encoding of its characters) took 0.2-8 ms (`email` 8 ms,
/// `date-time` 2.4 ms), and a schema paid it at every use of the format (most
/// of the grammar construction of one with four `date-time`s). Only the
/// formats with a language are kept, so the table is as small as the list.
pub(crate) fn format_language(name: &str, path: &str) -> Result<Option<Pattern>> {
    with_format_language(name, path, |p| p.cloned())
}

/// Does the format have a content language ([`format_language`])? Without a
/// copy of it (a large pattern: copying `date-time`'s cost more than the
/// lookup).
pub(crate) fn has_format_language(name: &str, path: &str) -> Result<bool> {
    with_format_language(name, path, |p| p.is_some())
}

fn with_format_language<R>(name: &str, path: &str, read: impl FnOnce(Option<&Pattern>) -> R) -> Result<R> {
    static BUILT: RwLock<Vec<(String, Pattern)>> = RwLock::new(Vec::new());
    // Only ever appended to: a poisoned lock holds a consistent table.
    if let Some((_, p)) = BUILT.read().unwrap_or_else(|e| e.into_inner()).iter().find(|(f, _)| f == name) {
        return Ok(read(Some(p)));
    }
    let built = build_format_language(name, path)?;
    if let Some(p) = &built {
        let mut table = BUILT.write().unwrap_or_else(|e| e.into_inner());
        if !table.iter().any(|(f, _)| f == name) {
            table.push((name.to_string(), p.clone()));
        }
    }
    Ok(read(built.as_ref()))
}

fn build_format_language(name: &str, path: &str) -> Result<Option<Pattern>> {
    let full = |re: &str| -> Result<Option<Pattern>> {
        let parsed = parse_ecma(re, path)?;
        Ok(Some(full_match_language(&parsed, path)?))
    };
    match name {
        "date" => full(&date()),
        "time" => full(&time()),
        "date-time" => {
            // Minimise each half before concatenating: the date has several
            // accepting paths and each would otherwise get a copy of the time.
            let (Some(d), Some(t)) = (full(&date())?, full(&time())?) else { return Ok(None) };
            let sep = full("[Tt]")?.unwrap_or(Pattern::Alt(vec![]));
            Ok(Some(Pattern::Concat(vec![Pattern::And(vec![d]), sep, Pattern::And(vec![t])])))
        }
        "duration" => full(&duration()),
        "ipv4" => full(&ipv4()),
        "ipv6" => full(&ipv6()),
        "uuid" => full(&uuid()),
        "uri" => full(&Uri::new(false).absolute()),
        "iri" => full(&Uri::new(true).absolute()),
        "uri-reference" => {
            let u = Uri::new(false);
            full(&format!("(?:{}|{})", u.absolute(), u.relative()))
        }
        "iri-reference" => {
            let u = Uri::new(true);
            full(&format!("(?:{}|{})", u.absolute(), u.relative()))
        }
        "json-pointer" => full(json_pointer()),
        "relative-json-pointer" => full(&format!("(?:0|[1-9]{DIGIT}*)(?:#|{})", json_pointer())),
        "uri-template" => full(&uri_template()),
        "hostname" => full(&hostname()),
        "email" => full(&email()),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::dfa::TermDfa;

    #[test]
    fn format_dfa_sizes() {
        for name in [
            "date",
            "time",
            "date-time",
            "duration",
            "ipv4",
            "ipv6",
            "uuid",
            "uri",
            "uri-reference",
            "iri",
            "hostname",
            "email",
            "json-pointer",
            "uri-template",
        ] {
            let p = format_language(name, "").unwrap().unwrap();
            // Every format is a terminal of every grammar that uses it: keep them small.
            let d = TermDfa::from_pattern(&p, 1_000_000).unwrap();
            assert!(d.num_states() < 3_000, "{name}: {} states", d.num_states());
        }
    }

    /// The per-process table answers each format with its own language,
    /// whatever the order formats are first asked in (threads included).
    #[test]
    fn kept_languages_are_the_built_ones() {
        let names = ["email", "date", "x-unknown", "date-time", "uri", "date", "email", "ipv6", "time", "regex"];
        std::thread::scope(|s| {
            for offset in 0..3 {
                s.spawn(move || {
                    for name in names.iter().cycle().skip(offset).take(2 * names.len()) {
                        let kept = format_language(name, "").unwrap();
                        assert_eq!(kept, build_format_language(name, "").unwrap(), "{name}");
                        assert_eq!(has_format_language(name, "").unwrap(), kept.is_some(), "{name}");
                    }
                });
            }
        });
        assert_eq!(format_language("x-unknown", "").unwrap(), None);
        assert!(!has_format_language("x-unknown", "").unwrap());
    }

    /// Every caveat has a slack, and every slack pattern is one we compile.
    #[test]
    fn caveats_have_a_slack() {
        for name in ["date", "time", "date-time", "duration", "ipv4", "ipv6", "uuid", "uri", "hostname", "email"] {
            assert_eq!(format_caveat(name).is_some(), caveat_slack(name).is_some(), "{name}");
            for p in caveat_slack(name).unwrap_or_default() {
                let re = parse_ecma(p, "").unwrap();
                super::super::strings::search_language(&re, "").unwrap();
            }
        }
    }
}
