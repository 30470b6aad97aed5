//! The UPDATE_NODE_POOL workflow: a pool resize. Each `pool:{id}` step sets the GKE
//! pool's autoscaling (`nodePools.setAutoscaling`) to the bounds the operation was
//! accepted with, waits for GKE's operation, and then records the bounds (and the price
//! estimate at them) in the pool's record.
//!
//! Invariant: the autoscaling sent is the one the pool's record builds
//! ([`super::wire::node_pool`]) with the new bounds, so everything else the record says
//! (location policy, ...) is sent unchanged, and the record changes only after GKE has
//! applied the bounds: a step that fails or is cancelled leaves the record as it was,
//! and a step run again sends the same request (GKE's setAutoscaling is idempotent).
//! A resize changes no record state (the default `finish`): the pools stay RUNNING,
//! and the cluster's queue keeps every other operation on it out of the way.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::OperationType;
use crate::ops::kinds::OperationKind;
use crate::ops::record_states::Records;
use crate::ops::steps::{RpcCode, StepError, StepRecord};
use crate::ops::workflows::StepCtx;
use crate::plan::{Action, StepId};
use crate::store::persisted::CostRecord;
use crate::store::{self};

use super::{ClusterOpInput, Env, gcp_error, store_error, wire};

/// One pool's new bounds (per zone) and its estimate at them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolBounds {
    pub pool_id: String,
    #[schema(format = Int32)]
    pub min_nodes: i64,
    #[schema(format = Int32)]
    pub max_nodes: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::model::EstimatedCost>, nullable = false)]
    pub estimated_hourly_cost: Option<CostRecord>,
}

/// What a resize operation stores in its input's `request`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResizeInput {
    /// The request as received: `updateMask`, `minNodes`, `maxNodes`.
    #[serde(default)]
    pub asked: Value,
    /// Every pool the resize sets, in plan order.
    pub pools: Vec<PoolBounds>,
}

/// The response of a resize: the cluster and every pool's new bounds.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResizeResponse {
    pub cluster: String,
    pub node_pools: Vec<PoolBounds>,
}

/// The UPDATE_NODE_POOL kind on the provisioning environment.
pub struct Resize {
    env: Arc<Env>,
}

impl Resize {
    async fn set(
        &self,
        input: &ClusterOpInput<ResizeInput>,
        b: &PoolBounds,
        ctx: &StepCtx,
    ) -> Result<Value, StepError> {
        let names = input.names()?;
        let (p, z, c) = (&names.project, &names.zone, &names.cluster);
        let pool = b.pool_id.as_str();
        let mut spec = super::recorded_pool(
            &self.env,
            input.cluster_id,
            pool,
            " any more: it was removed",
        )
        .await?;
        spec.min_nodes = b.min_nodes;
        spec.max_nodes = b.max_nodes;
        let autoscaling = wire::node_pool(&names, &spec)
            .autoscaling
            .unwrap_or_default();
        let gke = &self.env.cloud.gcp.container;
        let op = match gke
            .set_node_pool_autoscaling(p, z, c, pool, &autoscaling)
            .await
        {
            Ok(op) => op,
            Err(e) if e.is_not_found() => {
                return Err(StepError::terminal(
                    RpcCode::FailedPrecondition,
                    "NODE_POOL_NOT_IN_GKE",
                    format!(
                        "node pool {pool} is recorded but GKE has no such pool ({e}): create it again from its record with up (PUT the cluster), then resize"
                    ),
                )
                .with("pool", pool));
            }
            Err(e) => return Err(gcp_error(e)),
        };
        gke.wait_operation(&op, &ctx.cancel, self.env.timing.lro)
            .await
            .map_err(gcp_error)?;
        store::node_pools::set_bounds(
            &self.env.db,
            input.cluster_id,
            pool,
            b.min_nodes,
            b.max_nodes,
            b.estimated_hourly_cost.as_ref(),
        )
        .await
        .map_err(store_error)?;
        Ok(json!({
            "poolId": pool,
            "minNodes": b.min_nodes,
            "maxNodes": b.max_nodes,
            "autoscaling": autoscaling,
        }))
    }
}

impl OperationKind for Resize {
    const TYPE: OperationType = OperationType::UpdateNodePool;
    const RECORDS: Records = Records::Untouched;
    const TEST_ONLY: bool = false;
    type Input = ClusterOpInput<ResizeInput>;
    /// The pool a step resizes.
    type Step = String;
    type Response = ResizeResponse;
    type Plan = crate::plan::Plan;

    fn steps(plan: &crate::plan::Plan) -> Vec<StepRecord> {
        super::steps(plan)
    }

    fn stored_plan(plan: &crate::plan::Plan) -> Option<Value> {
        serde_json::to_value(plan).ok()
    }

    fn build(env: &Arc<Env>) -> Self {
        Resize { env: env.clone() }
    }

    /// Two GKE updates and their waits.
    fn deadline(&self) -> Duration {
        Duration::from_secs(3600)
    }

    fn step(&self, stored: &StepRecord) -> Result<String, String> {
        let action: Action =
            serde_json::from_value(stored.input.clone()).map_err(|e| e.to_string())?;
        match action.id {
            StepId::Pool(pool) => Ok(pool),
            other => Err(format!("{other} is not a resize step")),
        }
    }

    fn run_step<'a>(
        &'a self,
        input: &'a Self::Input,
        pool: &'a String,
        ctx: &'a StepCtx,
    ) -> BoxFuture<'a, Result<Value, StepError>> {
        Box::pin(async move {
            let bounds = input
                .request
                .pools
                .iter()
                .find(|b| &b.pool_id == pool)
                .ok_or_else(|| {
                    StepError::terminal(
                        RpcCode::Internal,
                        "BAD_OPERATION_INPUT",
                        format!("no bounds for pool {pool}"),
                    )
                })?;
            self.set(input, bounds, ctx).await
        })
    }

    fn response(
        &self,
        input: &Self::Input,
        _steps: &[StepRecord],
    ) -> Result<ResizeResponse, StepError> {
        Ok(ResizeResponse {
            cluster: input.cluster_name(),
            node_pools: input.request.pools.clone(),
        })
    }
}
