//! Compute's `Operation` resource as the simulator makes and moves it, whatever its
//! scope (`global`, `regions/{r}`, `zones/{z}`): made PENDING at progress 0, RUNNING at
//! 50, DONE at 100 with its end time.
//!
//! Invariant: an operation's `selfLink` is `{scope}/operations/{name}`, and its status
//! and progress only ever move forward together.

use crate::cloud::gcp::types::compute::Operation;

/// A new PENDING operation `name` of `operation_type` in `scope` (the scope's URL),
/// inserted and started at `stamp`.
pub(super) fn pending(scope: &str, name: &str, operation_type: &str, stamp: &str) -> Operation {
    Operation {
        id: Some(rand::random::<u64>().to_string()),
        kind: Some("compute#operation".into()),
        name: name.to_owned(),
        operation_type: operation_type.into(),
        status: "PENDING".into(),
        progress: Some(0),
        self_link: Some(format!("{scope}/operations/{name}")),
        user: Some("kineticd-sim@example.com".into()),
        insert_time: Some(stamp.to_owned()),
        start_time: Some(stamp.to_owned()),
        ..Operation::default()
    }
}

/// Mark `op` RUNNING.
pub(super) fn run(op: &mut Operation) {
    op.status = "RUNNING".into();
    op.progress = Some(50);
}

/// Mark `op` DONE at `end`.
pub(super) fn finish(op: &mut Operation, end: String) {
    op.status = "DONE".into();
    op.progress = Some(100);
    op.end_time = Some(end);
}

/// An operation done as soon as it is made (at `stamp`): [`pending`], then [`finish`]ed.
pub(super) fn done(scope: &str, name: &str, operation_type: &str, stamp: &str) -> Operation {
    let mut op = pending(scope, name, operation_type, stamp);
    finish(&mut op, stamp.to_owned());
    op
}
