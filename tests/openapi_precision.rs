//! The published document is precise enough for typed clients (issue 26, item 4):
//! timestamps are `date-time`, every integer is int32 (every count the API has is far
//! below 2^31 and validated on input), enum-like fields are enums, a response property
//! that can be `null` is always present (`required`), so "absent" and "null" never mean
//! the same thing, and `Operation.response` is a union discriminated by `@type`.

use serde_json::Value;

fn doc() -> Value {
    serde_json::from_str(&kineticd::api::openapi::document_json()).unwrap()
}

/// Every (schema name, property name, property schema) of the components.
fn properties(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = vec![];
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        for (prop, s) in schema["properties"].as_object().into_iter().flatten() {
            out.push((name.clone(), prop.clone(), s.clone()));
        }
    }
    out
}

/// The request bodies' schema names (their optional fields may be null or absent alike).
fn request_schemas(doc: &Value) -> Vec<String> {
    let mut out = vec![];
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            for media in op["requestBody"]["content"]
                .as_object()
                .into_iter()
                .flatten()
            {
                let s = &media.1["schema"];
                for r in [&s["$ref"], &s["oneOf"][0]["$ref"]] {
                    if let Some(r) = r.as_str() {
                        out.push(r.rsplit('/').next().unwrap().to_owned());
                    }
                }
            }
        }
    }
    out
}

fn nullable(s: &Value) -> bool {
    s["type"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t == "null"))
        || s["oneOf"]
            .as_array()
            .is_some_and(|o| o.iter().any(|x| x["type"] == "null"))
}

/// Every integer schema under `v`, with where it is.
fn integers(v: &Value, at: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            let t = &m.get("type").cloned().unwrap_or(Value::Null);
            if t == "integer"
                || t.as_array()
                    .is_some_and(|a| a.iter().any(|x| x == "integer"))
            {
                out.push((at.to_owned(), v.clone()));
            }
            for (k, x) in m {
                integers(x, &format!("{at}.{k}"), out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| integers(x, at, out)),
        _ => {}
    }
}

#[test]
fn timestamps_are_date_times() {
    let doc = doc();
    let wrong: Vec<_> = properties(&doc)
        .into_iter()
        .filter(|(_, p, _)| p.ends_with("Time") || p == "time")
        .filter(|(_, _, s)| s["format"] != "date-time")
        .map(|(n, p, _)| format!("{n}.{p}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "timestamps without format date-time: {wrong:?}"
    );
}

#[test]
fn every_integer_is_int32() {
    let doc = doc();
    let mut all = vec![];
    integers(&doc, "", &mut all);
    assert!(all.len() > 30, "{}", all.len());
    let wrong: Vec<_> = all
        .iter()
        .filter(|(_, s)| s["format"] != "int32")
        .map(|(at, s)| format!("{at}: {s}"))
        .collect();
    assert!(wrong.is_empty(), "integers not int32: {wrong:#?}");
}

#[test]
fn a_response_property_that_can_be_null_is_required() {
    let doc = doc();
    let requests = request_schemas(&doc);
    assert!(
        requests.contains(&"AddPoolRequest".to_owned()),
        "{requests:?}"
    );
    let required = |n: &str, p: &str| {
        doc["components"]["schemas"][n]["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|x| x == p))
    };
    let wrong: Vec<_> = properties(&doc)
        .into_iter()
        .filter(|(n, p, s)| !requests.contains(n) && nullable(s) && !required(n, p))
        .map(|(n, p, _)| format!("{n}.{p}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "nullable but not required (mark `required = true`, or `nullable = false` when the \
         field is skipped when empty): {wrong:?}"
    );
}

#[test]
fn enum_like_fields_are_enums() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    // The schema an enum-like property resolves to (through `$ref` or a nullable `oneOf`).
    let resolve = |s: &Value| -> Value {
        let s = s["oneOf"]
            .as_array()
            .and_then(|o| o.iter().find(|x| x["type"] != "null").cloned())
            .unwrap_or_else(|| s.clone());
        match s["$ref"].as_str() {
            Some(r) => schemas[r.rsplit('/').next().unwrap()].clone(),
            None => s,
        }
    };
    let fields = [
        ("NodePool", "kind"),
        ("NodePool", "provisioning"),
        ("NodePool", "state"),
        ("Accelerator", "kind"),
        ("Taint", "effect"),
        ("PoolTaint", "effect"),
        ("FailoverRef", "role"),
        ("GpuSharing", "strategy"),
        ("GpuUnits", "sharingStrategy"),
        ("DrillRequest", "mode"),
        ("DrillDetails", "mode"),
        ("AddPoolRequest", "provisioning"),
        ("AddPoolRequest", "driverVersion"),
        ("PoolDetails", "provisioning"),
        ("OperationMetadata", "type"),
        ("OperationMetadata", "state"),
        ("OperationError", "status"),
        ("Status", "status"),
        ("WorkloadCheck", "verdict"),
        ("WorkloadPoolFit", "fits"),
        ("GkeClusterStatus", "status"),
        ("PoolStatus", "gkeStatus"),
        ("RepositoryStatus", "format"),
        ("RepositoryDetails", "format"),
    ];
    for (schema, prop) in fields {
        let s = resolve(&schemas[schema]["properties"][prop]);
        let values = s["enum"].as_array();
        assert!(
            values.is_some_and(|v| v.len() >= 2),
            "{schema}.{prop} is not an enum: {s}"
        );
    }
    let state = doc["paths"]["/v1/clusters"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "state")
        .unwrap()["schema"]
        .clone();
    assert!(
        resolve(&state)["enum"].is_array(),
        "?state= is not an enum: {state}"
    );
}

#[test]
fn an_operations_response_is_a_union_discriminated_by_its_type() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let response = &schemas["Operation"]["properties"]["response"];
    assert_eq!(
        response["discriminator"]["propertyName"], "@type",
        "{response}"
    );
    let members: Vec<&str> = response["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["$ref"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    // One member per kind a production process runs, as the kinds register them.
    let mut kinds: Vec<String> = Vec::new();
    for r in kineticd::ops::kinds::response_schemas() {
        if !kinds.contains(&r.name) {
            kinds.push(r.name);
        }
    }
    assert_eq!(members, kinds);
    assert!(members.contains(&"ClusterResponse"), "{members:?}");
    for m in members {
        let s = &schemas[m];
        assert_eq!(
            s["properties"]["@type"]["enum"],
            serde_json::json!([m]),
            "{m}"
        );
        assert!(
            s["required"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r == "@type"),
            "{m}"
        );
        assert_eq!(
            response["discriminator"]["mapping"][m],
            format!("#/components/schemas/{m}")
        );
    }
    let plan = &schemas["OperationMetadata"]["properties"]["plan"]["oneOf"][0]["$ref"];
    assert_eq!(plan, "#/components/schemas/Plan");
}

#[test]
fn money_has_one_shape() {
    let doc = doc();
    let mut currencies = 0;
    for (name, prop, s) in properties(&doc) {
        if prop == "currency" {
            currencies += 1;
            assert_eq!(
                s["$ref"], "#/components/schemas/Currency",
                "{name}.currency: {s}"
            );
        }
    }
    assert!(currencies >= 4, "{currencies}");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    // Amounts are numbers beside a currency; an amount per hour alone is an HourlyCost.
    for (name, s) in schemas {
        let props = s["properties"].as_object();
        if props.is_some_and(|p| p.contains_key("currency")) {
            for (prop, v) in props.unwrap() {
                if prop != "currency" && prop != "@type" {
                    assert_eq!(v["type"], "number", "{name}.{prop}: {v}");
                }
            }
        }
    }
    assert!(!schemas.contains_key("IdleCost"));
    let drill = &schemas["DrillReport"]["properties"]["hourlyCostOnFallback"];
    assert_eq!(drill["$ref"], "#/components/schemas/HourlyCost", "{drill}");
}

#[test]
fn an_operations_error_details_are_typed_by_at_type() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let details = &schemas["OperationError"]["properties"]["details"];
    let mapping = &details["items"]["discriminator"]["mapping"];
    assert_eq!(
        mapping["type.googleapis.com/google.rpc.ErrorInfo"], "#/components/schemas/ErrorInfo",
        "{details}"
    );
    assert_eq!(mapping["DrillReport"], "#/components/schemas/DrillReport");
    assert_eq!(
        schemas["ErrorInfo"]["properties"]["@type"]["enum"],
        serde_json::json!(["type.googleapis.com/google.rpc.ErrorInfo"])
    );
}
