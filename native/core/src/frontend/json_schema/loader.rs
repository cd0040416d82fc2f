//! Schema loading: draft detection, base URIs, `$id`/`$anchor` indexing and
//! `$ref` resolution within one document.
//!
//! Takes the root schema; gives a [`Document`] that maps every `$ref` to the
//! JSON pointer (from the root) of its target. Resolution follows RFC 3986
//! (relative references against the base URI in scope, which `$id` changes)
//! and JSON Pointer (RFC 6901, percent-decoded fragments, `~0`/`~1`). Only
//! identifiers in schema positions count (an `$id` inside `enum` or an
//! unknown keyword is data). References to other documents are refused
//! (`remote_ref`): nothing is fetched. Drafts 4 to 2020-12 are recognised
//! from `$schema`; the differences that matter are `id` vs `$id`, `$id: "#a"`
//! anchors (draft ≤ 7) vs `$anchor`, and whether `$ref` hides its siblings
//! (draft ≤ 7).

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::error::{child_path, invalid, schema_error};
use crate::error::Result;

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Draft {
    Draft4,
    Draft6,
    Draft7,
    Draft2019,
    Draft2020,
}

impl Draft {
    fn from_schema_uri(uri: &str) -> Option<Draft> {
        Some(if uri.contains("draft-04") {
            Draft::Draft4
        } else if uri.contains("draft-06") {
            Draft::Draft6
        } else if uri.contains("draft-07") {
            Draft::Draft7
        } else if uri.contains("2019-09") {
            Draft::Draft2019
        } else if uri.contains("2020-12") {
            Draft::Draft2020
        } else {
            return None;
        })
    }

    /// In drafts up to 7, `$ref` makes its siblings ignored.
    pub fn ref_overrides_siblings(self) -> bool {
        self <= Draft::Draft7
    }
}

/// Keywords whose value is a schema.
pub(crate) const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "items",
];
/// Keywords whose value is an object of schemas.
const SCHEMA_MAP_KEYWORDS: &[&str] =
    &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];
/// Keywords whose value is an array of schemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

const DEFAULT_BASE: &str = "json-schema:///root.json";

pub(crate) struct Document<'a> {
    pub root: &'a Value,
    pub draft: Draft,
    /// Absolute URI (no fragment) of each resource → its pointer.
    resources: FxHashMap<String, String>,
    /// (resource URI, anchor name) → pointer.
    anchors: FxHashMap<(String, String), String>,
    /// Base URI in scope at each indexed schema.
    bases: FxHashMap<String, String>,
    /// How many schemas declare each `$dynamicAnchor` name.
    dynamic_anchors: FxHashMap<String, usize>,
}

impl<'a> Document<'a> {
    pub fn load(root: &'a Value) -> Result<Document<'a>> {
        let draft =
            root.get("$schema").and_then(Value::as_str).and_then(Draft::from_schema_uri).unwrap_or(Draft::Draft2020);
        let mut doc = Document {
            root,
            draft,
            resources: FxHashMap::default(),
            anchors: FxHashMap::default(),
            bases: FxHashMap::default(),
            dynamic_anchors: FxHashMap::default(),
        };
        doc.resources.insert(DEFAULT_BASE.to_string(), String::new());
        doc.index(root, "", DEFAULT_BASE, 0)?;
        Ok(doc)
    }

    fn index(&mut self, value: &Value, pointer: &str, base: &str, depth: usize) -> Result<()> {
        if depth > 500 {
            return Err(crate::error::Error::limit("json_schema_depth", depth, 500).at_path(pointer.to_string()));
        }
        let Value::Object(map) = value else { return Ok(()) };
        let mut base = base.to_string();
        let hides = self.draft.ref_overrides_siblings() && map.contains_key("$ref");
        let id_key = if self.draft == Draft::Draft4 { "id" } else { "$id" };
        if let (Some(Value::String(id)), false) = (map.get(id_key), hides) {
            let (doc, frag) = split_fragment(id);
            if !doc.is_empty() {
                base = resolve_uri(&base, doc);
                self.resources.entry(base.clone()).or_insert_with(|| pointer.to_string());
            }
            if let Some(frag) = frag {
                if !frag.is_empty() && self.draft <= Draft::Draft7 {
                    self.anchors.entry((base.clone(), frag.to_string())).or_insert_with(|| pointer.to_string());
                }
            }
        }
        if let Some(Value::String(a)) = map.get("$dynamicAnchor") {
            *self.dynamic_anchors.entry(a.clone()).or_default() += 1;
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(a)) = map.get(key) {
                self.anchors.entry((base.clone(), a.clone())).or_insert_with(|| pointer.to_string());
            }
        }
        self.bases.insert(pointer.to_string(), base.clone());
        for (key, sub) in map {
            let here = child_path(pointer, key);
            if SCHEMA_KEYWORDS.contains(&key.as_str()) && !sub.is_array() {
                self.index(sub, &here, &base, depth + 1)?;
            } else if SCHEMA_MAP_KEYWORDS.contains(&key.as_str()) {
                if let Value::Object(m) = sub {
                    for (k, s) in m {
                        self.index(s, &child_path(&here, k), &base, depth + 1)?;
                    }
                }
            } else if SCHEMA_ARRAY_KEYWORDS.contains(&key.as_str()) {
                if let Value::Array(items) = sub {
                    for (i, s) in items.iter().enumerate() {
                        self.index(s, &child_path(&here, &i.to_string()), &base, depth + 1)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The base URI in scope at `pointer` (that of the nearest indexed schema).
    fn base_at(&self, pointer: &str) -> String {
        let mut p = pointer;
        loop {
            if let Some(b) = self.bases.get(p) {
                return b.clone();
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return DEFAULT_BASE.to_string(),
            }
        }
    }

    /// The value at a pointer from the root.
    pub fn at(&self, pointer: &str) -> Option<&'a Value> {
        self.root.pointer(pointer)
    }

    /// Resolve `reference` (the `$ref` of the schema at `pointer`) to a pointer.
    pub fn resolve(&self, reference: &str, pointer: &str) -> Result<String> {
        let ref_path = child_path(pointer, "$ref");
        let target = resolve_uri(&self.base_at(pointer), reference);
        let (doc, frag) = split_fragment(&target);
        let Some(resource) = self.resources.get(doc) else {
            return Err(schema_error(
                "remote_ref",
                format!(
                    "$ref {reference:?} points to another document ({doc}); only references within the schema are supported (inline the referenced schema into `$defs`)"
                ),
                &ref_path,
            ));
        };
        let frag = percent_decode(frag.unwrap_or(""))
            .ok_or_else(|| invalid(format!("$ref {reference:?} has a malformed percent-encoding"), &ref_path))?;
        let result = if frag.is_empty() {
            resource.clone()
        } else if frag.starts_with('/') {
            format!("{resource}{frag}")
        } else {
            match self.anchors.get(&(doc.to_string(), frag.clone())) {
                Some(p) => p.clone(),
                None => {
                    return Err(schema_error(
                        "unknown_ref",
                        format!("$ref {reference:?}: no schema declares the anchor {frag:?}"),
                        &ref_path,
                    ))
                }
            }
        };
        if self.root.pointer(&result).is_none() {
            return Err(schema_error(
                "unknown_ref",
                format!("$ref {reference:?} points to {result:?}, which does not exist in the schema"),
                &ref_path,
            ));
        }
        Ok(result)
    }
}

impl Document<'_> {
    /// A `$dynamicRef` target when it is static: the fragment names no
    /// dynamic anchor, or only one schema in the document declares it (so
    /// every dynamic scope finds that one). `None` when it could vary.
    pub fn resolve_dynamic(&self, reference: &str, pointer: &str) -> Result<Option<String>> {
        let target = self.resolve(reference, pointer)?;
        let (_, frag) = split_fragment(reference);
        let name = frag.unwrap_or("");
        let declared = self.dynamic_anchors.get(name).copied().unwrap_or(0);
        let target_is_dynamic =
            self.root.pointer(&target).and_then(|v| v.get("$dynamicAnchor")).and_then(Value::as_str) == Some(name);
        if name.is_empty() || name.starts_with('/') || !target_is_dynamic || declared <= 1 {
            Ok(Some(target))
        } else {
            Ok(None)
        }
    }
}

fn split_fragment(uri: &str) -> (&str, Option<&str>) {
    match uri.find('#') {
        Some(i) => (&uri[..i], Some(&uri[i + 1..])),
        None => (uri, None),
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A URI reference split per RFC 3986 appendix B.
struct UriParts<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

fn split_uri(s: &str) -> UriParts<'_> {
    let (rest, fragment) = match s.find('#') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (rest, query) = match rest.find('?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (scheme, rest) = match rest.find(':') {
        Some(i)
            if i > 0
                && rest[..i].chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && rest[..i].chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest[..i].contains('/') =>
        {
            (Some(&rest[..i]), &rest[i + 1..])
        }
        _ => (None, rest),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(r) => match r.find('/') {
            Some(i) => (Some(&r[..i]), &r[i..]),
            None => (Some(r), ""),
        },
        None => (None, rest),
    };
    UriParts { scheme, authority, path, query, fragment }
}

fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segments: Vec<&str> = path.split('/').collect();
    let n = segments.len();
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == n;
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 || (out.len() == 1 && !absolute) {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let mut joined = out.join("/");
    if absolute && !joined.starts_with('/') {
        joined.insert(0, '/');
    }
    joined
}

/// RFC 3986 §5.2 reference resolution.
pub(crate) fn resolve_uri(base: &str, reference: &str) -> String {
    let r = split_uri(reference);
    let b = split_uri(base);
    let (scheme, authority, path, query);
    if r.scheme.is_some() {
        scheme = r.scheme;
        authority = r.authority;
        path = remove_dot_segments(r.path);
        query = r.query;
    } else {
        scheme = b.scheme;
        if r.authority.is_some() {
            authority = r.authority;
            path = remove_dot_segments(r.path);
            query = r.query;
        } else {
            authority = b.authority;
            if r.path.is_empty() {
                path = b.path.to_string();
                query = r.query.or(b.query);
            } else {
                if r.path.starts_with('/') {
                    path = remove_dot_segments(r.path);
                } else {
                    let merged = if b.authority.is_some() && b.path.is_empty() {
                        format!("/{}", r.path)
                    } else {
                        match b.path.rfind('/') {
                            Some(i) => format!("{}{}", &b.path[..=i], r.path),
                            None => r.path.to_string(),
                        }
                    };
                    path = remove_dot_segments(&merged);
                }
                query = r.query;
            }
        }
    }
    let mut out = String::new();
    if let Some(s) = scheme {
        out.push_str(s);
        out.push(':');
    }
    if let Some(a) = authority {
        out.push_str("//");
        out.push_str(a);
    }
    out.push_str(&path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = r.fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3986_examples() {
        let base = "http://a/b/c/d;p?q";
        for (r, want) in [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("../g", "http://a/b/g"),
            ("../../g", "http://a/g"),
            ("", "http://a/b/c/d;p?q"),
            ("urn:x:y", "urn:x:y"),
        ] {
            assert_eq!(resolve_uri(base, r), want, "{r}");
        }
    }
}
