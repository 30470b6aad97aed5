//! The OpenAPI document rendered as OpenAPI 3.0.3, for client generators that read only
//! 3.0 (progenitor; openapi-generator's 3.1 support is partial). `kineticd openapi
//! --openapi-version 3.0` prints it; it is committed as `openapi/kineticd.openapi30.json`
//! and drift-checked like the 3.1 document.
//!
//! Invariant: a pure function of the 3.1 document ([`down_convert`]): JSON Schema 2020-12
//! spellings become their 3.0 Schema Object equivalents (`type: [X, "null"]` ->
//! `type: X, nullable: true`; `oneOf` with a `null` branch -> `nullable`; `const` ->
//! one-value `enum`; `examples` -> `example`; numeric `exclusiveMinimum` -> boolean),
//! keywords 3.0 lacks are dropped, and nothing a route accepts or answers changes, with
//! one generator-facing exception ([`for_generators`]): a request body offered in several
//! media types keeps only JSON.

use serde_json::{Map, Value};

/// The 3.0.3 rendering of [`super::openapi::document`], pretty JSON with a final newline.
pub fn document_json() -> String {
    let doc = serde_json::to_value(super::openapi::document()).unwrap_or_default();
    let mut s =
        serde_json::to_string_pretty(&for_generators(down_convert(doc))).unwrap_or_default();
    s.push('\n');
    s
}

/// The same document as OpenAPI 3.0.3: every schema spelt the 3.0 way, 3.1-only
/// document fields dropped.
pub fn down_convert(mut doc: Value) -> Value {
    let Some(root) = doc.as_object_mut() else {
        return doc;
    };
    root.insert("openapi".into(), "3.0.3".into());
    for key in ["webhooks", "jsonSchemaDialect"] {
        root.shift_remove(key);
    }
    if let Some(info) = root.get_mut("info").and_then(Value::as_object_mut) {
        info.shift_remove("summary");
        if let Some(license) = info.get_mut("license").and_then(Value::as_object_mut) {
            license.shift_remove("identifier");
        }
    }
    if let Some(paths) = root.get_mut("paths").and_then(Value::as_object_mut) {
        paths.values_mut().for_each(path_item);
    }
    if let Some(components) = root.get_mut("components").and_then(Value::as_object_mut) {
        components.shift_remove("pathItems");
        for (kind, items) in components.iter_mut() {
            let Some(items) = items.as_object_mut() else {
                continue;
            };
            for item in items.values_mut() {
                match kind.as_str() {
                    "schemas" => schema(item),
                    "parameters" | "headers" => parameter(item),
                    "requestBodies" => content_holder(item),
                    "responses" => response(item),
                    _ => {}
                }
            }
        }
    }
    doc
}

/// What generators need beyond a valid 3.0 document: a request body offered in several
/// media types keeps only `application/json` (`:checkWorkload` also reads YAML;
/// progenitor takes one media type per body).
pub fn for_generators(mut doc: Value) -> Value {
    let operations = doc
        .get_mut("paths")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(Value::as_object_mut);
    for op in operations {
        if let Some(content) = op
            .get_mut("requestBody")
            .and_then(|b| b.get_mut("content"))
            .and_then(Value::as_object_mut)
            && content.len() > 1
            && content.contains_key("application/json")
        {
            content.retain(|media, _| media == "application/json");
        }
    }
    doc
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn path_item(item: &mut Value) {
    let Some(item) = item.as_object_mut() else {
        return;
    };
    each(item.get_mut("parameters"), parameter);
    for method in METHODS {
        let Some(op) = item.get_mut(method).and_then(Value::as_object_mut) else {
            continue;
        };
        each(op.get_mut("parameters"), parameter);
        if let Some(body) = op.get_mut("requestBody") {
            content_holder(body);
        }
        if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
            responses.values_mut().for_each(response);
        }
    }
}

fn each(list: Option<&mut Value>, f: fn(&mut Value)) {
    if let Some(list) = list.and_then(Value::as_array_mut) {
        list.iter_mut().for_each(f);
    }
}

/// A parameter or a header: its `schema`, and the schemas of its `content`. A query or
/// header value is absent or a string: null has no spelling there, so a parameter schema
/// is never `nullable` (optional is `required: false`).
fn parameter(p: &mut Value) {
    if let Some(s) = p.get_mut("schema") {
        schema(s);
        if let Some(s) = s.as_object_mut() {
            s.shift_remove("nullable");
        }
    }
    content_holder(p);
}

fn response(r: &mut Value) {
    content_holder(r);
    if let Some(headers) = r.get_mut("headers").and_then(Value::as_object_mut) {
        headers.values_mut().for_each(parameter);
    }
}

/// Anything with a `content` map of media types (request bodies, responses).
fn content_holder(v: &mut Value) {
    let Some(content) = v.get_mut("content").and_then(Value::as_object_mut) else {
        return;
    };
    for media in content.values_mut() {
        if let Some(s) = media.get_mut("schema") {
            schema(s);
        }
    }
}

/// JSON Schema keywords a 3.0 Schema Object does not have and no 3.0 spelling replaces.
const DROPPED: [&str; 14] = [
    "$schema",
    "$id",
    "$anchor",
    "$comment",
    "$defs",
    "propertyNames",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "contentMediaType",
    "contentEncoding",
    "dependentRequired",
    "dependentSchemas",
];

/// Rewrites one schema (and every schema inside it) the 3.0 way.
fn schema(s: &mut Value) {
    match s {
        // Boolean schemas: `true` accepts anything, `false` nothing.
        Value::Bool(true) => *s = Value::Object(Map::new()),
        Value::Bool(false) => *s = serde_json::json!({"not": {}}),
        Value::Object(map) => object_schema(map),
        _ => {}
    }
}

fn object_schema(map: &mut Map<String, Value>) {
    for key in DROPPED {
        map.shift_remove(key);
    }
    let mut nullable = false;

    // `type: [X, "null"]` -> `type: X` + nullable; several non-null types -> anyOf.
    if let Some(Value::Array(types)) = map.get("type") {
        let mut types = types.clone();
        types.retain(|t| {
            let null = t == "null";
            nullable |= null;
            !null
        });
        match types.len() {
            0 => {
                map.shift_remove("type");
            }
            1 => {
                map.insert("type".into(), types.remove(0));
            }
            _ => {
                map.shift_remove("type");
                let branches = types
                    .into_iter()
                    .map(|t| serde_json::json!({ "type": t }))
                    .collect();
                map.insert("anyOf".into(), Value::Array(branches));
            }
        }
    } else if map.get("type").is_some_and(|t| t == "null") {
        map.shift_remove("type");
        nullable = true;
    }

    // A `null` branch of oneOf / anyOf -> nullable; one branch left -> allOf of it (the
    // 3.0 way to give a `$ref` siblings such as nullable, default or description).
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = map.get_mut(key) else {
            continue;
        };
        let before = branches.len();
        branches.retain(|b| !is_null_schema(b));
        if branches.len() == before {
            continue;
        }
        nullable = true;
        if branches.len() == 1
            && let Some(branches) = map.shift_remove(key)
        {
            map.insert("allOf".into(), branches);
        }
    }

    // `$ref` with siblings: 3.0 ignores a reference's siblings, so wrap it in allOf when
    // they carry meaning (a description alone is kept beside it: only documentation).
    if map.keys().any(|k| k != "$ref" && k != "description")
        && let Some(reference) = map.shift_remove("$ref")
    {
        map.insert(
            "allOf".into(),
            Value::Array(vec![serde_json::json!({ "$ref": reference })]),
        );
    }

    if let Some(value) = map.shift_remove("const") {
        map.insert("enum".into(), Value::Array(vec![value]));
    }
    if let Some(examples) = map.shift_remove("examples")
        && let Some(first) = examples.as_array().and_then(|e| e.first())
    {
        map.entry("example").or_insert_with(|| first.clone());
    }
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(limit) = map.get(exclusive).filter(|v| v.is_number()).cloned() {
            map.insert(bound.into(), limit);
            map.insert(exclusive.into(), Value::Bool(true));
        }
    }
    if nullable {
        map.insert("nullable".into(), Value::Bool(true));
        // An enum of a nullable schema lists null too (3.0.3 clarification).
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
    }

    // Every schema inside this one.
    for key in ["items", "not", "additionalProperties"] {
        // (`additionalProperties: true|false` is 3.0 too.)
        if let Some(inner) = map.get_mut(key)
            && !(inner.is_boolean() && key == "additionalProperties")
        {
            schema(inner);
        }
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = map.get_mut(key) {
            branches.iter_mut().for_each(schema);
        }
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        props.values_mut().for_each(schema);
    }
}

/// `{"type": "null"}` (with nothing else but documentation).
fn is_null_schema(s: &Value) -> bool {
    s.as_object().is_some_and(|m| {
        m.get("type").is_some_and(|t| t == "null")
            && m.keys()
                .all(|k| matches!(k.as_str(), "type" | "description" | "title"))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn converted(s: Value) -> Value {
        let mut s = s;
        schema(&mut s);
        s
    }

    #[test]
    fn type_lists_with_null_become_nullable() {
        assert_eq!(
            converted(json!({"type": ["string", "null"], "format": "date-time"})),
            json!({"format": "date-time", "type": "string", "nullable": true})
        );
        assert_eq!(
            converted(json!({"type": ["integer", "string"]})),
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})
        );
    }

    #[test]
    fn a_null_branch_makes_a_nullable_reference() {
        assert_eq!(
            converted(
                json!({"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/A"}], "default": null})
            ),
            json!({"default": null, "allOf": [{"$ref": "#/components/schemas/A"}], "nullable": true})
        );
        // Two real branches stay a oneOf.
        assert_eq!(
            converted(json!({"oneOf": [{"type": "null"}, {"$ref": "#/a"}, {"$ref": "#/b"}]})),
            json!({"oneOf": [{"$ref": "#/a"}, {"$ref": "#/b"}], "nullable": true})
        );
    }

    #[test]
    fn references_keep_meaningful_siblings_through_all_of() {
        assert_eq!(
            converted(json!({"$ref": "#/a", "description": "d"})),
            json!({"$ref": "#/a", "description": "d"})
        );
        assert_eq!(
            converted(json!({"$ref": "#/a", "default": "X"})),
            json!({"default": "X", "allOf": [{"$ref": "#/a"}]})
        );
    }

    #[test]
    fn json_schema_keywords_become_3_0_spellings() {
        assert_eq!(
            converted(json!({"const": "UP", "examples": ["UP", "DOWN"]})),
            json!({"enum": ["UP"], "example": "UP"})
        );
        assert_eq!(
            converted(json!({"type": "integer", "exclusiveMinimum": 0})),
            json!({"type": "integer", "exclusiveMinimum": true, "minimum": 0})
        );
        assert_eq!(
            converted(
                json!({"type": "object", "additionalProperties": {"type": ["string", "null"]}, "propertyNames": {"type": "string"}})
            ),
            json!({"type": "object", "additionalProperties": {"type": "string", "nullable": true}})
        );
        assert_eq!(
            converted(json!({"type": ["string", "null"], "enum": ["A", "B"]})),
            json!({"type": "string", "enum": ["A", "B", null], "nullable": true})
        );
    }

    #[test]
    fn nested_schemas_are_converted_everywhere() {
        let doc = json!({
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1", "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}},
            "paths": {"/x": {"put": {
                "parameters": [{"name": "n", "in": "query", "schema": {"type": ["boolean", "null"]}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"a": {"type": ["array", "null"], "items": {"const": 1}}}}}}},
                "responses": {"200": {"description": "ok", "headers": {"h": {"schema": {"type": ["string", "null"]}}}}}
            }}},
            "components": {"schemas": {"S": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/T"}]}}}
        });
        let out = down_convert(doc);
        assert_eq!(out["openapi"], "3.0.3");
        assert_eq!(out["info"]["license"], json!({"name": "Apache-2.0"}));
        let put = &out["paths"]["/x"]["put"];
        assert_eq!(put["parameters"][0]["schema"], json!({"type": "boolean"}));
        assert_eq!(
            put["requestBody"]["content"]["application/json"]["schema"]["properties"]["a"],
            json!({"type": "array", "items": {"enum": [1]}, "nullable": true})
        );
        assert_eq!(
            put["responses"]["200"]["headers"]["h"]["schema"],
            json!({"type": "string"})
        );
        assert_eq!(
            out["components"]["schemas"]["S"],
            json!({"allOf": [{"$ref": "#/components/schemas/T"}], "nullable": true})
        );
    }

    #[test]
    fn generators_get_one_body_media_type_and_every_answer() {
        let doc = json!({"paths": {"/c": {
            "put": {"responses": {"200": {}, "202": {}, "400": {}}},
            "post": {"requestBody": {"content": {"application/json": {}, "application/yaml": {}}}, "responses": {"200": {}}}
        }}});
        let out = for_generators(doc);
        let c = &out["paths"]["/c"];
        assert_eq!(
            c["put"]["responses"],
            json!({"200": {}, "202": {}, "400": {}})
        );
        assert_eq!(
            c["post"]["requestBody"]["content"],
            json!({"application/json": {}})
        );
    }
}
