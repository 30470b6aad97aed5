//! Plans: what an operation will do, as a DAG of typed actions. `validateOnly` returns a
//! plan; enqueueing stores it in the operation; the worker runs its actions as steps.
//!
//! Invariant: a [`Plan`] is a DAG whose every dependency names an action of the same
//! plan, so it can always be run (and its critical path computed). Actions name their
//! step ([`StepId`]) and resource ([`Resource`]) with types, never with strings, and an
//! action's JSON is the one plans have always stored.

mod class_object;
pub mod computeclass;
pub mod details;
pub mod down;
pub mod drill;
pub mod ids;
pub mod pools;
pub mod resize;
pub mod resources;
mod schema;
pub mod up;

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use details::Resource;
pub use ids::{Account, BucketKind, ClusterBucket, DrillStep, StepId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActionKind {
    Create,
    Keep,
    Update,
    Delete,
}

/// What names the actions of a plan: a provisioning plan's [`StepId`] or a drill's
/// [`DrillStep`] (one text form each).
pub trait ActionId:
    Clone
    + Eq
    + std::hash::Hash
    + Ord
    + std::fmt::Display
    + Serialize
    + serde::de::DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl ActionId for StepId {}
impl ActionId for DrillStep {}

/// One action on one typed resource. On the wire (and in stored operations) its fields
/// come in this order: `id`, `action`, `type`, `name`, `reason`, `details`, `dependsOn`.
/// Its OpenAPI schema is built in `plan/schema.rs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    into = "ActionWire<Id>",
    try_from = "ActionWire<Id>",
    bound = "Id: ActionId"
)]
pub struct Action<Id: ActionId = StepId> {
    /// Step id (stable within the plan), e.g. `network`, `pool:gpu-l4-1a2b`.
    pub id: Id,
    pub action: ActionKind,
    /// Full resource name.
    pub name: String,
    pub reason: String,
    /// `type` (`storage.bucket`, `compute.network`, `container.cluster`, ...) and
    /// `details`.
    pub resource: Resource,
    pub depends_on: Vec<Id>,
}

impl<Id: ActionId> Action<Id> {
    pub fn new(
        id: Id,
        action: ActionKind,
        resource: Resource,
        name: String,
        reason: impl Into<String>,
        depends_on: &[Id],
    ) -> Action<Id> {
        Action {
            id,
            action,
            name,
            reason: reason.into(),
            resource,
            depends_on: depends_on.to_vec(),
        }
    }
}

/// An action as serialized: the resource's tag and content between the other fields.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "Id: ActionId")]
struct ActionWire<Id> {
    id: Id,
    action: ActionKind,
    #[serde(rename = "type")]
    resource_type: Value,
    name: String,
    reason: String,
    #[serde(default)]
    details: Value,
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<Id>,
}

impl<Id: ActionId> From<Action<Id>> for ActionWire<Id> {
    fn from(a: Action<Id>) -> ActionWire<Id> {
        // A `Resource` is a tag and a content of plain data: it always serializes.
        let mut tagged = serde_json::to_value(&a.resource).unwrap_or_default();
        ActionWire {
            id: a.id,
            action: a.action,
            resource_type: tagged["type"].take(),
            name: a.name,
            reason: a.reason,
            details: tagged["details"].take(),
            depends_on: a.depends_on,
        }
    }
}

impl<Id: ActionId> TryFrom<ActionWire<Id>> for Action<Id> {
    type Error = serde_json::Error;

    fn try_from(w: ActionWire<Id>) -> Result<Action<Id>, serde_json::Error> {
        let tagged = serde_json::json!({"type": w.resource_type, "details": w.details});
        Ok(Action {
            id: w.id,
            action: w.action,
            name: w.name,
            reason: w.reason,
            resource: serde_json::from_value(tagged)?,
            depends_on: w.depends_on,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    #[schema(value_type = crate::model::money::Currency)]
    pub currency: String,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub at_min: f64,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub at_max: f64,
}

/// A plan: its actions (named by `Id`), warnings and cost estimate. Its OpenAPI schema
/// is the same whatever names its actions (`plan/schema.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "Id: ActionId")]
pub struct Plan<Id: ActionId = StepId> {
    pub actions: Vec<Action<Id>>,
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_hourly_cost: Option<Cost>,
    /// The preview of `up` only: the access the SYNC_ACCESS after it gives the team's
    /// roster (absent elsewhere, and when the roster is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<up::access::AccessPreview>,
    /// The team's policy on the request (pool add, up, resize): its verdict and the rules
    /// behind it. Absent on plans the policy does not judge (down, pool remove, drills).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::domain::policy::PolicyCheck>,
}

impl<Id: ActionId> Default for Plan<Id> {
    fn default() -> Self {
        Plan {
            actions: Vec::new(),
            warnings: Vec::new(),
            estimated_hourly_cost: None,
            access: None,
            policy: None,
        }
    }
}

/// Why a set of actions is not a runnable plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("action {0} appears twice")]
    Duplicate(String),
    #[error("action {action} depends on unknown action {missing}")]
    MissingDependency { action: String, missing: String },
    #[error("the actions form a cycle through {0}")]
    Cycle(String),
}

impl<Id: ActionId> Plan<Id> {
    /// Check ids are unique, dependencies exist, and there is no cycle.
    pub fn validate(&self) -> Result<(), PlanError> {
        let mut index = HashMap::new();
        for (i, a) in self.actions.iter().enumerate() {
            if index.insert(&a.id, i).is_some() {
                return Err(PlanError::Duplicate(a.id.to_string()));
            }
        }
        for a in &self.actions {
            for d in &a.depends_on {
                if !index.contains_key(d) {
                    return Err(PlanError::MissingDependency {
                        action: a.id.to_string(),
                        missing: d.to_string(),
                    });
                }
            }
        }
        self.order().map(|_| ())
    }

    /// A topological order of the actions (indices).
    fn order(&self) -> Result<Vec<usize>, PlanError> {
        let index: HashMap<&Id, usize> = self
            .actions
            .iter()
            .enumerate()
            .map(|(i, a)| (&a.id, i))
            .collect();
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut mark = vec![0u8; self.actions.len()];
        let mut out = Vec::with_capacity(self.actions.len());
        fn visit<Id: ActionId>(
            i: usize,
            plan: &Plan<Id>,
            index: &HashMap<&Id, usize>,
            mark: &mut [u8],
            out: &mut Vec<usize>,
        ) -> Result<(), PlanError> {
            match mark[i] {
                2 => return Ok(()),
                1 => return Err(PlanError::Cycle(plan.actions[i].id.to_string())),
                _ => {}
            }
            mark[i] = 1;
            for d in &plan.actions[i].depends_on {
                if let Some(&j) = index.get(d) {
                    visit(j, plan, index, mark, out)?;
                }
            }
            mark[i] = 2;
            out.push(i);
            Ok(())
        }
        for i in 0..self.actions.len() {
            visit(i, self, &index, &mut mark, &mut out)?;
        }
        Ok(out)
    }

    /// The longest chain of dependent actions, weighting each with `duration`.
    pub fn critical_path(&self, duration: impl Fn(&Action<Id>) -> f64) -> Result<f64, PlanError> {
        let order = self.order()?;
        let mut finish: BTreeMap<&Id, f64> = BTreeMap::new();
        let mut longest = 0.0f64;
        for i in order {
            let a = &self.actions[i];
            let start = a
                .depends_on
                .iter()
                .filter_map(|d| finish.get(d))
                .fold(0.0f64, |m, v| m.max(*v));
            let end = start + duration(a);
            longest = longest.max(end);
            finish.insert(&a.id, end);
        }
        Ok(longest)
    }
}

/// The names of cluster `kc` in zone `us-central1-a` of `project`, for tests.
#[cfg(test)]
pub(crate) fn test_names(project: &str) -> crate::domain::resource_names::ClusterNames {
    use crate::domain::names::{ClusterName, ProjectId, ZoneName};
    crate::domain::resource_names::ClusterNames::new(
        &ProjectId::parse(project).unwrap(),
        &ZoneName::parse("us-central1-a").unwrap(),
        &ClusterName::parse("kc").unwrap(),
    )
}
