//! What `up`'s creation, reconcile and adoption share: the request body, the
//! operation each enqueues, the cluster record's insert and the plan's notes.
//!
//! Invariant: every path of `up` enqueues the same UP_CLUSTER input (the request as
//! sent) and inserts a cluster record the same way (a concurrent insert of the name is
//! 409 CLUSTER_CHANGED, never a second record).

use serde::{Deserialize, Serialize};

use crate::domain::ClusterState;
use crate::plan::resources::cluster_resources;
use crate::store::{self, ClusterSpecRecord, clusters::ClusterRecord, clusters::NewCluster};

use super::super::status::access::wanted;
use super::super::{Error, Result, Services};
use super::{Mutation, OpRequest};

/// The body of `PUT .../clusters/{c}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpRequest {
    /// The first pool's accelerator (`gpu-l4`, `tpu-v5litepod-16`, `a100x4`, ...), or
    /// `cpu` for none. Required to create; ignored (with a plan warning) on an existing cluster.
    pub accelerator: Option<String>,
    /// Nodes of the first pool kept warm (default 0: scale to zero).
    pub min_nodes: Option<u32>,
    /// `down` empties non-empty buckets (default true); false makes `down` refuse.
    pub force_destroy: Option<bool>,
    /// The first pool uses spot VMs.
    pub spot: Option<bool>,
    /// The first pool consumes this specific reservation (not with spot).
    pub reservation: Option<String>,
    /// How long the cluster lives, from now on the cloud's clock (`"86400s"`): it is then
    /// brought down by a `down` the TTL rule starts, after a TTL_WARNING `warnBefore`
    /// ahead (the team policy's `idle.warnBefore`, default an hour); `:snooze` postpones
    /// it. On an existing cluster: its new expiry. Not with `expireTime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub ttl: Option<String>,
    /// When the cluster is brought down (RFC 3339), as `ttl` does. Not with `ttl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub expire_time: Option<String>,
}

/// What the SYNC_ACCESS after `up` will grant `team`'s roster on the cluster (shown by
/// the preview only: the operation's stored plan is its actions).
pub async fn access_preview(
    svc: &Services,
    m: &Mutation,
    team: &str,
) -> Result<Option<crate::plan::up::access::AccessPreview>> {
    let want = wanted(&svc.db, team, &m.path.name()).await?;
    Ok(crate::plan::up::access::preview(
        &m.names(),
        &want.roster.members,
        &want.bindings,
    ))
}

/// The UP_CLUSTER operation's own part.
pub fn up_operation<'a>(
    m: &Mutation,
    team: &'a str,
    cluster_id: uuid::Uuid,
    pools: Vec<String>,
    new_cluster: bool,
    req: &UpRequest,
) -> OpRequest<'a, serde_json::Value> {
    OpRequest {
        target: m.path.name(),
        team,
        cluster_id,
        pools,
        new_cluster,
        request: serde_json::to_value(req).unwrap_or_default(),
    }
}

/// The plan's note of a TTL.
pub fn expiry_note(at: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "the cluster expires at {}: it is then brought down (a TTL_WARNING comes first; :snooze postpones it)",
        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

/// Insert the new cluster's record; a concurrent creation of the same name is refused.
pub async fn insert_cluster(
    tx: &mut sqlx::PgConnection,
    m: &Mutation,
    team: &str,
    spec: ClusterSpecRecord,
    state: ClusterState,
) -> Result<ClusterRecord> {
    let path = &m.path;
    store::clusters::insert(
        tx,
        NewCluster {
            project_id: path.project.as_str(),
            zone: path.zone.as_str(),
            name: path.cluster.as_str(),
            team_id: team,
            state,
            spec,
            resources: serde_json::to_value(cluster_resources(&m.names())).unwrap_or_default(),
            created_by: m.caller.email.as_str(),
        },
    )
    .await
    .map_err(|e| match e {
        store::StoreError::Db(ref d) if store::unique_violation(d).is_some() => Error::aborted(
            "CLUSTER_CHANGED",
            format!("cluster {} was created by a concurrent request; send the request again to reconcile it", path.name()),
        ),
        e => e.into(),
    })
}
