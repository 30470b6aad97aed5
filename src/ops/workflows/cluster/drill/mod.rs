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

use crate::domain::OperationType;
use crate::model::drill::{DrillMode, DrillReport};
use crate::ops::kinds::OperationKind;
use crate::ops::record_states::Records;
use crate::ops::steps::{RpcCode, StepError, StepRecord};
use crate::ops::workflows::StepCtx;
use crate::plan::{Action, DrillStep, Plan};

use super::{ClusterOpInput, Env, gke};

/// A step of a drill: the drill action it carries out.
type Step<'a> = super::step::Step<'a, DrillStep>;

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
    fn deadline(&self) -> Duration {
        Duration::try_from_secs_f64(self.deadline_seconds).unwrap_or(Duration::ZERO)
    }
}

fn bad_result(message: String) -> StepError {
    StepError::terminal(RpcCode::Internal, "BAD_STEP_RESULT", message)
}

/// The FAILOVER_DRILL kind on the provisioning environment.
pub struct Drill {
    env: Arc<Env>,
}

impl OperationKind for Drill {
    const TYPE: OperationType = OperationType::FailoverDrill;
    const RECORDS: Records = Records::Untouched;
    const TEST_ONLY: bool = false;
    type Input = ClusterOpInput<DrillInput>;
    /// One of the drill's steps: the plan action it carries out.
    type Step = Action<DrillStep>;
    /// The watch step's report.
    type Response = DrillReport;
    type Plan = Plan<DrillStep>;

    /// One step per action; the watch reads what the reclaim saw before it deleted
    /// anything.
    fn steps(plan: &Plan<DrillStep>) -> Vec<StepRecord> {
        let reclaim = DrillStep::Reclaim.to_string();
        let watch = DrillStep::Watch.to_string();
        let mut steps = super::steps(plan);
        for s in steps.iter_mut().filter(|s| s.id == watch) {
            s.reads = vec![reclaim.clone()];
        }
        steps
    }

    fn stored_plan(plan: &Plan<DrillStep>) -> Option<Value> {
        serde_json::to_value(plan).ok()
    }

    fn build(env: &Arc<Env>) -> Self {
        Drill { env: env.clone() }
    }

    /// The longest watch (6 h) plus a pool's deletion and re-creation.
    fn deadline(&self) -> Duration {
        Duration::from_secs(8 * 3600)
    }

    fn step(&self, stored: &StepRecord) -> Result<Action<DrillStep>, String> {
        serde_json::from_value(stored.input.clone()).map_err(|e| e.to_string())
    }

    fn run_step<'a>(
        &'a self,
        input: &'a Self::Input,
        action: &'a Action<DrillStep>,
        ctx: &'a StepCtx,
    ) -> BoxFuture<'a, Result<Value, StepError>> {
        Box::pin(async move {
            let drill = &input.request;
            let names = input.names()?;
            let step = Step {
                env: &self.env,
                cluster_id: input.cluster_id,
                names: &names,
                action,
                ctx,
            };
            match action.id {
                DrillStep::Reclaim => reclaim::reclaim(&step, drill).await,
                DrillStep::Recreate => gke::ensure_pool(&step, &drill.spot_pool).await,
                DrillStep::Watch => watch::watch(&step, drill).await,
            }
        })
    }

    fn response(
        &self,
        _input: &Self::Input,
        steps: &[StepRecord],
    ) -> Result<DrillReport, StepError> {
        let watch = DrillStep::Watch.to_string();
        let result = steps
            .iter()
            .find(|s| s.id == watch)
            .and_then(|s| s.result.clone())
            .ok_or_else(|| bad_result("the drill ended without its watch step's report".into()))?;
        serde_json::from_value(result)
            .map_err(|e| bad_result(format!("the watch step's report does not read: {e}")))
    }
}
