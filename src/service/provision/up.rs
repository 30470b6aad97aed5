//! `up` (PUT a cluster): create the cluster with its first pool, or reconcile an
//! existing one (pools kept, accelerator ignored, missing resources repaired).

use serde::{Deserialize, Serialize};

use crate::cloud::Cloud;
use crate::domain::accelerators::Choice;
use crate::domain::pools::{shape, spot_of};
use crate::domain::pricing::PriceTable;
use crate::domain::{ClusterState, PoolState};
use crate::model;
use crate::ops::queue::Idempotency;
use crate::ops::workflows::cluster::UP;
use crate::plan::pools::{PoolToAdd, needs_driver_installer, pool_record};
use crate::plan::resources::cluster_resources;
use crate::plan::up::{NewPool, UpInput, plan};
use crate::store::{self, ClusterSpecRecord, Db, clusters::NewCluster};

use super::super::clusters::ClusterPath;
use super::super::records::{pool_of, spec_of};
use super::super::status::up_live_state;
use super::super::{Caller, Error, Result};
use super::placement::check_placement;
use super::pools::{check_quota, id_seed, new_pool_ids};
use super::{Begin, OpRequest, Submitted, begin, names, operation, parse_accelerator, pool_error};

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
}

#[allow(clippy::too_many_arguments)]
pub async fn up(
    db: &Db,
    cloud: &Cloud,
    prices: &PriceTable,
    caller: &Caller,
    path: &ClusterPath,
    req: UpRequest,
    validate_only: bool,
    idempotency: Option<Idempotency>,
) -> Result<Submitted> {
    let (team, cluster) = match begin(
        db,
        caller,
        path,
        "running up",
        validate_only,
        idempotency.as_ref(),
    )
    .await?
    {
        Begin::Repeat(op) => return Ok(Submitted::Operation(op)),
        Begin::Go { team, cluster } => (team, cluster),
    };
    let n = names(path);
    let existing = cluster.map(|c| *c);
    let request = serde_json::to_value(&req).unwrap_or_default();
    if let Some(c) = existing {
        super::not_deleting(&c, path)?;
        if c.team_id != team {
            return Err(Error::not_found(
                "CLUSTER_NOT_FOUND",
                format!("cluster {} not found", path.name()),
            ));
        }
        let pools = store::node_pools::list(db, c.id, None, 10_000).await?;
        let ids: Vec<String> = pools.iter().map(|p| p.pool_id.clone()).collect();
        let need_driver = pools
            .iter()
            .any(|p| needs_driver_installer(&pool_of(p.spec.clone())));
        let force_destroy = req.force_destroy.unwrap_or(c.spec.force_destroy);
        // Checked live, as a status is: what exists is KEPT, what is gone is CREATED.
        let live = up_live_state(cloud, &n, &ids).await;
        let p = plan(&UpInput {
            names: &n,
            cluster_exists: true,
            existing_pools: &ids,
            existing_need_driver: need_driver,
            first_pool: None,
            accelerator_requested: req.accelerator.is_some(),
            force_destroy,
            prices,
            live: Some(&live),
        });
        if validate_only {
            return Ok(Submitted::Plan(p));
        }
        let mut tx = db.begin().await.map_err(store::StoreError::from)?;
        let c = super::lock(&mut tx, path).await?;
        super::not_deleting(&c, path)?;
        let spec = ClusterSpecRecord {
            force_destroy,
            ..c.spec.clone()
        };
        store::clusters::set_spec(&mut *tx, c.id, &spec).await?;
        store::clusters::set_state(&mut *tx, c.id, ClusterState::Reconciling, true).await?;
        let enq = operation(
            OpRequest {
                op_type: UP,
                path,
                target: path.name(),
                team: &team,
                caller,
                cluster_id: c.id,
                pools: Vec::new(),
                new_cluster: false,
                request,
                idempotency,
            },
            &p,
        );
        return Ok(Submitted::Operation(Box::new(
            super::enqueue(tx, &enq).await?,
        )));
    }

    // A new cluster.
    let Some(acc) = req.accelerator.as_deref() else {
        return Err(Error::invalid(
            "ACCELERATOR_REQUIRED",
            format!(
                "cluster {} does not exist: creating it needs \"accelerator\" (for example \"gpu-l4\", \"tpu-v5litepod-4\", or \"cpu\" for none; GET /v1/accelerators lists them)",
                path.name()
            ),
        ));
    };
    let choice = parse_accelerator(acc)?;
    let min = req.min_nodes.unwrap_or(0);
    let mut first: Option<(String, model::NodePool)> = None;
    let mut shaped = None;
    if let Choice::Accelerator(r) = &choice {
        let spot = spot_of(r, req.spot).map_err(pool_error)?;
        let s = shape(r, min, spot, req.reservation.as_deref(), None).map_err(pool_error)?;
        let seed = id_seed(caller, path, idempotency.as_ref());
        let id = new_pool_ids(&r.pool_prefix(), 1, &[], seed.as_deref(), validate_only).remove(0);
        let record = pool_record(
            &PoolToAdd {
                id: &id,
                shape: &s,
                driver_version: None,
                zones: &[],
                paired_pool: None,
            },
            prices,
        );
        first = Some((id, record));
        shaped = Some(s);
    } else if req.spot.is_some() || req.reservation.is_some() || req.min_nodes.is_some() {
        return Err(Error::invalid(
            "NO_ACCELERATOR_POOL",
            "minNodes, spot and reservation describe the first accelerator pool; a cpu cluster has none",
        ));
    }
    let acc = match &choice {
        Choice::Accelerator(r) => Some(r),
        Choice::Cpu => None,
    };
    let mut warnings =
        check_placement(cloud, &n.project, std::slice::from_ref(&n.zone), acc).await?;
    if let (Some(s), Some(_)) = (&shaped, &first) {
        warnings.extend(check_quota(cloud, &n, s, validate_only).await?);
    }
    let force_destroy = req.force_destroy.unwrap_or(true);
    let mut p = plan(&UpInput {
        names: &n,
        cluster_exists: false,
        existing_pools: &[],
        existing_need_driver: false,
        first_pool: match (&first, &shaped) {
            (Some((id, _)), Some(s)) => Some(NewPool {
                id,
                shape: s,
                driver_version: None,
            }),
            _ => None,
        },
        accelerator_requested: true,
        force_destroy,
        prices,
        live: None,
    });
    p.warnings.extend(warnings);
    if validate_only {
        return Ok(Submitted::Plan(p));
    }
    let spec = ClusterSpecRecord {
        accelerator: Some(match &choice {
            Choice::Cpu => "cpu".to_owned(),
            Choice::Accelerator(r) => r.base_name(),
        }),
        min_nodes: Some(min),
        force_destroy,
        spot: Some(shaped.as_ref().is_some_and(|s| s.spot)),
        reservation: req.reservation.clone(),
    };
    let mut tx = db.begin().await.map_err(store::StoreError::from)?;
    let record = store::clusters::insert(
        &mut *tx,
        NewCluster {
            project_id: path.project.as_str(),
            zone: path.zone.as_str(),
            name: path.cluster.as_str(),
            team_id: &team,
            state: ClusterState::Provisioning,
            spec,
            resources: serde_json::to_value(cluster_resources(&n)).unwrap_or_default(),
            created_by: caller.email.as_str(),
        },
    )
    .await
    .map_err(|e| match e {
        store::StoreError::Db(ref d) if store::unique_violation(d).is_some() => Error::aborted(
            "CLUSTER_CHANGED",
            format!("cluster {} was created by a concurrent request; send the request again to reconcile it", path.name()),
        ),
        e => e.into(),
    })?;
    let mut pools = Vec::new();
    if let Some((id, spec)) = &first {
        store::node_pools::insert(
            &mut *tx,
            record.id,
            id,
            PoolState::Provisioning,
            &spec_of(spec),
        )
        .await?;
        pools.push(id.clone());
    }
    let enq = operation(
        OpRequest {
            op_type: UP,
            path,
            target: path.name(),
            team: &team,
            caller,
            cluster_id: record.id,
            pools,
            new_cluster: true,
            request,
            idempotency,
        },
        &p,
    );
    Ok(Submitted::Operation(Box::new(
        super::enqueue(tx, &enq).await?,
    )))
}
