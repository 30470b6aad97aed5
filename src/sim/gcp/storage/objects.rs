//! Simulated Storage objects: media upload, get, paged list, delete.
//!
//! Invariant: list pages are in name order and a page token names the last object
//! returned, so paging sees every object present throughout, once.

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{now, storage_error};
use crate::cloud::gcp::types::storage::{Object, Objects};
use crate::sim::Sim;
use crate::sim::error::SimError;

const MAX_PAGE: usize = 1000;

fn no_such_object(bucket: &str, name: &str) -> SimError {
    storage_error(404, "notFound", format!("No such object: {bucket}/{name}"))
}

fn valid_object_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 1024
        && name != "."
        && name != ".."
        && !name.contains(['\r', '\n'])
        && !name.starts_with(".well-known/acme-challenge/")
}

pub(super) fn upload(
    sim: &Sim,
    Path(bucket): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Object>, SimError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream");
    do_upload(sim, &bucket, &q, content_type, &body)
}

fn do_upload(
    sim: &Sim,
    bucket: &str,
    q: &HashMap<String, String>,
    content_type: &str,
    body: &Bytes,
) -> Result<Json<Object>, SimError> {
    match q.get("uploadType").map(String::as_str) {
        Some("media") => {}
        Some(other) => {
            return Err(storage_error(
                400,
                "invalid",
                format!("Upload type {other:?} is not supported by the simulator (use media)."),
            ));
        }
        None => {
            return Err(storage_error(
                400,
                "required",
                "Required parameter: uploadType",
            ));
        }
    }
    let name = q
        .get("name")
        .ok_or_else(|| storage_error(400, "required", "Required parameter: name"))?;
    if !valid_object_name(name) {
        return Err(storage_error(
            400,
            "invalid",
            "The specified object name is not valid.",
        ));
    }
    let mut w = sim.world();
    let st = &mut w.storage;
    st.generation += 1;
    let generation = 1_700_000_000_000_000 + st.generation;
    let rec = st.bucket(bucket)?;
    let stamp = now();
    let object = Object {
        name: name.clone(),
        bucket: bucket.to_owned(),
        kind: "storage#object".into(),
        id: format!("{bucket}/{name}/{generation}"),
        self_link: format!(
            "https://www.googleapis.com/storage/v1/b/{bucket}/o/{}",
            crate::cloud::gcp::storage::encode(name)
        ),
        content_type: content_type.to_owned(),
        size: i64::try_from(body.len()).ok(),
        generation: Some(generation),
        metageneration: Some(1),
        storage_class: rec.bucket.storage_class.clone(),
        time_created: stamp.clone(),
        updated: stamp,
        etag: URL_SAFE_NO_PAD.encode(generation.to_be_bytes()),
    };
    rec.objects.insert(name.clone(), object.clone());
    Ok(Json(object))
}

pub(super) fn get(
    sim: &Sim,
    Path((bucket, object)): Path<(String, String)>,
) -> Result<Json<Object>, SimError> {
    let mut w = sim.world();
    let found = w.storage.bucket(&bucket).and_then(|r| {
        r.objects
            .get(&object)
            .cloned()
            .ok_or_else(|| no_such_object(&bucket, &object))
    });
    found.map(Json)
}

pub(super) fn delete(
    sim: &Sim,
    Path((bucket, object)): Path<(String, String)>,
) -> Result<Response, SimError> {
    let mut w = sim.world();
    let removed = w.storage.bucket(&bucket).and_then(|r| {
        r.objects
            .remove(&object)
            .ok_or_else(|| no_such_object(&bucket, &object))
    });
    removed.map(|_| StatusCode::NO_CONTENT.into_response())
}

pub(super) fn list(
    sim: &Sim,
    Path(bucket): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Objects>, SimError> {
    do_list(sim, &bucket, &q)
}

fn do_list(
    sim: &Sim,
    bucket: &str,
    q: &HashMap<String, String>,
) -> Result<Json<Objects>, SimError> {
    let max = match q.get("maxResults") {
        None => MAX_PAGE,
        Some(s) => match s.parse::<i64>() {
            Ok(n) if n > 0 => usize::try_from(n).unwrap_or(MAX_PAGE).min(MAX_PAGE),
            _ => {
                return Err(storage_error(
                    400,
                    "invalid",
                    format!("Invalid unsigned integer value: '{s}'."),
                ));
            }
        },
    };
    let after = match q.get("pageToken").filter(|t| !t.is_empty()) {
        None => None,
        Some(t) => Some(
            URL_SAFE_NO_PAD
                .decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| storage_error(400, "invalid", "Invalid page token."))?,
        ),
    };
    let prefix = q.get("prefix").map(String::as_str).unwrap_or("");
    let mut w = sim.world();
    let rec = w.storage.bucket(bucket)?;
    let mut matching = rec
        .objects
        .range::<String, _>((
            after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
            std::ops::Bound::Unbounded,
        ))
        .map(|(_, o)| o)
        .filter(|o| o.name.starts_with(prefix));
    let items: Vec<Object> = matching.by_ref().take(max).cloned().collect();
    let next_page_token = match (matching.next(), items.last()) {
        (Some(_), Some(last)) => Some(URL_SAFE_NO_PAD.encode(last.name.as_bytes())),
        _ => None,
    };
    Ok(Json(Objects {
        kind: "storage#objects".into(),
        items,
        prefixes: Vec::new(),
        next_page_token,
    }))
}
