//! The FAILOVER_DRILL workflow: reclaim the spot pool of a failover pair ([`reclaim`]:
//! its VMs through their managed instance groups, or the whole pool, created again from
//! its record by the provisioning steps), then watch the failover through the cluster's
//! Kubernetes API ([`watch`]) and report its timeline ([`crate::model::drill`]).
//!
//! Invariant: a drill changes no record (the default `finish`: the pair stays as
//! recorded, RUNNING), and it reaches the cloud only through the production clients; the
//! watch's deadline counts from the reclaim, in real time, so a drill resumed by another
//! worker keeps the deadline it was given.

mod reclaim;
mod track;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::drill::DrillMode;
use crate::ops::steps::{RpcCode, StepError, StepRecord};
use crate::ops::workflows::{StepCtx, Workflow};
use crate::plan::{Action, DrillStep, StepId};
use crate::store::operations::OperationRow;

use super::exec::Step;
use super::{ClusterOpInput, Env, gke};

pub const DRILL: &str = "FAILOVER_DRILL";

/// What a drill operation stores in its input's `request`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrillInput {
    pub mode: DrillMode,
    pub spot_pool: String,
    pub fallback_pool: String,
    pub deadline_seconds: f64,
}

impl DrillInput {
    fn of(input: &ClusterOpInput) -> Result<DrillInput, StepError> {
        serde_json::from_value(input.request.clone())
            .map_err(|e| bad_input(format!("drill request: {e}")))
    }

    fn deadline(&self) -> Duration {
        Duration::try_from_secs_f64(self.deadline_seconds).unwrap_or(Duration::ZERO)
    }
}

fn bad_input(message: String) -> StepError {
    StepError::terminal(RpcCode::Internal, "BAD_OPERATION_INPUT", message)
}

/// The FAILOVER_DRILL workflow on the provisioning environment.
pub struct DrillWorkflow {
    env: Arc<Env>,
}

impl DrillWorkflow {
    pub fn new(env: Arc<Env>) -> DrillWorkflow {
        DrillWorkflow { env }
    }
}

impl Workflow for DrillWorkflow {
    fn op_type(&self) -> &'static str {
        DRILL
    }

    /// The longest watch (6 h) plus a pool's deletion and re-creation.
    fn deadline(&self) -> Duration {
        Duration::from_secs(8 * 3600)
    }

    fn run_step<'a>(&'a self, ctx: &'a StepCtx) -> BoxFuture<'a, Result<Value, StepError>> {
        Box::pin(async move {
            let input: ClusterOpInput = serde_json::from_value(ctx.op.input.clone())
                .map_err(|e| bad_input(format!("operation input: {e}")))?;
            let action: Action = serde_json::from_value(ctx.step.input.clone())
                .map_err(|e| bad_input(format!("step {} input: {e}", ctx.step.id)))?;
            let drill = DrillInput::of(&input)?;
            let names = input.names()?;
            let step = Step {
                env: &self.env,
                input: &input,
                names: &names,
                action: &action,
                ctx,
            };
            match &action.id {
                StepId::Drill(DrillStep::Reclaim) => reclaim::reclaim(&step, &drill).await,
                StepId::Drill(DrillStep::Recreate) => {
                    gke::ensure_pool(&step, &drill.spot_pool).await
                }
                StepId::Drill(DrillStep::Watch) => watch::watch(&step, &drill).await,
                other => Err(bad_input(format!("step {other} is not a drill step"))),
            }
        })
    }

    fn response(&self, _op: &OperationRow, steps: &[StepRecord]) -> Value {
        let watch = StepId::Drill(DrillStep::Watch).to_string();
        steps
            .iter()
            .find(|s| s.id == watch)
            .and_then(|s| s.result.clone())
            .unwrap_or(Value::Null)
    }
}
