//! A plan becomes the steps of its operation: one step per action, in plan order, with
//! the action's id, dependencies, and the action itself as the step's input.
//!
//! Invariant: a step's id and dependencies are its action's, written in their text form,
//! so the runner orders steps exactly as the plan does, and the workflow reads each step's
//! input back as the [`Action`] it was made from.

use serde_json::Value;

use crate::ops::steps::StepRecord;
use crate::plan::{Action, ActionId, Plan};

/// The operation's steps for `plan`.
pub fn steps<Id: ActionId>(plan: &Plan<Id>) -> Vec<StepRecord> {
    plan.actions.iter().map(step).collect()
}

fn step<Id: ActionId>(a: &Action<Id>) -> StepRecord {
    let deps: Vec<String> = a.depends_on.iter().map(ToString::to_string).collect();
    let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
    let verb = format!("{:?}", a.action).to_lowercase();
    StepRecord::new(
        a.id.to_string(),
        format!("{verb} {} {}", a.resource.type_name(), a.name),
    )
    .after(&deps)
    .with_input(serde_json::to_value(a).unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::down::{DownInput, plan};

    #[test]
    fn one_step_per_action_with_its_dependencies_and_the_action_as_input() {
        let n = crate::plan::test_names("my-project");
        let p = plan(&DownInput {
            names: &n,
            pools: &["gpu-l4-1a2b".to_owned()],
            force_destroy: false,
        });
        let steps = steps(&p);
        assert_eq!(steps.len(), p.actions.len());
        let cluster = steps.iter().find(|s| s.id == "cluster").unwrap();
        assert_eq!(cluster.depends_on, ["pool:gpu-l4-1a2b"]);
        assert_eq!(
            cluster.description,
            "delete container.cluster projects/my-project/locations/us-central1-a/clusters/kc"
        );
        for (s, a) in steps.iter().zip(&p.actions) {
            let back: Action = serde_json::from_value(s.input.clone()).unwrap();
            assert_eq!(&back, a);
        }
    }
}
