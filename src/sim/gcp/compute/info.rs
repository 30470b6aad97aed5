//! Read-only Compute facts: `regions.get` (zones and quotas with live usage) and
//! `acceleratorTypes.list` (GPUs per zone, paged with `maxResults`/`pageToken`).
//!
//! Invariant: quota usage is computed from the GKE pools at read time; page tokens are
//! opaque to clients and a token from one page always yields the next, never a repeat.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use base64::Engine;
use serde::Deserialize;

use crate::cloud::gcp::types::compute::{AcceleratorType, AcceleratorTypeList, Quota, Region};
use crate::sim::error::SimError;
use crate::sim::gcp::container;
use crate::sim::{Sim, tag};

use super::catalog::{self, is_region};
use super::handlers::{F, SVC, base};
use super::quota;

/// A stable numeric id for a name (Compute ids are uint64 strings).
fn id_of(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h.to_string()
}

pub async fn get_region(
    State(sim): State<Sim>,
    Path((project, region)): Path<(String, String)>,
) -> Response {
    const M: &str = "regions.get";
    if let Some(r) = sim.fault(SVC, M, F).await {
        return r;
    }
    if !is_region(&region) {
        let e = SimError::not_found(F, &format!("projects/{project}/regions/{region}"));
        return tag(M, e);
    }
    let base = base(&sim, &project);
    let w = sim.world();
    let usage = container::usage(&w, &project, &region);
    let quotas = quota::limits(&sim, &w, &region)
        .into_iter()
        .map(|(metric, limit)| Quota {
            usage: usage.get(&metric).copied().unwrap_or(0.0),
            metric,
            limit,
            owner: None,
        })
        .collect();
    let r = Region {
        id: Some(id_of(&region)),
        kind: Some("compute#region".into()),
        name: region.clone(),
        description: Some(region.clone()),
        status: Some("UP".into()),
        zones: catalog::zones_of(&region)
            .into_iter()
            .map(|z| format!("{base}/zones/{z}"))
            .collect(),
        quotas,
        self_link: Some(format!("{base}/regions/{region}")),
    };
    tag(M, Json(r))
}

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    #[serde(rename = "maxResults")]
    max_results: Option<String>,
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
}

const MAX_RESULTS: usize = 500;

fn encode_token(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("offset:{offset}"))
}

fn decode_token(t: &str) -> Option<usize> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(t)
        .ok()?;
    String::from_utf8(raw)
        .ok()?
        .strip_prefix("offset:")?
        .parse()
        .ok()
}

pub async fn list_accelerator_types(
    State(sim): State<Sim>,
    Path((project, zone)): Path<(String, String)>,
    Query(q): Query<ListQuery>,
) -> Response {
    const M: &str = "acceleratorTypes.list";
    if let Some(r) = sim.fault(SVC, M, F).await {
        return r;
    }
    tag(M, list(&sim, &project, &zone, &q).map(Json))
}

fn list(
    sim: &Sim,
    project: &str,
    zone: &str,
    q: &ListQuery,
) -> Result<AcceleratorTypeList, SimError> {
    if catalog::zone_region(zone).is_none() {
        return Err(SimError::not_found(
            F,
            &format!("projects/{project}/zones/{zone}"),
        ));
    }
    let max = match q.max_results.as_deref() {
        None => MAX_RESULTS,
        Some(s) => match s.parse::<usize>() {
            Ok(0) => MAX_RESULTS,
            Ok(n) if n <= MAX_RESULTS => n,
            _ => {
                return Err(SimError::invalid(
                    F,
                    format!(
                        "Invalid value for field 'maxResults': '{s}'. Must be less than or equal to 500"
                    ),
                ));
            }
        },
    };
    let offset = match q.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => 0,
        Some(t) => decode_token(t).ok_or_else(|| {
            SimError::invalid(F, format!("Invalid value for field 'pageToken': '{t}'."))
        })?,
    };
    let base = base(sim, project);
    let zone_url = format!("{base}/zones/{zone}");
    let all = catalog::gpus_in_zone(zone);
    let items = all
        .iter()
        .skip(offset)
        .take(max)
        .map(|g| AcceleratorType {
            id: Some(id_of(&format!("{zone}/{}", g.name))),
            kind: Some("compute#acceleratorType".into()),
            name: g.name.to_owned(),
            description: Some(g.description.to_owned()),
            maximum_cards_per_instance: i32::try_from(g.max_cards).ok(),
            zone: Some(zone_url.clone()),
            self_link: Some(format!("{zone_url}/acceleratorTypes/{}", g.name)),
        })
        .collect();
    let next = offset + max;
    Ok(AcceleratorTypeList {
        kind: Some("compute#acceleratorTypeList".into()),
        items,
        next_page_token: (next < all.len()).then(|| encode_token(next)),
        self_link: Some(format!("{zone_url}/acceleratorTypes")),
    })
}
