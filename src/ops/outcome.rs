//! How one run of an operation by a worker ended.
//!
//! Invariant: `Finished` is written only after the final state was committed under the
//! run's lease; the other two mean this worker wrote nothing more.

use crate::domain::OperationState;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Ended in this state (SUCCEEDED, FAILED, CANCELLED).
    Finished(OperationState),
    /// Another worker owns the operation now; nothing more was written.
    LeaseLost,
    /// Shutdown: the lease was handed back for another worker to resume.
    Released,
}
