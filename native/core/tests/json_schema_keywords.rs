//! JSON Schema front end, keyword by keyword: each case is a schema, texts
//! that must be accepted and texts that must be rejected (complete-string
//! membership through the public commit path), or an expected error code.

mod json_schema_util;

use glrmask_core::frontend::json_schema::{json_object_grammar, json_schema_grammar, JsonSchemaOptions, Whitespace};
use json_schema_util::Checker;
use serde_json::{json, Value};

fn check_with(schema: Value, options: &JsonSchemaOptions, accept: &[&str], reject: &[&str]) {
    let c = Checker::new(&schema, options).unwrap_or_else(|e| panic!("{schema}: {e:?}"));
    for a in accept {
        assert!(c.accepts(a), "{schema} should accept {a:?}");
        assert_eq!(c.walk(a.as_bytes()), Ok(()), "{schema}: byte walk of {a:?}");
    }
    for r in reject {
        assert!(!c.accepts(r), "{schema} should reject {r:?}");
    }
}

fn check(schema: Value, accept: &[&str], reject: &[&str]) {
    check_with(schema, &JsonSchemaOptions::default(), accept, reject)
}

fn error_code(schema: Value, options: &JsonSchemaOptions) -> (&'static str, Option<String>) {
    match json_schema_grammar(&schema, options) {
        Ok(_) => panic!("{schema} should be refused"),
        Err(e) => (e.code(), e.path().map(str::to_string)),
    }
}

#[test]
fn types() {
    check(json!({"type": "null"}), &["null"], &["nul", "0", "\"null\""]);
    check(json!({"type": "boolean"}), &["true", "false"], &["null", "1"]);
    check(json!({"type": ["string", "null"]}), &["null", "\"a\""], &["1", "true"]);
    check(json!({"type": "string"}), &[r#""""#, r#""a\"b""#, r#""\u00e9\n""#, "\"é😀\""], &["\"a", "a", "\"\u{1}\""]);
    check(json!(true), &["1", "{\"a\":[null]}", "\"x\""], &["", "{", "nul"]);
}

#[test]
fn string_escapes_and_lengths() {
    let s = json!({"type": "string", "minLength": 2, "maxLength": 3});
    // Lengths count code points; an escape is one code point, a surrogate pair too.
    check(
        s,
        &[r#""ab""#, r#""abc""#, r#""\n\t""#, r#""\ud83d\ude00x""#, "\"😀x\"", r#""\u0041\u00e9""#],
        &[r#""a""#, r#""abcd""#, r#""\ud83d""#, r#""\ud83dx""#, r#""\q""#],
    );
    check(json!({"type": "string", "maxLength": 0}), &[r#""""#], &[r#""a""#]);
}

#[test]
fn numbers_unbounded() {
    check(
        json!({"type": "number"}),
        &["0", "-0", "1.5", "-2.5E-3", "1e10", "10", "0.0"],
        &["01", "1.", ".5", "+1", "1e", "--1", "NaN"],
    );
    // Integers are digits only by default; the spec's reading (`1.0` is an integer) is an option.
    check(
        json!({"type": "integer"}),
        &["0", "-12", "123456789012345678901234567890"],
        &["1.0", "-1.0", "1.5", "1e2", "01"],
    );
    let spec = JsonSchemaOptions { integer_decimal_point: true, ..JsonSchemaOptions::default() };
    check_with(json!({"type": "integer"}), &spec, &["0", "1.0", "-1.00"], &["1.5", "1e2"]);
    // `const`/`enum` compare values: 1.0 is the integer 1, written `1`.
    check(json!({"type": "integer", "enum": [1.0, 2.5]}), &["1"], &["2.5", "2"]);
}

#[test]
fn numbers_bounded() {
    check(
        json!({"type": "number", "minimum": -1.5, "exclusiveMaximum": 10}),
        &["-1.5", "-1.25", "0", "-0", "9.999", "9", "-1.50"],
        &["-1.51", "10", "10.0", "11", "-2"],
    );
    check(
        json!({"type": "integer", "exclusiveMinimum": 0, "maximum": 100}),
        &["1", "100", "50"],
        &["0", "-0", "101", "0.5", "100.5", "100.0"],
    );
    // Draft 4: boolean exclusive flags.
    check(
        json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "minimum": 1, "exclusiveMinimum": true}),
        &["1.0001", "2"],
        &["1", "0.5"],
    );
    check(json!({"type": "number", "maximum": 1e3}), &["1000", "999.5"], &["1000.1", "1001"]);
}

/// Bounds at zero compare signs only: exponent texts stay (JSONSchemaBench
/// instances write `1e-06` for a `minimum: 0` number).
#[test]
fn numbers_bounded_at_zero_keep_exponents() {
    check(
        json!({"type": "number", "minimum": 0}),
        &["1e-06", "0", "-0", "0e5", "-0.00E+3", "1E+3", "2.5e-7", "0.5"],
        &["-1e-06", "-2", "-0.1e0", "1e", "01"],
    );
    check(json!({"type": "number", "exclusiveMinimum": 0}), &["1e-06", "3"], &["0", "-0", "0e3", "-0.0", "-1e2"]);
    check(json!({"type": "number", "maximum": 0}), &["-1e5", "0", "-0", "0.0e-1"], &["1e-9", "2"]);
    check(json!({"type": "number", "minimum": 0, "maximum": 0}), &["0", "-0.0", "0E7"], &["1e-300", "-1e-300"]);
    // Any other bound keeps plain notation, as documented.
    check(json!({"type": "number", "minimum": 1}), &["1", "20.5"], &["2e0", "0.5"]);
    check(json!({"not": {"type": "number", "minimum": 0}}), &["-1e-06", "-3", "\"a\""], &["1e-06", "0e1", "5"]);
}

#[test]
fn multiple_of() {
    check(json!({"type": "integer", "multipleOf": 7}), &["0", "7", "-14", "700"], &["1", "15", "7.5"]);
    check(
        json!({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1}),
        &["0", "0.25", "1", "0.5", "1.00"],
        &["0.001", "1.01", "-0.01"],
    );
    check(json!({"type": "number", "multipleOf": 2.5}), &["0", "2.5", "5", "-7.5", "10.0"], &["1", "2.4"]);
}

#[test]
fn enum_and_const() {
    check(
        json!({"enum": ["a", 1, null, [1, "x"], {"k": true}]}),
        &[r#""a""#, "1", "1.0", "null", r#"[1,"x"]"#, r#"{"k":true}"#, r#""\u0061""#],
        &[r#""b""#, "2", "[1]", r#"{"k":false}"#, r#"{}"#],
    );
    check(json!({"const": "x\"y"}), &[r#""x\"y""#, r#""x\u0022y""#], &[r#""xy""#]);
    check(json!({"type": "string", "enum": ["a", 1]}), &[r#""a""#], &["1"]);
    assert_eq!(
        error_code(json!({"type": "integer", "enum": ["a"]}), &JsonSchemaOptions::default()).0,
        "unsatisfiable_schema"
    );
}

#[test]
fn objects_in_schema_order() {
    let s = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
        "required": ["b"],
        "additionalProperties": false
    });
    check(
        s,
        &[r#"{"b":"x"}"#, r#"{"a":1,"b":"x"}"#, r#"{"a":1,"b":"x","c":true}"#, r#"{"b":"x","c":false}"#],
        &["{}", r#"{"a":1}"#, r#"{"b":"x","a":1}"#, r#"{"b":"x","d":1}"#, r#"{"b":"x",}"#, r#"{"b":1}"#],
    );
}

#[test]
fn additional_properties() {
    let s = json!({"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}});
    check(
        s,
        &[r#"{}"#, r#"{"a":1}"#, r#"{"a":1,"x":"y"}"#, r#"{"x":"y","z":"w"}"#],
        &[r#"{"a":"s"}"#, r#"{"x":1}"#, r#"{"\u0061":"s"}"#],
    );
    // Spec default: anything else is allowed.
    check(json!({"properties": {"a": {"type": "integer"}}}), &[r#"{"a":1,"b":[{}]}"#], &[r#"{"a":true}"#]);
    let strict = JsonSchemaOptions { strict: true, ..JsonSchemaOptions::default() };
    check_with(
        json!({"properties": {"a": {"type": "integer"}}}),
        &strict,
        &[r#"{"a":1}"#, "{}"],
        &[r#"{"a":1,"b":2}"#],
    );
}

#[test]
fn pattern_properties_and_property_names() {
    let s = json!({
        "properties": {"id": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "string"}, "num$": {"type": "number"}},
        "additionalProperties": false
    });
    check(
        s,
        &[r#"{"id":1}"#, r#"{"id":1,"x-a":"s"}"#, r#"{"bnum":2}"#],
        &[r#"{"other":1}"#, r#"{"x-a":1}"#, r#"{"x-num":"s"}"#, r#"{"x-num":1}"#],
    );
    // More overlapping patterns than subsets can be listed: only the regions
    // a key can fall in (here `abc` matches a, b, c and ab; `xd` only d).
    let overlapping = json!({
        "patternProperties": {
            "a": {"type": "integer"}, "b": {"minimum": 2}, "c": {"maximum": 9}, "d": {"type": "string"},
            "ab": {"multipleOf": 2}, "^x": {"not": {"type": "null"}}
        },
        "additionalProperties": false
    });
    check(
        overlapping,
        &[r#"{"abc":4}"#, r#"{"a":1,"cb":2,"xd":"s","c":"t"}"#, r#"{"xa":0}"#],
        &[r#"{"abc":3}"#, r#"{"abc":10}"#, r#"{"ad":1}"#, r#"{"e":1}"#, r#"{"xd":null}"#, r#"{"b":1}"#],
    );
    check(
        json!({"propertyNames": {"maxLength": 2}, "additionalProperties": {"type": "integer"}}),
        &[r#"{"ab":1}"#, r#"{}"#],
        &[r#"{"abc":1}"#, r#"{"a":"s"}"#],
    );
}

#[test]
fn min_max_properties() {
    let s = json!({"properties": {"a": {}, "b": {}}, "minProperties": 1, "maxProperties": 2});
    check(s, &[r#"{"a":1}"#, r#"{"a":1,"b":2}"#, r#"{"x":1,"y":2}"#], &["{}", r#"{"a":1,"b":2,"c":3}"#]);
}

#[test]
fn any_order() {
    let opts = JsonSchemaOptions { any_order: true, ..JsonSchemaOptions::default() };
    let s = json!({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": false});
    check_with(s, &opts, &[r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#], &[r#"{"a":1}"#, r#"{"a":1,"a":1,"b":2}"#]);
}

#[test]
fn arrays() {
    check(
        json!({"type": "array", "items": {"type": "integer"}}),
        &["[]", "[1]", "[1,2,3]"],
        &["[1,]", "[\"a\"]", "[,]"],
    );
    check(
        json!({"items": {"type": "integer"}, "minItems": 2, "maxItems": 3}),
        &["[1,2]", "[1,2,3]"],
        &["[1]", "[1,2,3,4]"],
    );
    check(
        json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}),
        &["[]", r#"["a"]"#, r#"["a",1]"#],
        &[r#"["a",1,2]"#, "[1]"],
    );
    check(
        json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "minItems": 2}),
        &[r#"["a",1]"#, r#"["a",1,2]"#],
        &[r#"["a"]"#, r#"["a","b"]"#],
    );
    // Draft 7 tuple form.
    check(
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}], "additionalItems": {"type": "string"}}),
        &["[1]", r#"[1,"a"]"#],
        &[r#"["a"]"#, "[1,2]"],
    );
}

#[test]
fn any_of_all_of_one_of() {
    // `allOf` of patternProperties and another branch's additionalProperties:
    // the pattern's keys are all governed by the other branch's
    // additionalProperties, and get both schemas.
    let both = json!({"allOf": [
        {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
        {"patternProperties": {"^x": {"minimum": 5}}}
    ]});
    check_with(
        both,
        &JsonSchemaOptions { any_order: true, ..JsonSchemaOptions::default() },
        &[r#"{"a":"s"}"#, r#"{"x1":6}"#, r#"{"b":1,"x":7}"#],
        &[r#"{"x1":3}"#, r#"{"x1":"s"}"#, r#"{"b":"s"}"#],
    );
    // ... but not when that branch lists a key the pattern matches (x0 is
    // governed by its own property there, x1 by additionalProperties).
    let listed = json!({"allOf": [
        {"properties": {"x0": {}}, "additionalProperties": false},
        {"patternProperties": {"^x": {"type": "integer"}}}
    ]});
    assert_eq!(error_code(listed, &JsonSchemaOptions::default()).0, "unsupported_keyword");
    check(json!({"anyOf": [{"type": "integer"}, {"minLength": 2}]}), &["1", "1.5", r#""ab""#], &[r#""a""#]);
    check(json!({"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 2}]}), &["1", r#""ab""#], &["1.5"]);
    check(
        json!({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"properties": {"a": {"minimum": 5}}}]}),
        &[r#"{"a":5}"#, r#"{"a":7,"b":1}"#],
        &[r#"{"a":4}"#, "{}"],
    );
    check(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}), &[r#""s""#, "3"], &["true"]);
    // Overlapping alternatives: exactly one must hold (each ∧ the others' complements).
    let overlap = json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]});
    check(overlap, &["1", "2.5", "-3", "true", r#""s""#], &["2", "3", "1.5"]);
    // Overlapping closed objects: the complement of `additionalProperties` is "some other member".
    let closed = json!({"oneOf": [
        {"type": "object", "properties": {"a": {}}, "additionalProperties": false},
        {"type": "object", "required": ["a"]},
    ]});
    let any_order = JsonSchemaOptions { any_order: true, ..JsonSchemaOptions::default() };
    check_with(closed, &any_order, &["{}", r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#], &[r#"{"a":1}"#, r#"{"b":1}"#]);
    // No value is valid against exactly one alternative: strict refuses, lenient reads anyOf.
    let all_required =
        json!({"type": "object", "required": ["a", "b"], "oneOf": [{"required": ["a"]}, {"required": ["b"]}]});
    assert_eq!(error_code(all_required.clone(), &JsonSchemaOptions::default()).0, "unsatisfiable_schema");
    let lenient = JsonSchemaOptions { lenient: true, ..JsonSchemaOptions::default() };
    let (_, notes) = json_schema_grammar(&all_required, &lenient).unwrap();
    assert!(notes.iter().any(|n| n.contains("exactly one alternative")), "{notes:?}");
    // Overlapping arrays: the complement of `items` is "some item outside it".
    let arrays = json!({"oneOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "array", "maxItems": 1}]});
    check(arrays, &[r#"["a"]"#, "[1,2]"], &["[]", "[1]", r#"[1,"a"]"#, r#"["a","b"]"#]);
    // Overlapping, with `contains`: its complement is "every item is outside".
    let overlap =
        json!({"oneOf": [{"type": "array", "contains": {"type": "integer"}}, {"type": "array", "maxItems": 1}]});
    check(overlap, &["[1,2]", "[]", r#"["a"]"#], &["[1]", r#"["a","b"]"#]);
    // One alternative has no complement here (a count past the largest counted).
    let overlap = json!({"oneOf": [
        {"type": "array", "contains": {"type": "integer"}, "maxContains": 256},
        {"type": "array", "maxItems": 1}
    ]});
    assert_eq!(error_code(overlap.clone(), &JsonSchemaOptions::default()).0, "unsupported_keyword");
    let lenient = JsonSchemaOptions { lenient: true, ..JsonSchemaOptions::default() };
    let (_, notes) = json_schema_grammar(&overlap, &lenient).unwrap();
    assert!(notes.iter().any(|n| n.contains("oneOf")), "{notes:?}");
    // Disjoint through definitions (JSONSchemaBench WashingtonPost): the
    // intersection of two `$ref`s is a definition of its own, never because
    // `b` is closed and `a` requires a member `b` does not have. Read as
    // anyOf, no complement needed (here none would be expressed: `contains`).
    let refs = json!({
        "$defs": {
            "a": {"type": "object", "required": ["kind", "x"],
                  "properties": {"kind": {"type": "string"}, "x": {"type": "array", "contains": {"const": 1}}}},
            "b": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "b"}, "y": {}},
                  "additionalProperties": false},
        },
        "oneOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}],
    });
    check_with(
        refs,
        &any_order,
        &[r#"{"kind":"b"}"#, r#"{"kind":"b","y":2}"#, r#"{"kind":"b","x":[1]}"#, r#"{"x":[0,1],"kind":"z"}"#],
        &[r#"{"kind":"z"}"#, r#"{"kind":"b","x":[0]}"#, r#"{"kind":"b","z":1}"#],
    );
    // `not: {not: Y}` is Y, though a complement of Y's complement is not expressed.
    let double = json!({"type": "object", "not": {"not": {"additionalProperties": {"type": "boolean"}}, "title": "t"}});
    check(double, &["{}", r#"{"a":true}"#], &[r#"{"a":1}"#, "[]"]);
    // A definition first built while proving a oneOf disjoint keeps its notes
    // (JSONSchemaBench vs-nesting: its uniqueItems went unreported).
    let disjoint = json!({
        "$defs": {"list": {"type": "array", "uniqueItems": true}},
        "oneOf": [{"$ref": "#/$defs/list"}, {"enum": ["*"]}],
    });
    let (_, notes) = json_schema_grammar(&disjoint, &lenient).unwrap();
    assert!(notes.iter().any(|n| n.contains("uniqueItems")), "{notes:?}");
    // The rest of the schema is over-approximated (a uniqueItems met while
    // intersecting it with an alternative); the alternatives themselves are
    // exact, so exclusivity still is.
    let beside = json!({
        "$defs": {"list": {"type": "array", "uniqueItems": true}},
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/list"}},
        "oneOf": [{"required": ["a"], "properties": {"x": {"maxItems": 2}}}, {"required": ["b"]}],
    });
    let (_, notes) = json_schema_grammar(&beside, &lenient).unwrap();
    assert!(!notes.iter().any(|n| n.contains("oneOf")), "{notes:?}");
    let lenient_any_order = JsonSchemaOptions { any_order: true, ..lenient };
    check_with(
        beside,
        &lenient_any_order,
        &[r#"{"a":1}"#, r#"{"b":1}"#, r#"{"x":[1,2,3],"a":1,"b":2}"#],
        &[r#"{"a":1,"b":2}"#, "{}"],
    );
}

#[test]
fn refs() {
    let s = json!({
        "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}}, "required": ["v"], "additionalProperties": false}},
        "$ref": "#/$defs/node"
    });
    check(s, &[r#"{"v":1}"#, r#"{"v":1,"next":{"v":2,"next":{"v":3}}}"#], &[r#"{"v":1,"next":{}}"#]);
    check(
        json!({"definitions": {"a~b/c": {"type": "integer"}}, "properties": {"x": {"$ref": "#/definitions/a~0b~1c"}}}),
        &[r#"{"x":1}"#],
        &[r#"{"x":"1"}"#],
    );
    check(
        json!({"$id": "http://example.com/root.json", "$defs": {"A": {"$id": "a.json", "type": "integer"}}, "$ref": "a.json"}),
        &["1"],
        &["\"x\""],
    );
    check(json!({"$defs": {"A": {"$anchor": "foo", "type": "null"}}, "$ref": "#foo"}), &["null"], &["1"]);
    let (code, path) =
        error_code(json!({"properties": {"a": {"$ref": "#/$defs/missing"}}}), &JsonSchemaOptions::default());
    assert_eq!((code, path.as_deref()), ("unknown_ref", Some("/properties/a/$ref")));
    let (code, _) = error_code(json!({"$ref": "http://example.com/other.json"}), &JsonSchemaOptions::default());
    assert_eq!(code, "remote_ref");
}

#[test]
fn patterns() {
    check(json!({"pattern": "^[a-z]+$"}), &[r#""abc""#, "1"], &[r#""""#, r#""aB""#]);
    // Unanchored: a search.
    check(json!({"type": "string", "pattern": "\\d{3}"}), &[r#""ab123cd""#, r#""123""#], &[r#""12""#]);
    check(json!({"type": "string", "pattern": "^a|b$"}), &[r#""ax""#, r#""xb""#], &[r#""xa""#, r#""bx""#]);
    check(json!({"type": "string", "pattern": "^\\S+$"}), &[r#""a.b!c""#], &[r#""a b""#, r#""a\tb""#]);
    check(json!({"type": "string", "pattern": "^\\p{Lu}"}), &[r#""Éa""#], &[r#""éa""#]);
    // A pattern that finds an empty match in every string constrains nothing
    // (so a long length beside it is a counted run); anchored at both ends it does.
    let everything = json!({"type": "string", "pattern": "([0-9a-z]+)?", "maxLength": 700});
    check(everything, &[r#""!?""#, r#""""#], &["1"]);
    check(json!({"type": "string", "pattern": "^a*"}), &[r#""ba""#], &[]);
    check(json!({"type": "string", "pattern": "^a*$"}), &[r#""aa""#, r#""""#], &[r#""ba""#]);
    check(json!({"type": "string", "pattern": "x|^a*$"}), &[r#""bxb""#, r#""aa""#], &[r#""ba""#]);
    // `$` and `^` inside groups and repetitions (Github_hard---o65011's path type).
    let path_type = json!({"type": "string", "pattern": "^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$"});
    check(path_type, &[r#""""#, r#""/a/..""#, r#""ab/c-d/""#, r#""..""#], &[r#""a.b""#, r#""A""#, r#""a//b.""#]);
    check(json!({"type": "string", "pattern": "(a$|b)c"}), &[r#""xbc""#], &[r#""ac""#, r#""xa""#]);
    check(json!({"type": "string", "pattern": "(^a|b)+c"}), &[r#""abbc""#, r#""xbc""#], &[r#""xac""#]);
    let (code, path) = error_code(json!({"properties": {"p": {"pattern": "(?=a)"}}}), &JsonSchemaOptions::default());
    assert_eq!((code, path.as_deref()), ("unsupported_pattern", Some("/properties/p/pattern")));
    assert_eq!(error_code(json!({"pattern": "(a"}), &JsonSchemaOptions::default()).0, "bad_pattern");
}

#[test]
fn formats() {
    check(
        json!({"type": "string", "format": "date"}),
        &[r#""2024-02-29""#, r#""2023-12-31""#],
        &[r#""2023-02-29""#, r#""2023-13-01""#, r#""2023-1-01""#],
    );
    check(
        json!({"type": "string", "format": "date-time"}),
        &[r#""1963-06-19T08:30:06.283185Z""#, r#""1998-12-31T23:59:60Z""#, r#""1998-12-31T15:59:60.123-08:00""#],
        &[r#""1998-12-31T22:59:60Z""#, r#""1990-12-31T15:59:59-24:00""#],
    );
    check(json!({"format": "ipv4"}), &[r#""192.168.0.1""#], &[r#""256.1.1.1""#, r#""01.1.1.1""#]);
    check(json!({"format": "ipv6"}), &[r#""::1""#, r#""1:2:3:4:5:6:7:8""#, r#""::ffff:1.2.3.4""#], &[r#""1:::2""#]);
    check(
        json!({"format": "uuid"}),
        &[r#""2EB8AA08-AA98-11EA-B4AA-73B441D16380""#],
        &[r#""2eb8aa08-aa98-11ea-b4aa-73b441d1638""#],
    );
    check(json!({"format": "email"}), &[r#""joe.bloggs@example.com""#], &[r#""te..st@example.com""#, r#""@x.com""#]);
    check(json!({"format": "uri"}), &[r#""http://foo.bar/?baz=qux#quux""#], &[r#""//foo.bar""#, r#""abc""#]);
    check(json!({"format": "duration"}), &[r#""P4DT12H30M5S""#, r#""P1W""#], &[r#""PT1D""#, r#""P""#]);
    let (_, notes) = json_schema_grammar(&json!({"format": "something-new"}), &JsonSchemaOptions::default()).unwrap();
    assert!(notes.iter().any(|n| n.contains("something-new")));
}

/// An exclusive `oneOf` over formats whose only approximation is a caveat
/// whose slack no other alternative reaches: exact up to that caveat.
#[test]
fn one_of_with_caveated_formats() {
    let host = json!({"type": "string", "oneOf": [{"format": "hostname"}, {"format": "ipv4"}, {"format": "ipv6"}]});
    // An IPv4 address is a hostname too (labels may be digits): valid against two.
    check(host.clone(), &[r#""example.com""#, r#""::1""#, r#""xn--bcher-kva.example""#], &[r#""1.2.3.4""#, r#""a:b""#]);
    let (_, notes) = json_schema_grammar(&host, &JsonSchemaOptions::default()).unwrap();
    assert!(notes.iter().any(|n| n.contains("hostname")), "the caveat stays noted: {notes:?}");
    check(
        json!({"oneOf": [{"type": "string", "format": "email"}, {"type": "string", "format": "hostname"}]}),
        &[r#""a@b.c""#, r#""b.c""#],
        &[r#""@b.c""#],
    );
    // The caveat's slack meets the other alternative: a long label-valid
    // string, or an `xn--` label, may be valid against both or one only.
    for other in [json!({"type": "string", "maxLength": 300}), json!({"type": "string", "pattern": "^xn--"})] {
        let schema = json!({"oneOf": [{"type": "string", "format": "hostname"}, other]});
        assert_eq!(error_code(schema, &JsonSchemaOptions::default()), ("unsupported_keyword", Some("/oneOf".into())));
    }
    check(
        json!({"oneOf": [{"type": "string", "format": "hostname"}, {"type": "string", "maxLength": 200, "pattern": "^[0-9.]+$"}]}),
        &[r#""a.b""#],
        &[r#""1.2""#],
    );
}

/// A `maxLength` at or above the most a caveated format admits is implied
/// by the format, unchecked with the format's total (its caveat): it compiles
/// in strict mode with a note, where a shorter one past the lexer's count is refused.
#[test]
fn caveated_formats_imply_long_max_lengths() {
    for (format, max) in [("email", 1024), ("email", 254), ("hostname", 253)] {
        let schema = json!({"type": "string", "format": format, "maxLength": max});
        check(
            schema.clone(),
            &[r#""a@b.example""#, r#""b.example""#][usize::from(format == "hostname")..][..1],
            &[r#""""#],
        );
        let (_, notes) = json_schema_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
        assert!(notes.iter().any(|n| n.contains("implied by format")), "{notes:?}");
    }
    let shorter = json!({"type": "string", "format": "email", "maxLength": 253});
    assert_eq!(error_code(shorter, &JsonSchemaOptions::default()).0, "limit_exceeded");
}

/// Variants of a tagged union (a required key whose `const`s differ) are
/// disjoint without intersecting them: two large objects would spend the
/// work budget on a proof the tags give at once.
#[test]
fn tagged_union_variants_are_disjoint_at_a_glance() {
    let wide = |tag: &str| {
        let mut props = serde_json::Map::new();
        props.insert("kind".into(), json!({"const": tag}));
        for i in 0..40 {
            props.insert(
                format!("p{i}"),
                json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "pattern": "^x+$"}}, "b": {"type": "integer", "minimum": i}}}),
            );
        }
        json!({"type": "object", "properties": props, "required": ["kind"]})
    };
    let variants = [wide("a"), wide("b"), wide("c")];
    // The least work (in steps of 100) that building the variants takes, as `anyOf`.
    let work = |max_work| JsonSchemaOptions { max_work, ..JsonSchemaOptions::default() };
    let any_of = json!({ "anyOf": variants });
    let least = (1..).map(|k| 100 * k).find(|&w| json_schema_grammar(&any_of, &work(w)).is_ok()).unwrap();
    let schema = json!({ "oneOf": variants });
    check_with(schema, &work(least), &[r#"{"kind":"b","p3":{"b":3}}"#], &[r#"{"kind":"d"}"#, r#"{"p1":{}}"#]);
}

/// Many dependencies on one discriminator (mongodb-atlas-search-index-definition:
/// 17 keys, each allowed for some values of `type`) are built together, one
/// alternative per class of values: one by one, they distribute into an
/// alternative per subset of keys and spend the work budget.
#[test]
fn dependencies_on_one_discriminator_are_built_together() {
    let kinds = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let mut properties = serde_json::Map::new();
    let mut deps = serde_json::Map::new();
    properties.insert("type".into(), json!({"enum": kinds}));
    for i in 0..16 {
        let key = format!("k{i}");
        properties.insert(key.clone(), json!({"type": "integer"}));
        let allowed = [kinds[i % 8], kinds[(i * 3 + 1) % 8]];
        deps.insert(key, json!({"properties": {"type": {"enum": allowed}}}));
    }
    let schema =
        json!({"type": "object", "properties": properties, "additionalProperties": false, "dependencies": deps});
    let options = JsonSchemaOptions { max_work: 20_000, ..JsonSchemaOptions::default() };
    check_with(
        schema,
        &options,
        &[
            r#"{}"#,
            r#"{"type":"a","k0":1,"k8":2}"#,
            r#"{"k0":1,"k1":2,"k2":3}"#,
            r#"{"type":"b","k0":1}"#,
            r#"{"type":"e","k1":1}"#,
        ],
        &[
            r#"{"type":"a","k1":1}"#,
            r#"{"type":"d","k1":1}"#,
            r#"{"type":"c","k0":1}"#,
            r#"{"type":"a","k0":1,"k2":1}"#,
        ],
    );
}

/// `uniqueItems` over items that take at most 4 values (booleans, a small
/// `enum`): finitely many arrays have no repeat, and they are enforced exactly.
#[test]
fn unique_items_over_a_tiny_domain() {
    check(
        json!({"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": true}),
        &["[]", r#"["a"]"#, r#"["b","a","c"]"#, r#"["c","b"]"#],
        &[r#"["a","a"]"#, r#"["a","b","a"]"#, r#"["d"]"#, r#"["a","b","c","a"]"#],
    );
    check(
        json!({"type": "array", "items": {"type": "boolean"}, "uniqueItems": true, "minItems": 1}),
        &["[true]", "[false,true]"],
        &["[]", "[true,true]", "[false,true,false]"],
    );
    // A tuple: the prefix and the rest take values from one small domain.
    check(
        json!({"type": "array", "prefixItems": [{"const": 1}], "items": {"enum": [1, 2, null]}, "uniqueItems": true}),
        &["[1]", "[1,2]", "[1,null,2]"],
        &["[1,1]", "[2]", "[1,2,2]"],
    );
    let five = json!({"type": "array", "items": {"enum": ["a", "b", "c", "d", "e"]}, "uniqueItems": true});
    assert_eq!(error_code(five, &JsonSchemaOptions::default()), ("unsupported_keyword", Some("/uniqueItems".into())));
    assert_eq!(
        error_code(json!({"uniqueItems": true}), &JsonSchemaOptions::default()),
        ("unsupported_keyword", Some("/uniqueItems".into()))
    );
}

#[test]
fn unsupported_keywords() {
    for (schema, keyword) in [
        (json!({"type": "array", "uniqueItems": true}), "/uniqueItems"),
        (json!({"not": {"type": "array", "contains": {"type": "integer"}, "maxContains": 256}}), "/not"),
        (json!({"if": {"contains": {"type": "string"}, "maxContains": 256}, "then": {"minItems": 2}}), "/if"),
        (json!({"type": "array", "contains": {"type": "string"}, "maxContains": 300}), "/maxContains"),
    ] {
        let (code, path) = error_code(schema.clone(), &JsonSchemaOptions::default());
        assert_eq!((code, path.as_deref()), ("unsupported_keyword", Some(keyword)), "{schema}");
        let lenient = JsonSchemaOptions { lenient: true, ..JsonSchemaOptions::default() };
        let (_, notes) = json_schema_grammar(&schema, &lenient).unwrap();
        assert!(notes.iter().any(|n| n.contains(&keyword[1..])), "{notes:?}");
    }
    // The complement of an over-approximation would reject valid values: lenient ignores both.
    let approximated = json!({"not": {"type": "array", "maxItems": 3, "uniqueItems": true}});
    let lenient = JsonSchemaOptions { lenient: true, ..JsonSchemaOptions::default() };
    let (_, notes) = json_schema_grammar(&approximated, &lenient).unwrap();
    assert!(
        notes.iter().any(|n| n.starts_with("not at #/not: ignored (its schema is itself over-approximated")),
        "{notes:?}"
    );
    // `not` of whole types is exact.
    check(json!({"not": {"type": ["string", "object"]}}), &["1", "null", "[]"], &[r#""s""#, "{}"]);
}

#[test]
fn complements() {
    let any_order = JsonSchemaOptions { any_order: true, ..JsonSchemaOptions::default() };
    // Keywords of one type pass every other type, so their complement is that type only.
    check(json!({"not": {"minimum": 3}}), &["2", "-1", "2.5"], &["3", "4", r#""s""#, "null", "[]"]);
    check(json!({"type": "integer", "not": {"multipleOf": 3}}), &["1", "2", "4", "-5"], &["3", "0", "-6", "1.5"]);
    check(json!({"not": {"const": 1}}), &["2", "1.5", "-0", r#""1""#, "null"], &["1", "1.0", "1.00"]);
    check(
        json!({"type": "string", "not": {"enum": ["a", "b"]}}),
        &[r#""c""#, r#""ab""#, r#""""#],
        &[r#""a""#, r#""\u0061""#, r#""b""#],
    );
    check(
        json!({"type": "string", "not": {"pattern": "^a"}}),
        &[r#""b""#, r#""""#, r#""ba""#],
        &[r#""a""#, r#""abc""#, r#""\u0061x""#],
    );
    check(json!({"type": "string", "not": {"maxLength": 2}}), &[r#""abc""#], &[r#""ab""#, r#""""#]);
    check_with(
        json!({"type": "object", "not": {"required": ["a"]}}),
        &any_order,
        &["{}", r#"{"b":1}"#],
        &[r#"{"a":1}"#, r#"{"b":1,"a":2}"#],
    );
    check_with(
        json!({"type": "object", "not": {"properties": {"a": {"type": "string"}}}}),
        &any_order,
        &[r#"{"a":1}"#, r#"{"b":1,"a":null}"#],
        &["{}", r#"{"a":"s"}"#, r#"{"b":1}"#],
    );
    // Some item: `contains`, and the complement of `items` (past a prefix too).
    check(
        json!({"type": "array", "contains": {"type": "string"}, "maxItems": 3}),
        &[r#"["a"]"#, r#"[1,"a"]"#, r#"[1,2,"a"]"#, r#"["a",1,2]"#],
        &["[]", "[1]", "[1,2,3]", r#"[1,2,3,"a"]"#],
    );
    check(json!({"type": "array", "contains": {"type": "string"}, "minContains": 0}), &["[]", "[1]"], &["{}"]);
    // Counted: between minContains and maxContains items match.
    check(
        json!({"type": "array", "contains": {"type": "string"}, "minContains": 2, "maxContains": 3}),
        &[r#"["a","b"]"#, r#"[1,"a",2,"b","c"]"#, r#"["a","b","c",4]"#],
        &["[]", r#"["a"]"#, r#"[1,"a",2]"#, r#"["a","b","c","d"]"#, r#"[1,"a","b","c","d",2]"#],
    );
    check(
        json!({"type": "array", "contains": {"type": "string"}, "maxContains": 1, "minContains": 0}),
        &["[]", "[1,2]", r#"[1,"a",2]"#],
        &[r#"["a","b"]"#, r#"["a",1,"b"]"#],
    );
    check(
        json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "contains": {"type": "string"}, "minContains": 2}),
        &[],
        &[r#"["a"]"#, r#"["a",1]"#],
    );
    check(
        json!({"contains": {"const": 1}, "minContains": 2, "maxItems": 3}),
        &["[1,1]", "[1,2,1]", "[1,1,1]"],
        &["[1,2]", "[1,1,1,1]", "[2,1,2,1]"],
    );
    check(
        json!({"type": "array", "not": {"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}}),
        &[r#"["a","b"]"#, "[1]", r#"["a",1,null]"#],
        &["[]", r#"["a"]"#, r#"["a",1,2]"#],
    );
    // Other members: additionalProperties, patternProperties, propertyNames.
    check_with(
        json!({"type": "object", "not": {"properties": {"a": {}}, "additionalProperties": false}}),
        &any_order,
        &[r#"{"b":1}"#, r#"{"a":1,"b":1}"#, r#"{"b":1,"a":1}"#],
        &["{}", r#"{"a":1}"#],
    );
    check_with(
        json!({"type": "object", "properties": {"x0": {"type": "string"}}, "not": {"patternProperties": {"^x": {"type": "integer"}}}}),
        &any_order,
        &[r#"{"x1":"s"}"#, r#"{"x0":"s"}"#, r#"{"y":1,"x2":null}"#],
        &["{}", r#"{"x1":1}"#, r#"{"y":"s"}"#],
    );
    check_with(
        json!({"type": "object", "not": {"propertyNames": {"maxLength": 2}}}),
        &any_order,
        &[r#"{"abc":1}"#, r#"{"a":1,"abc":2}"#],
        &["{}", r#"{"ab":1}"#],
    );
    check(
        json!({"type": "array", "not": {"items": false, "prefixItems": [{"type": "integer"}]}}),
        &[r#"["x"]"#, "[1,2]"],
        &["[]", "[1]"],
    );
    check(
        json!({"not": {"enum": [[1, "a"], {"k": null}]}}),
        &["[1]", r#"[1,"b"]"#, r#"{"k":0}"#, "{}"],
        &[r#"[1,"a"]"#, r#"{"k":null}"#],
    );
    // A complement of a complement: "some item/member is like W" fails when
    // all of them are outside W (`not` around an `allOf` keeps the inner `not`).
    let twice = |inner: Value, beside: Value| json!({"not": {"allOf": [{"not": inner}, beside]}});
    check(
        json!({"allOf": [{"type": "array"}, twice(json!({"items": {"type": "integer"}}), json!({"maxItems": 2}))]}),
        &["[]", "[1,2]", r#"["a","b","c"]"#],
        &[r#"["a"]"#, r#"[1,"a"]"#],
    );
    check(
        json!({"type": "array", "not": {"allOf": [{"contains": {"type": "string"}}, {"maxItems": 2}]}}),
        &["[]", "[1,2]", r#"[1,"a",2]"#],
        &[r#"["a"]"#, r#"[1,"a"]"#],
    );
    check(
        json!({"type": "array", "not": {"contains": {"type": "string"}, "minContains": 2, "maxContains": 3}}),
        &["[]", r#"["a"]"#, r#"["a","b","c","d"]"#, r#"[1,"a"]"#],
        &[r#"["a","b"]"#, r#"[1,"a","b","c"]"#],
    );
    let objects = [
        (
            json!({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}),
            vec!["{}", r#"{"a":"s"}"#, r#"{"b":1}"#, r#"{"a":"s","b":"t"}"#],
            vec![r#"{"b":"s"}"#],
        ),
        (
            // The pattern applies to the listed key too.
            json!({"properties": {"x0": {}}, "patternProperties": {"^x": {"type": "integer"}}}),
            vec!["{}", r#"{"x1":1}"#, r#"{"y":"s"}"#, r#"{"x1":"s","y":1}"#],
            vec![r#"{"x1":"s"}"#, r#"{"x0":"s"}"#],
        ),
        (
            json!({"propertyNames": {"maxLength": 2}}),
            vec!["{}", r#"{"ab":1}"#, r#"{"abc":1,"d":2}"#],
            vec![r#"{"abc":1}"#],
        ),
    ];
    for (inner, accept, reject) in objects {
        let schema = json!({"allOf": [{"type": "object"}, twice(inner, json!({"maxProperties": 1}))]});
        check_with(schema, &any_order, &accept, &reject);
    }
    // Exclusive `oneOf` needs the complement of an alternative with `contains`.
    check(
        json!({"oneOf": [{"type": "array", "contains": {"type": "string"}}, {"type": "array", "maxItems": 1}]}),
        &[r#"[1,"a"]"#, "[]", "[1]"],
        &[r#"["a"]"#, "[1,2]"],
    );
    // Recursion closes through the complement of a definition.
    check_with(
        json!({
            "$defs": {"t": {"type": "object", "properties": {"n": {"$ref": "#/$defs/t"}}, "maxProperties": 1}},
            "not": {"$ref": "#/$defs/t"},
        }),
        &any_order,
        &["1", r#"{"a":1,"b":2}"#, r#"{"n":1}"#, r#"{"n":{"n":5}}"#],
        &["{}", r#"{"n":{}}"#, r#"{"a":1}"#, r#"{"n":{"n":{}}}"#],
    );
}

#[test]
fn conditionals_and_dependencies() {
    let any_order = JsonSchemaOptions { any_order: true, ..JsonSchemaOptions::default() };
    check_with(
        json!({
            "if": {"properties": {"k": {"const": "x"}}, "required": ["k"]},
            "then": {"required": ["x"]},
            "else": {"required": ["y"]},
        }),
        &any_order,
        &[r#"{"k":"x","x":1}"#, r#"{"k":"z","y":1}"#, r#"{"y":1}"#],
        &[r#"{"k":"x","y":1}"#, r#"{"k":"z","x":1}"#, "{}"],
    );
    // Before draft 7, `if`/`then`/`else` are unknown keywords: ignored
    // (JSONSchemaBench Github_medium---o3385 is draft-04 and uses them).
    check_with(
        json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "if": {"properties": {"k": {"enum": ["x"]}}, "required": ["k"]},
            "then": {"required": ["x"]},
        }),
        &any_order,
        &[r#"{"k":"x"}"#, r#"{"k":"x","x":1}"#],
        &[],
    );
    check_with(
        json!({"dependentRequired": {"a": ["b"]}}),
        &any_order,
        &["{}", r#"{"b":1}"#, r#"{"a":1,"b":2}"#, "1"],
        &[r#"{"a":1}"#],
    );
    check_with(
        json!({"dependencies": {"a": {"required": ["c"]}, "b": ["a"]}}),
        &any_order,
        &[r#"{"a":1,"c":2}"#, r#"{"c":2}"#, r#"{"b":0,"a":1,"c":2}"#],
        &[r#"{"a":1}"#, r#"{"b":0}"#, r#"{"b":0,"a":1}"#],
    );
}

#[test]
fn malformed_schemas() {
    assert_eq!(
        error_code(json!({"type": "strin"}), &JsonSchemaOptions::default()),
        ("invalid_schema", Some("/type".into()))
    );
    assert_eq!(error_code(json!({"minLength": -1}), &JsonSchemaOptions::default()).0, "invalid_schema");
    assert_eq!(error_code(json!(3), &JsonSchemaOptions::default()).0, "invalid_schema");
    assert_eq!(error_code(json!({"properties": []}), &JsonSchemaOptions::default()).0, "invalid_schema");
}

#[test]
fn whitespace_policies() {
    let s = json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"], "additionalProperties": false});
    // Default compact: no whitespace anywhere.
    check(s.clone(), &[r#"{"a":[1,2]}"#], &[r#"{"a": [1,2]}"#, r#"{ "a":[1,2]}"#]);
    let flexible = JsonSchemaOptions { whitespace: Whitespace::Flexible { max: 2 }, ..JsonSchemaOptions::default() };
    check_with(
        s.clone(),
        &flexible,
        &[r#"{ "a" : [ 1 , 2 ] }"#, "{\n\"a\":[1,\t2]}", " {\"a\":[]}\n", "\r\n{\"a\" :[ ]}  "],
        &[r#"{   "a":[1,2]}"#, r#"{"a":[1,2]}   "#, "   {\"a\":[]}", r#"{"a":[1 2]}"#, r#"{"a":[1,2 3]}"#],
    );
    // Flexible whitespace is an ignored terminal whose runs are maximal, so
    // the parser never sees it (the bound above holds across what would be
    // two ignored lexemes) ...
    let (g, _) = json_schema_grammar(&s, &flexible).unwrap();
    assert!(g.terminals.iter().any(|t| t.ignored && t.maximal), "{g}");
    // ... except where a number is split into one-byte terminals
    // (`multipleOf`): whitespace is placed in the rules, same language.
    let m = json!({"type": "array", "items": {"type": "integer", "multipleOf": 7}});
    let (g, _) = json_schema_grammar(&m, &flexible).unwrap();
    assert!(g.terminals.iter().all(|t| !t.ignored), "{g}");
    check_with(m, &flexible, &["[ 14 , 21 ]", " [7]\n", "[\n]"], &["[1 4]", "[ 14   ]", "   [7]", "[15]"]);
    // A separator that begins with whitespace cannot follow a maximal run:
    // whitespace is placed in the rules then, as a longest-match gap.
    let spaced = JsonSchemaOptions { separators: Some((" , ".into(), " : ".into())), ..flexible.clone() };
    let (g, _) = json_schema_grammar(&s, &spaced).unwrap();
    assert!(g.terminals.iter().all(|t| !t.ignored), "{g}");
    check_with(s.clone(), &spaced, &[r#"{"a" : [1 , 2]}"#, r#"{ "a" : [1 ,  2] }"#], &[r#"{"a":[1,2]}"#]);
    let seps = JsonSchemaOptions { separators: Some((", ".into(), ": ".into())), ..JsonSchemaOptions::default() };
    check_with(s.clone(), &seps, &[r#"{"a": [1, 2]}"#], &[r#"{"a":[1,2]}"#]);
    let indent = JsonSchemaOptions { indent: Some(2), ..JsonSchemaOptions::default() };
    check_with(s.clone(), &indent, &["{\n  \"a\": [\n    1,\n    2\n  ]\n}", "{\n  \"a\": []\n}"], &[r#"{"a":[1,2]}"#]);
    let custom = JsonSchemaOptions { whitespace: Whitespace::Pattern("[ ]?".into()), ..JsonSchemaOptions::default() };
    check_with(s, &custom, &[r#"{ "a": [1, 2] }"#], &[r#"{  "a":[1,2]}"#, "{\n\"a\":[1,2]}"]);
}

#[test]
fn json_object_mode() {
    let g = json_object_grammar(&JsonSchemaOptions::default()).unwrap();
    let compiled = glrmask_core::CompiledGrammar::compile(g, &Default::default()).unwrap();
    let c = glrmask_core::Constraint::new(
        std::sync::Arc::new(compiled),
        json_schema_util::byte_vocab(),
        &[],
        glrmask_core::Optimization::Auto,
    )
    .unwrap();
    for ok in [r#"{"a":[1,{"b":null}],"c":"\u00e9"}"#, "[]", "-1.5e3", "\"s\""] {
        let mut s = c.start();
        assert!(s.commit_bytes(ok.as_bytes()).is_ok() && s.is_accepting(), "{ok}");
    }
    for bad in [r#"{"a":}"#, "[1,]", "{\"a\" :1}"] {
        let mut s = c.start();
        assert!(!(s.commit_bytes(bad.as_bytes()).is_ok() && s.is_accepting()), "{bad}");
    }
}

#[test]
fn intersections_keep_the_outer_property_order() {
    // A branch's own `properties` must not reorder the enclosing schema's
    // (JSONSchemaBench Github_easy---o10013: `oneOf` branches listing a subset).
    let s = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "additionalProperties": false,
        "oneOf": [
            {"properties": {"b": {"const": "x"}}, "required": ["b"]},
            {"properties": {"b": {"const": "y"}}, "required": ["b"]}
        ]
    });
    check(s, &[r#"{"a":1,"b":"x"}"#, r#"{"b":"y"}"#], &[r#"{"b":"x","a":1}"#, r#"{"a":1,"b":"z"}"#]);
}

/// Nested `not`/`anyOf` of patterned strings (JSONSchemaBench's Handwritten
/// `allany*` family): string alternatives stay one language with `any_of`
/// groups instead of distributing into a product of terminals, and that
/// language is exact. Checked on every string over a small alphabet.
#[test]
fn nested_string_unions() {
    let schema = json!({
        "type": "string",
        "allOf": [
            {"not": {"anyOf": [
                {"not": {"anyOf": [{"pattern": "^a"}, {"pattern": "2$"}]}},
                {"pattern": "b1"}
            ]}},
            {"anyOf": [{"pattern": "z"}, {"maxLength": 2}, {"not": {"pattern": "1"}}]},
            {"minLength": 1}
        ]
    });
    let expected = |s: &str| {
        let a = (s.starts_with('a') || s.ends_with('2')) && !s.contains("b1");
        let b = s.contains('z') || s.chars().count() <= 2 || !s.contains('1');
        a && b && !s.is_empty()
    };
    let c = Checker::new(&schema, &JsonSchemaOptions::default()).unwrap();
    let mut words = vec![String::new()];
    let mut start = 0;
    for _ in 0..5 {
        let end = words.len();
        for i in start..end {
            for ch in ['a', 'b', '1', '2', 'z'] {
                words.push(format!("{}{ch}", words[i]));
            }
        }
        start = end;
    }
    let mut accepted = 0;
    for w in &words {
        let text = format!("\"{w}\"");
        assert_eq!(c.accepts(&text), expected(w), "{text}");
        accepted += expected(w) as usize;
    }
    assert!(accepted > 100 && accepted < words.len() - 100, "{accepted} of {}", words.len());
    // Beside other types, the merged string keeps its language.
    let mixed = json!({"anyOf": [schema, {"type": "integer"}, {"type": "string", "pattern": "^zz$"}]});
    check(mixed, &["\"a2\"", "7", "\"zz\""], &["\"b1\"", "1.5", "\"zzz\""]);
}

/// JSONSchemaBench Handwritten `allany14`: `allOf` of `not`s of `anyOf`s of
/// `not`s of patterns. Distributed into a disjunctive normal form it was 729
/// patterned string terminals whose lexer product did not finish in minutes;
/// as `any_of` groups it is one terminal.
#[test]
fn nested_not_any_of_patterns_compile() {
    let not_any = |ps: &[&str]| json!({"not": {"anyOf": ps.iter().map(|p| json!({"pattern": p})).collect::<Vec<_>>()}});
    let schema = json!({
        "type": "string",
        "allOf": [
            {"not": {"anyOf": [not_any(&["^....$", "ab1", "b12"]), not_any(&["^....$", "bc1", "c12"]), not_any(&["^....$", "ca1", "a12"])]}},
            {"not": {"anyOf": [not_any(&["^[\\w]*$", "\\d\\d", "[a|b]"]), not_any(&["^[\\w]*$", "\\d\\d", "[b|c]"]), not_any(&["^[\\w]*$", "\\d\\d", "[c|a]"])]}},
            {"pattern": "[aA][12].*[zZ]"}, {"minLength": 10}, {"maxLength": 20}
        ]
    });
    // Valid: every not1x fails (it has b12, c12, a12), every not2x fails (two digits).
    check(
        schema,
        &["\"a1b12c12a12z\"", "\"xa1b12c12a12z\""],
        &["\"a1111111bz\"", "\"a1b12c12a12!\"", "\"a1z\"", "\"a1b12c12a1z\""],
    );
}

/// Definitions that reach each other through `$ref`/`anyOf` alone: the least
/// fixed point (every non-reference alternative of the cycle), not a cyclic
/// grammar naming internal rules; with no such alternative, an invalid schema
/// at the definition's pointer.
#[test]
fn reference_cycles_without_a_value_between() {
    let cycle = json!({
        "$defs": {
            "a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]},
            "b": {"anyOf": [{"$ref": "#/$defs/c"}, {"type": "integer"}]},
            "c": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/c"}, {"type": "array", "items": {"$ref": "#/$defs/a"}}]},
        },
        "$ref": "#/$defs/b",
    });
    check(cycle, &["null", "7", "[]", "[null,[1,[]]]"], &["\"x\"", "true", "[\"x\"]", "1.5"]);
    let pure = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
    assert_eq!(error_code(pure, &JsonSchemaOptions::default()), ("invalid_schema", Some("/$defs/a".to_string())));
    let itself =
        json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "properties": {"x": {"$ref": "#/$defs/a"}}});
    assert_eq!(error_code(itself, &JsonSchemaOptions::default()).0, "invalid_schema");
}

/// Intersections recurse three times per level of nesting: 40
/// levels are within the default `max_depth` and the stack of a test thread
/// (2 MiB, debug).
#[test]
fn deep_intersections() {
    let nested = |depth: usize, leaf: Value| (0..depth).fold(leaf, |inner, _| json!({"properties": {"a": inner}}));
    let schema = json!({"allOf": [nested(40, json!({"type": "integer"})), nested(40, json!({"minimum": 3}))]});
    let text = |leaf: &str| format!("{}{leaf}{}", r#"{"a":"#.repeat(40), "}".repeat(40));
    check(schema, &[&text("3")], &[&text("2"), &text("3.5")]);
    let (code, _) = error_code(
        json!({"allOf": [nested(100, json!({"type": "integer"})), nested(100, json!({"minimum": 3}))]}),
        &JsonSchemaOptions::default(),
    );
    assert_eq!(code, "limit_exceeded");
}

/// Lenient promises a grammar that compiles: exact complements that make
/// the grammar outgrow its size bound are approximated instead
/// (JSONSchemaBench Github_medium---o39217, ajv's "secure" meta-schema: an
/// exact `if` in one of four `dependencies` of a recursive `any_order`
/// object). Strict keeps them, and the compile names the limit.
#[test]
fn lenient_complements_fall_back_when_the_grammar_outgrows_its_bound() {
    use glrmask_core::grammar::normal::normalize;
    let schema: Value = serde_json::from_str(include_str!("fixtures/ajv_secure_meta_schema.json")).unwrap();
    let lenient = JsonSchemaOptions { lenient: true, any_order: true, ..JsonSchemaOptions::default() };
    let (grammar, notes) = json_schema_grammar(&schema, &lenient).unwrap();
    normalize(&grammar, &Default::default()).unwrap();
    assert!(notes.iter().any(|n| n.contains("`if`") && n.contains("max_grammar_size")), "{notes:?}");
}
