//! What every step of an operation on a cluster is given: the environment, the
//! cluster's record id and names, the plan action it carries out (named by the kind's
//! own id type) and the step's context. The handlers (`infra`, `gke`, `kube`,
//! `compute_class`, the drill's) take it; [`super::exec`] picks the handler.
//!
//! Invariant: a step knows its action only through its kind's id type, so a handler
//! written for one kind's steps cannot be handed another kind's.

use uuid::Uuid;

use crate::domain::resource_names::ClusterNames;
use crate::ops::steps::{RpcCode, StepError};
use crate::ops::workflows::StepCtx;
use crate::plan::{Action, ActionId, ActionKind, StepId};

use super::Env;

/// A step of an operation on a cluster: the plan action it carries out (named by `Id`: a
/// provisioning plan's [`StepId`] by default, a drill's step for a drill).
pub struct Step<'a, Id: ActionId = StepId> {
    pub env: &'a Env,
    /// The record of the cluster the operation works on.
    pub cluster_id: Uuid,
    pub names: &'a ClusterNames,
    pub action: &'a Action<Id>,
    pub ctx: &'a StepCtx,
}

impl<Id: ActionId> Step<'_, Id> {
    pub fn deleting(&self) -> bool {
        self.action.action == ActionKind::Delete
    }

    /// A resource with our name that we did not create.
    pub fn foreign(&self, what: &str, name: &str, why: &str) -> StepError {
        StepError::terminal(
            RpcCode::FailedPrecondition,
            "RESOURCE_NOT_OURS",
            format!(
                "{what} {name} already exists but was not created by kinetic ({why}): delete or rename it, or use another cluster name"
            ),
        )
        .with("resource", name)
    }
}
