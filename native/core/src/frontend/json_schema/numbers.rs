//! JSON numbers with exact, digit-level bounds.
//!
//! Takes `minimum`/`maximum`/`exclusive*` as exact decimals (the schema's
//! own digits; no float arithmetic anywhere), an integer flag and
//! `multipleOf`; gives the regular language of number texts whose *value*
//! satisfies them.
//!
//! * Unbounded numbers: the full JSON syntax (`-0`, fractions, exponents).
//! * Bounded numbers: plain decimal notation only (`-?int(.digits)?`). With
//!   exponents, "value ≤ bound" compares an exponent's value with a digit
//!   count and is not regular; every value in range still has a plain form.
//!   Bounds at zero (`minimum: 0`) compare signs only, and keep exponents.
//! * Integers: `-?int(.0+)?` (JSON Schema counts `1.0` as an integer; the
//!   exponent forms of integers are not accepted, by the same argument).
//! * `multipleOf`: an explicit remainder automaton (`mod_dfa`) intersected
//!   with the bounds; the caller turns that DFA into right-linear rules,
//!   since a remainder modulo 7 has no small regex.
//!
//! A bound `lo ≤ x` on representations is built by comparing digit strings:
//! fewer integer digits, or equal length and a smaller digit at the first
//! difference, or an equal integer part and a fraction comparison
//! ([`le`], [`ge`]); negative numbers mirror to bounds on the magnitude.

use std::cmp::Ordering;

use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, Hir, Repetition};

use super::error::invalid;
use crate::error::{Error, Result};
use crate::grammar::Pattern;
use crate::lexer::dfa::TermDfa;

/// Digits of a decimal after expanding exponents; larger bounds are refused.
pub(crate) const MAX_DIGITS: usize = 2_000;

/// An exact decimal: sign, integer digits without leading zeros ("0" for
/// zero), fraction digits without trailing zeros. Zero is never negative.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Decimal {
    pub neg: bool,
    pub int: String,
    pub frac: String,
}

impl Decimal {
    pub fn zero() -> Decimal {
        Decimal { neg: false, int: "0".into(), frac: String::new() }
    }

    pub fn is_zero(&self) -> bool {
        self.int == "0" && self.frac.is_empty()
    }

    pub fn is_integer(&self) -> bool {
        self.frac.is_empty()
    }

    /// Parse a JSON number text (`serde_json::Number::to_string()`).
    pub fn parse(text: &str, path: &str) -> Result<Decimal> {
        let bad = || invalid(format!("`{text}` is not a number"), path);
        let (neg, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => {
                let e = &rest[i + 1..];
                let e: i64 = e.strip_prefix('+').unwrap_or(e).parse().map_err(|_| bad())?;
                (&rest[..i], e)
            }
            None => (rest, 0),
        };
        let (ip, fp) = match mantissa.find('.') {
            Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
            None => (mantissa, ""),
        };
        if ip.is_empty() || !ip.bytes().all(|b| b.is_ascii_digit()) || !fp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        // All digits, with the decimal point after `point` of them.
        let digits: String = format!("{ip}{fp}");
        let point = ip.len() as i64 + exp;
        if point.unsigned_abs() as usize > MAX_DIGITS || digits.len() > MAX_DIGITS {
            return Err(Error::limit("json_schema_number_digits", point.unsigned_abs() as usize, MAX_DIGITS)
                .at_path(path.to_string()));
        }
        let (int, frac) = if point <= 0 {
            (String::new(), format!("{}{}", "0".repeat((-point) as usize), digits))
        } else if point as usize >= digits.len() {
            (format!("{}{}", digits, "0".repeat(point as usize - digits.len())), String::new())
        } else {
            (digits[..point as usize].to_string(), digits[point as usize..].to_string())
        };
        let int = int.trim_start_matches('0');
        let int = if int.is_empty() { "0".to_string() } else { int.to_string() };
        let frac = frac.trim_end_matches('0').to_string();
        let mut d = Decimal { neg, int, frac };
        if d.is_zero() {
            d.neg = false;
        }
        Ok(d)
    }

    fn cmp_magnitude(&self, other: &Decimal) -> Ordering {
        self.int
            .len()
            .cmp(&other.int.len())
            .then_with(|| self.int.cmp(&other.int))
            .then_with(|| self.frac.cmp(&other.frac))
    }

    fn negated(&self) -> Decimal {
        let mut d = self.clone();
        if !d.is_zero() {
            d.neg = !d.neg;
        }
        d
    }

    /// The largest integer ≤ self.
    fn floor(&self) -> Decimal {
        if self.frac.is_empty() {
            return self.clone();
        }
        let mut d = Decimal { neg: self.neg, int: self.int.clone(), frac: String::new() };
        if self.neg {
            d.int = add_one(&d.int);
        }
        if d.is_zero() {
            d.neg = false;
        }
        d
    }

    /// The smallest integer ≥ self.
    fn ceil(&self) -> Decimal {
        self.negated().floor().negated()
    }

    /// self + 1 or self - 1, for integers.
    fn step(&self, up: bool) -> Decimal {
        let mut d = self.clone();
        if d.is_zero() {
            d.int = "1".into();
            d.neg = !up;
        } else if d.neg != up {
            d.int = add_one(&d.int);
        } else {
            d.int = sub_one(&d.int);
            if d.int == "0" {
                d.neg = false;
            }
        }
        d
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_magnitude(other),
            (true, true) => other.cmp_magnitude(self),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.neg {
            write!(f, "-")?;
        }
        write!(f, "{}", self.int)?;
        if !self.frac.is_empty() {
            write!(f, ".{}", self.frac)?;
        }
        Ok(())
    }
}

fn add_one(digits: &str) -> String {
    let mut d: Vec<u8> = digits.bytes().collect();
    let mut i = d.len();
    loop {
        if i == 0 {
            d.insert(0, b'1');
            break;
        }
        i -= 1;
        if d[i] == b'9' {
            d[i] = b'0';
        } else {
            d[i] += 1;
            break;
        }
    }
    String::from_utf8(d).unwrap_or_default()
}

fn sub_one(digits: &str) -> String {
    let mut d: Vec<u8> = digits.bytes().collect();
    let mut i = d.len();
    while i > 0 {
        i -= 1;
        if d[i] == b'0' {
            d[i] = b'9';
        } else {
            d[i] -= 1;
            break;
        }
    }
    let s = String::from_utf8(d).unwrap_or_default();
    let t = s.trim_start_matches('0');
    if t.is_empty() {
        "0".into()
    } else {
        t.to_string()
    }
}

/// A bound: value and whether it is exclusive.
pub(crate) type Bound = (Decimal, bool);

/// Everything that constrains a number's value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct NumberSchema {
    pub integer: bool,
    /// The value must not be an integer (`not: {type: integer}`).
    pub fractional: bool,
    /// Integers are written without a decimal point (draft 4, where `1.0`
    /// is not an integer).
    pub no_point: bool,
    /// Integers are written as digits only, though `1.0` is an integer
    /// value (the default; `integer_decimal_point` turns it off).
    pub digits_only: bool,
    pub lower: Option<Bound>,
    pub upper: Option<Bound>,
    /// All `multipleOf` values (after `allOf`, each must hold).
    pub multiple_of: Vec<Decimal>,
    /// The value is a multiple of none of these (the complement of `multipleOf`).
    pub not_multiple_of: Vec<Decimal>,
    /// Values excluded (the complement of `const`/`enum`).
    pub excluded: Vec<Decimal>,
}

impl NumberSchema {
    /// Tighten with another schema's constraints (intersection).
    pub fn intersect(&self, other: &NumberSchema) -> NumberSchema {
        let lower = tighter(&self.lower, &other.lower, true);
        let upper = tighter(&self.upper, &other.upper, false);
        NumberSchema {
            integer: self.integer || other.integer,
            fractional: self.fractional || other.fractional,
            no_point: self.no_point || other.no_point,
            digits_only: self.digits_only || other.digits_only,
            lower,
            upper,
            multiple_of: union(&self.multiple_of, &other.multiple_of),
            not_multiple_of: union(&self.not_multiple_of, &other.not_multiple_of),
            excluded: union(&self.excluded, &other.excluded),
        }
    }

    /// Exactly the value `d`.
    pub fn exactly(d: &Decimal) -> NumberSchema {
        NumberSchema { lower: Some((d.clone(), false)), upper: Some((d.clone(), false)), ..NumberSchema::default() }
    }

    /// No value satisfies the bounds (multipleOf aside: 0 is a multiple of everything,
    /// but it may be out of range, so that is only decided by the automaton).
    pub fn is_empty(&self) -> bool {
        if self.integer && self.fractional {
            return true;
        }
        if self.integer {
            let lo = self.lower.as_ref().map(|(d, x)| if *x && d.is_integer() { d.step(true) } else { d.ceil() });
            let hi = self.upper.as_ref().map(|(d, x)| if *x && d.is_integer() { d.step(false) } else { d.floor() });
            return matches!((lo, hi), (Some(l), Some(h)) if l > h);
        }
        match (&self.lower, &self.upper) {
            (Some((l, lx)), Some((h, hx))) => match l.cmp(h) {
                Ordering::Greater => true,
                Ordering::Equal => *lx || *hx,
                Ordering::Less => false,
            },
            _ => false,
        }
    }

    /// Does `value` satisfy every constraint?
    pub fn admits(&self, value: &Decimal) -> bool {
        if (self.integer && !value.is_integer()) || (self.fractional && value.is_integer()) {
            return false;
        }
        if let Some((l, x)) = &self.lower {
            if value < l || (*x && value == l) {
                return false;
            }
        }
        if let Some((h, x)) = &self.upper {
            if value > h || (*x && value == h) {
                return false;
            }
        }
        self.multiple_of.iter().all(|m| is_multiple(value, m))
            && !self.not_multiple_of.iter().any(|m| is_multiple(value, m))
            && !self.excluded.contains(value)
    }

    /// Exponent notation is allowed: no bound, no exclusion, no fraction
    /// requirement (each of those is decided on plain decimal texts).
    pub fn is_unbounded(&self) -> bool {
        self.lower.is_none()
            && self.upper.is_none()
            && !self.fractional
            && self.excluded.is_empty()
            && self.not_multiple_of.is_empty()
    }
}

fn union(a: &[Decimal], b: &[Decimal]) -> Vec<Decimal> {
    let mut out = a.to_vec();
    for d in b {
        if !out.contains(d) {
            out.push(d.clone());
        }
    }
    out
}

fn tighter(a: &Option<Bound>, b: &Option<Bound>, lower: bool) -> Option<Bound> {
    match (a, b) {
        (None, x) | (x, None) => x.clone(),
        (Some((da, xa)), Some((db, xb))) => Some(match da.cmp(db) {
            Ordering::Equal => (da.clone(), *xa || *xb),
            Ordering::Less => {
                if lower {
                    (db.clone(), *xb)
                } else {
                    (da.clone(), *xa)
                }
            }
            Ordering::Greater => {
                if lower {
                    (da.clone(), *xa)
                } else {
                    (db.clone(), *xb)
                }
            }
        }),
    }
}

/// `value / m` is an integer (exact, on digit strings).
fn is_multiple(value: &Decimal, m: &Decimal) -> bool {
    let Some((dm, s)) = scaled(m) else { return false };
    // value · 10^s must be an integer divisible by dm.
    if value.frac.len() > s {
        return false;
    }
    let mut digits = value.int.clone();
    digits.push_str(&value.frac);
    digits.push_str(&"0".repeat(s - value.frac.len()));
    let mut r: u128 = 0;
    for b in digits.bytes() {
        r = (r * 10 + (b - b'0') as u128) % dm as u128;
    }
    r == 0
}

/// `m = d / 10^s` with `d` a positive integer that fits u64.
fn scaled(m: &Decimal) -> Option<(u64, usize)> {
    let s = m.frac.len();
    let digits = format!("{}{}", m.int, m.frac);
    let d: u64 = digits.trim_start_matches('0').parse().ok()?;
    (d > 0 && !m.neg).then_some((d, s))
}

// ---- patterns -------------------------------------------------------------------------

fn lit(s: &str) -> Hir {
    Hir::literal(s.as_bytes().to_vec().into_boxed_slice())
}

fn digit(a: u8, b: u8) -> Hir {
    Hir::class(Class::Bytes(ClassBytes::new([ClassBytesRange::new(b'0' + a, b'0' + b)])))
}

fn digits(min: u32, max: Option<u32>) -> Hir {
    Hir::repetition(Repetition { min, max, greedy: true, sub: Box::new(digit(0, 9)) })
}

fn opt(h: Hir) -> Hir {
    Hir::repetition(Repetition { min: 0, max: Some(1), greedy: true, sub: Box::new(h) })
}

fn seq(parts: Vec<Hir>) -> Hir {
    Hir::concat(parts)
}

fn alt(parts: Vec<Hir>) -> Hir {
    Hir::alternation(parts)
}

/// `0|[1-9][0-9]*`
fn int_syntax() -> Hir {
    alt(vec![lit("0"), seq(vec![digit(1, 9), digits(0, None)])])
}

/// `(\.[0-9]+)?`
fn frac_syntax() -> Hir {
    opt(seq(vec![lit("."), digits(1, None)]))
}

/// The full JSON number syntax.
pub(crate) fn json_number() -> Hir {
    seq(vec![opt(lit("-")), unsigned_number()])
}

/// A JSON number without its sign.
fn unsigned_number() -> Hir {
    seq(vec![int_syntax(), frac_syntax(), exponent_syntax()])
}

/// `([eE][+-]?[0-9]+)?`
fn exponent_syntax() -> Hir {
    opt(seq(vec![
        Hir::class(Class::Bytes(ClassBytes::new([ClassBytesRange::new(b'E', b'E'), ClassBytesRange::new(b'e', b'e')]))),
        opt(Hir::class(Class::Bytes(ClassBytes::new([
            ClassBytesRange::new(b'+', b'+'),
            ClassBytesRange::new(b'-', b'-'),
        ])))),
        digits(1, None),
    ]))
}

/// `0+`
fn zeros() -> Hir {
    Hir::repetition(Repetition { min: 1, max: None, greedy: true, sub: Box::new(lit("0")) })
}

/// `-?(0|[1-9][0-9]*)(\.0+)?`: JSON Schema integers in plain notation
/// (without the `.0+` when `no_point`).
fn integer_shape(no_point: bool) -> Hir {
    if no_point {
        return seq(vec![opt(lit("-")), int_syntax()]);
    }
    seq(vec![opt(lit("-")), int_syntax(), opt(seq(vec![lit("."), zeros()]))])
}

fn digit_of(s: &str, i: usize) -> u8 {
    s.as_bytes()[i] - b'0'
}

/// Non-negative plain decimals `x` with `x ≤ b` (`x < b` if strict).
fn le(b: &Decimal, strict: bool) -> Hir {
    let big = &b.int;
    let n = big.len();
    let mut whole = Vec::new(); // integer parts strictly below b's, any fraction
    if n >= 2 {
        whole.push(lit("0"));
        whole.push(seq(vec![digit(1, 9), digits(0, Some(n as u32 - 2))]));
    }
    for i in 0..n {
        let d = digit_of(big, i);
        let first = if i == 0 && n > 1 { 1 } else { 0 };
        if d > first {
            whole.push(seq(vec![
                lit(&big[..i]),
                digit(first, d - 1),
                digits(n as u32 - i as u32 - 1, Some(n as u32 - i as u32 - 1)),
            ]));
        }
    }
    let mut out = Vec::new();
    if !whole.is_empty() {
        out.push(seq(vec![alt(whole), frac_syntax()]));
    }
    // Integer part equal to b's: compare fractions.
    let f = &b.frac;
    let mut fracs = Vec::new(); // fraction digit strings (non-empty) that qualify
    for i in 0..f.len() {
        let d = digit_of(f, i);
        if d > 0 {
            fracs.push(seq(vec![lit(&f[..i]), digit(0, d - 1), digits(0, None)]));
        }
        if i > 0 {
            fracs.push(lit(&f[..i])); // a proper prefix: strictly smaller
        }
    }
    if !strict {
        // Equal value: f followed by zeros (or just zeros when f is empty).
        if f.is_empty() {
            fracs.push(Hir::repetition(Repetition { min: 1, max: None, greedy: true, sub: Box::new(lit("0")) }));
        } else {
            fracs.push(seq(vec![
                lit(f),
                Hir::repetition(Repetition { min: 0, max: None, greedy: true, sub: Box::new(lit("0")) }),
            ]));
        }
    }
    let mut eq = Vec::new();
    if !strict || !f.is_empty() {
        eq.push(Hir::empty()); // no fraction: value = int part ≤ b
    }
    if !fracs.is_empty() {
        eq.push(seq(vec![lit("."), alt(fracs)]));
    }
    if !eq.is_empty() {
        out.push(seq(vec![lit(big), alt(eq)]));
    }
    alt(out)
}

/// Non-negative plain decimals `x` with `x ≥ a` (`x > a` if strict).
fn ge(a: &Decimal, strict: bool) -> Hir {
    let small = &a.int;
    let n = small.len();
    let mut whole = vec![seq(vec![digit(1, 9), digits(n as u32, None)])]; // more digits
    for i in 0..n {
        let d = digit_of(small, i);
        if d < 9 {
            whole.push(seq(vec![
                lit(&small[..i]),
                digit(d + 1, 9),
                digits(n as u32 - i as u32 - 1, Some(n as u32 - i as u32 - 1)),
            ]));
        }
    }
    let mut out = vec![seq(vec![alt(whole), frac_syntax()])];
    let f = &a.frac;
    let zeros = |min| Hir::repetition(Repetition { min, max: None, greedy: true, sub: Box::new(lit("0")) });
    let mut fracs = Vec::new();
    for i in 0..f.len() {
        let d = digit_of(f, i);
        if d < 9 {
            fracs.push(seq(vec![lit(&f[..i]), digit(d + 1, 9), digits(0, None)]));
        }
    }
    // f followed by something with a non-zero digit: strictly greater.
    fracs.push(seq(vec![lit(f), digits(0, None), digit(1, 9), digits(0, None)]));
    if !strict {
        fracs.push(seq(vec![lit(f), zeros(if f.is_empty() { 1 } else { 0 })]));
    }
    let mut eq = vec![seq(vec![lit("."), alt(fracs)])];
    if !strict && f.is_empty() {
        eq.push(Hir::empty());
    }
    out.push(seq(vec![lit(small), alt(eq)]));
    alt(out)
}

/// Bounds on the magnitude of one sign branch; `None` if the branch is empty.
type MagnitudeBounds = (Option<Bound>, Option<Bound>);

fn branches(s: &NumberSchema) -> (Option<MagnitudeBounds>, Option<MagnitudeBounds>) {
    // Non-negative branch: value = x.
    let pos = (|| {
        let lower = match &s.lower {
            Some((d, x)) if !d.neg && (!d.is_zero() || *x) => Some((d.clone(), *x)),
            _ => None,
        };
        let upper = match &s.upper {
            None => None,
            Some((d, _)) if d.neg => return None,
            Some((d, true)) if d.is_zero() => return None,
            Some((d, x)) => Some((d.clone(), *x)),
        };
        Some((lower, upper))
    })();
    // Negative branch: value = -x.
    let neg = (|| {
        let upper = match &s.lower {
            None => None,
            Some((d, _)) if !d.neg && !d.is_zero() => return None,
            Some((d, true)) if d.is_zero() => return None,
            Some((d, x)) => Some((d.negated(), *x)),
        };
        let lower = match &s.upper {
            None => None,
            Some((d, _)) if !d.neg && !d.is_zero() => None,
            Some((d, x)) if d.is_zero() => x.then(|| (Decimal::zero(), true)),
            Some((d, x)) => Some((d.negated(), *x)),
        };
        Some((lower, upper))
    })();
    (pos, neg)
}

fn magnitude(bounds: &MagnitudeBounds) -> Pattern {
    let mut parts = Vec::new();
    if let Some((d, x)) = &bounds.0 {
        parts.push(Pattern::Hir(ge(d, *x)));
    }
    if let Some((d, x)) = &bounds.1 {
        parts.push(Pattern::Hir(le(d, *x)));
    }
    match parts.len() {
        0 => Pattern::Hir(seq(vec![int_syntax(), frac_syntax()])),
        1 => parts.pop().unwrap_or(Pattern::Alt(vec![])),
        _ => Pattern::And(parts),
    }
}

/// Bounds at zero only (`minimum: 0`, `exclusiveMaximum: 0`: by far the
/// most common bounds) compare signs, which exponent notation does not hide,
/// so such numbers keep the full JSON syntax (`1e-06` is `≥ 0`).
fn sign_bounds_only(s: &NumberSchema) -> bool {
    let at_zero = |b: &Option<Bound>| b.as_ref().is_none_or(|(d, _)| d.is_zero());
    (s.lower.is_some() || s.upper.is_some())
        && at_zero(&s.lower)
        && at_zero(&s.upper)
        && !s.integer
        && !s.fractional
        && s.excluded.is_empty()
        && s.not_multiple_of.is_empty()
}

/// The texts of [`sign_bounds_only`] numbers, exponents included: the value
/// is zero when the mantissa's digits are, and negative when signed and not zero.
fn signed_pattern(s: &NumberSchema) -> Pattern {
    let zero =
        || Pattern::Hir(seq(vec![opt(lit("-")), lit("0"), opt(seq(vec![lit("."), zeros()])), exponent_syntax()]));
    let non_negative = || Pattern::Alt(vec![Pattern::Hir(unsigned_number()), zero()]);
    let non_positive = || Pattern::Alt(vec![Pattern::Hir(seq(vec![lit("-"), unsigned_number()])), zero()]);
    let mut parts = vec![Pattern::Hir(json_number())];
    if let Some((_, exclusive)) = &s.lower {
        parts.push(non_negative());
        if *exclusive {
            parts.push(Pattern::Not(Box::new(zero())));
        }
    }
    if let Some((_, exclusive)) = &s.upper {
        parts.push(non_positive());
        if *exclusive {
            parts.push(Pattern::Not(Box::new(zero())));
        }
    }
    Pattern::And(parts)
}

/// The number texts whose value satisfies `s`, `multipleOf` aside.
pub(crate) fn number_pattern(s: &NumberSchema) -> Pattern {
    let base = if s.is_unbounded() {
        Pattern::Hir(json_number())
    } else if sign_bounds_only(s) {
        signed_pattern(s)
    } else {
        let (pos, neg) = branches(s);
        let mut alts = Vec::new();
        if let Some(b) = pos {
            alts.push(magnitude(&b));
        }
        if let Some(b) = neg {
            alts.push(Pattern::Concat(vec![Pattern::literal(b"-"), magnitude(&b)]));
        }
        if alts.len() == 1 {
            alts.pop().unwrap_or(Pattern::Alt(vec![]))
        } else {
            Pattern::Alt(alts)
        }
    };
    let base = if s.fractional {
        // A non-zero digit after the point (plain notation).
        let shape = seq(vec![opt(lit("-")), int_syntax(), lit("."), digits(0, None), digit(1, 9), digits(0, None)]);
        Pattern::And(vec![base, Pattern::Hir(shape)])
    } else {
        base
    };
    let base = if s.integer {
        let no_point = s.no_point || s.digits_only;
        if s.is_unbounded() {
            Pattern::Hir(integer_shape(no_point))
        } else {
            Pattern::And(vec![base, Pattern::Hir(integer_shape(no_point))])
        }
    } else {
        base
    };
    if s.excluded.is_empty() {
        base
    } else {
        let texts = s.excluded.iter().map(plain_texts).collect();
        Pattern::And(vec![base, Pattern::Not(Box::new(Pattern::Hir(alt(texts))))])
    }
}

/// Every plain-decimal text of the value `d` (`-0`, trailing zeros).
fn plain_texts(d: &Decimal) -> Hir {
    let sign = if d.is_zero() {
        opt(lit("-"))
    } else if d.neg {
        lit("-")
    } else {
        Hir::empty()
    };
    let frac = if d.frac.is_empty() {
        opt(seq(vec![lit("."), zeros()]))
    } else {
        seq(vec![lit("."), lit(&d.frac), opt(zeros())])
    };
    seq(vec![sign, lit(&d.int), frac])
}

/// Byte classes of the remainder automaton: `-`, `.`, ten digits, the rest.
const CLASS_MINUS: u8 = 10;
const CLASS_DOT: u8 = 11;
const CLASS_OTHER: u8 = 12;

/// The plain decimals that are multiples of `m`, as a complete DFA
/// (`TermDfa::product` minimises the intersection with the bounds).
pub(crate) fn mod_dfa(m: &Decimal, max_states: usize, path: &str) -> Result<TermDfa> {
    if m.neg || m.is_zero() {
        return Err(invalid(format!("multipleOf must be a positive number, got {m}"), path));
    }
    let Some((d, s)) = scaled(m) else {
        let digits = m.int.len() + m.frac.len();
        return Err(Error::limit("json_schema_multiple_of_digits", digits, 19).at_path(path.to_string()));
    };
    let dd = d as usize;
    let states = dd.saturating_mul(s + 4).saturating_add(4);
    if dd > 1_000_000 || states > max_states {
        return Err(Error::limit("json_schema_multiple_of_states", states, max_states).at_path(path.to_string()));
    }
    // Layout: 0 dead, 1 start, 2 after '-', 3 zero int part, then blocks of D:
    // INT(r), DOT(r), FRAC(r, c) for c in 1..=s, ZEROS(r).
    let int_base = 4;
    let dot_base = int_base + dd;
    let frac_base = dot_base + dd;
    let zeros_base = frac_base + dd * s;
    let n = zeros_base + dd;
    let k = 13;
    let mut trans = vec![0u32; n * k];
    let mut accept = vec![false; n];
    let pow10 = |e: usize| -> u64 {
        let mut p = 1u64 % d;
        for _ in 0..e {
            p = p * 10 % d;
        }
        p
    };
    let scale_ok = |r: u64, e: usize| (r as u128 * pow10(e) as u128 % d as u128) == 0;
    let set = |trans: &mut Vec<u32>, from: usize, class: u8, to: usize| trans[from * k + class as usize] = to as u32;
    // Start and sign.
    for from in [1usize, 2] {
        set(&mut trans, from, 0, 3);
        for g in 1..=9u8 {
            set(&mut trans, from, g, int_base + (g as u64 % d) as usize);
        }
    }
    set(&mut trans, 1, CLASS_MINUS, 2);
    // "0" integer part.
    accept[3] = true; // 0 is a multiple of everything
    set(&mut trans, 3, CLASS_DOT, dot_base);
    for r in 0..dd {
        let from = int_base + r;
        accept[from] = scale_ok(r as u64, s);
        for g in 0..=9u8 {
            set(&mut trans, from, g, int_base + ((r as u64 * 10 + g as u64) % d) as usize);
        }
        set(&mut trans, from, CLASS_DOT, dot_base + r);
        // After '.', at least one digit.
        let from = dot_base + r;
        for g in 0..=9u8 {
            let to = if s == 0 {
                if g == 0 {
                    zeros_base + r
                } else {
                    0
                }
            } else {
                frac_base + ((r as u64 * 10 + g as u64) % d) as usize * s
            };
            set(&mut trans, from, g, to);
        }
        for c in 1..=s {
            let from = frac_base + r * s + (c - 1);
            accept[from] = scale_ok(r as u64, s - c);
            for g in 0..=9u8 {
                let to = if c < s {
                    frac_base + ((r as u64 * 10 + g as u64) % d) as usize * s + c
                } else if g == 0 {
                    zeros_base + r
                } else {
                    0
                };
                set(&mut trans, from, g, to);
            }
        }
        let from = zeros_base + r;
        accept[from] = r == 0;
        set(&mut trans, from, 0, from);
    }
    let mut classes = [CLASS_OTHER; 256];
    for g in 0..=9u8 {
        classes[(b'0' + g) as usize] = g;
    }
    classes[b'-' as usize] = CLASS_MINUS;
    classes[b'.' as usize] = CLASS_DOT;
    Ok(TermDfa { classes, num_classes: k, trans, accept, start: 1, live: Vec::new(), accepts_later: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        Decimal::parse(s, "").unwrap()
    }

    fn dfa(p: &Pattern) -> TermDfa {
        TermDfa::from_pattern(p, 100_000).unwrap()
    }

    #[test]
    fn parse_normalises() {
        assert_eq!(dec("1.50").to_string(), "1.5");
        assert_eq!(dec("-0.0").to_string(), "0");
        assert_eq!(dec("1e3").to_string(), "1000");
        assert_eq!(dec("12.5e-3").to_string(), "0.0125");
        assert_eq!(dec("-1.5E+1").to_string(), "-15");
        assert!(dec("-2") < dec("-1.5") && dec("0.1") < dec("0.12") && dec("9") < dec("10"));
    }

    /// Every plain decimal with up to 3+2 digits: the pattern agrees with the value test.
    #[test]
    fn bounds_agree_with_values() {
        let mut texts = Vec::new();
        for i in -120i32..=120 {
            texts.push(i.to_string());
            for f in ["0", "5", "25", "00", "50", "05"] {
                let t = if i < 0 { format!("-{}.{f}", -i) } else { format!("{i}.{f}") };
                texts.push(t);
            }
        }
        texts.push("-0".into());
        texts.push("-0.0".into());
        let bounds = ["-100", "-1.5", "-1", "0", "0.5", "1", "1.25", "10", "99.5", "100"];
        for lo in bounds.iter().map(|b| Some(*b)).chain([None]) {
            for hi in bounds.iter().map(|b| Some(*b)).chain([None]) {
                for (lx, hx, integer) in
                    [(false, false, false), (true, false, false), (false, true, true), (true, true, false)]
                {
                    let s = NumberSchema {
                        integer,
                        fractional: false,
                        no_point: false,
                        lower: lo.map(|b| (dec(b), lx)),
                        upper: hi.map(|b| (dec(b), hx)),
                        excluded: vec![dec("1"), dec("-1.5")],
                        ..NumberSchema::default()
                    };
                    let d = dfa(&number_pattern(&s));
                    let mut any = false;
                    for t in &texts {
                        let expect = s.admits(&dec(t));
                        any |= expect;
                        assert_eq!(d.matches(t.as_bytes()), expect, "{t} in {s:?}");
                    }
                    if s.is_empty() {
                        assert!(!any, "{s:?} is not empty");
                    }
                }
            }
        }
    }

    #[test]
    fn multiple_of_automaton() {
        for m in ["3", "0.5", "2.5", "0.01", "7", "10"] {
            let md = mod_dfa(&dec(m), 100_000, "").unwrap();
            let any = dfa(&number_pattern(&NumberSchema::default()));
            let p = TermDfa::product(&[md, any], 100_000).unwrap();
            for t in
                ["0", "3", "6", "7", "-3", "0.5", "1.5", "2.5", "10", "7.50", "0.01", "0.03", "14", "21", "1.0", "5"]
            {
                let expect = is_multiple(&dec(t), &dec(m));
                assert_eq!(p.matches(t.as_bytes()), expect, "{t} multipleOf {m}");
            }
        }
    }
}
