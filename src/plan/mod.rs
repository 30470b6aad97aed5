//! Plans: what an operation will do, as a DAG of typed actions. `validateOnly` returns a
//! plan; enqueueing stores it in the operation; the worker runs its actions as steps.
//!
//! Invariant: a [`Plan`] is a DAG whose every dependency names an action of the same
//! plan, so it can always be run (and its critical path computed).

pub mod down;
pub mod pools;
pub mod resources;
pub mod up;

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ops::steps::StepRecord;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActionKind {
    Create,
    Keep,
    Update,
    Delete,
}

/// One action on one typed resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// Step id (stable within the plan), e.g. `network`, `pool:gpu-l4-1a2b`.
    pub id: String,
    pub action: ActionKind,
    /// `storage.bucket`, `compute.network`, `container.cluster`, ...
    #[serde(rename = "type")]
    pub resource_type: String,
    /// Full resource name.
    pub name: String,
    pub reason: String,
    #[serde(default)]
    pub details: Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub currency: String,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub at_min: f64,
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub at_max: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub actions: Vec<Action>,
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_hourly_cost: Option<Cost>,
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

impl Plan {
    /// Check ids are unique, dependencies exist, and there is no cycle.
    pub fn validate(&self) -> Result<(), PlanError> {
        let mut index = HashMap::new();
        for (i, a) in self.actions.iter().enumerate() {
            if index.insert(a.id.as_str(), i).is_some() {
                return Err(PlanError::Duplicate(a.id.clone()));
            }
        }
        for a in &self.actions {
            for d in &a.depends_on {
                if !index.contains_key(d.as_str()) {
                    return Err(PlanError::MissingDependency {
                        action: a.id.clone(),
                        missing: d.clone(),
                    });
                }
            }
        }
        self.order().map(|_| ())
    }

    /// A topological order of the actions (indices).
    fn order(&self) -> Result<Vec<usize>, PlanError> {
        let index: HashMap<&str, usize> = self
            .actions
            .iter()
            .enumerate()
            .map(|(i, a)| (a.id.as_str(), i))
            .collect();
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut mark = vec![0u8; self.actions.len()];
        let mut out = Vec::with_capacity(self.actions.len());
        fn visit(
            i: usize,
            plan: &Plan,
            index: &HashMap<&str, usize>,
            mark: &mut [u8],
            out: &mut Vec<usize>,
        ) -> Result<(), PlanError> {
            match mark[i] {
                2 => return Ok(()),
                1 => return Err(PlanError::Cycle(plan.actions[i].id.clone())),
                _ => {}
            }
            mark[i] = 1;
            for d in &plan.actions[i].depends_on {
                if let Some(&j) = index.get(d.as_str()) {
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
    pub fn critical_path(&self, duration: impl Fn(&Action) -> f64) -> Result<f64, PlanError> {
        let order = self.order()?;
        let mut finish: BTreeMap<&str, f64> = BTreeMap::new();
        let mut longest = 0.0f64;
        for i in order {
            let a = &self.actions[i];
            let start = a
                .depends_on
                .iter()
                .filter_map(|d| finish.get(d.as_str()))
                .fold(0.0f64, |m, v| m.max(*v));
            let end = start + duration(a);
            longest = longest.max(end);
            finish.insert(a.id.as_str(), end);
        }
        Ok(longest)
    }

    /// The operation's steps: one per action, in plan order, with its dependencies.
    pub fn steps(&self) -> Vec<StepRecord> {
        self.actions
            .iter()
            .map(|a| {
                let deps: Vec<&str> = a.depends_on.iter().map(String::as_str).collect();
                StepRecord::new(
                    &a.id,
                    format!(
                        "{} {} {}",
                        format!("{:?}", a.action).to_lowercase(),
                        a.resource_type,
                        a.name
                    ),
                )
                .after(&deps)
                .with_input(serde_json::to_value(a).unwrap_or(Value::Null))
            })
            .collect()
    }
}
