//! The states of clusters, node pools, operations and their steps, and the types of
//! operations: one enum each, with
//! the exact SCREAMING_SNAKE strings the API shows and the database stores.
//!
//! Invariant: `as_str` and `parse` are inverses over each enum's `ALL`, and serde uses
//! the same strings, so a state read back is the state written.

use std::fmt;

/// A state string that names no state of its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a {kind} (one of {known})")]
pub struct UnknownState {
    pub kind: &'static str,
    pub value: String,
    pub known: String,
}

macro_rules! states {
    ($(#[$doc:meta])* $name:ident, $kind:literal { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every state, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and shown string (`RUNNING`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The state a string names.
            pub fn parse(s: &str) -> Result<$name, UnknownState> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| UnknownState {
                    kind: $kind,
                    value: s.chars().take(40).collect(),
                    known: $name::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", "),
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownState;
            fn from_str(s: &str) -> Result<$name, UnknownState> {
                $name::parse(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = UnknownState;
            fn try_from(s: String) -> Result<$name, UnknownState> {
                $name::parse(&s)
            }
        }
    };
}

states!(
    /// A cluster record's state: settled (RUNNING, ERROR, DELETED) or an unfinished
    /// operation's intent (PROVISIONING, RECONCILING, DELETING).
    ClusterState, "cluster state" {
        Provisioning = "PROVISIONING",
        Running = "RUNNING",
        Reconciling = "RECONCILING",
        Deleting = "DELETING",
        Deleted = "DELETED",
        Error = "ERROR",
    }
);

states!(
    /// A node pool record's state: settled (RUNNING, ERROR, DELETED) or an unfinished
    /// operation's intent (PROVISIONING, STOPPING; RECONCILING is allowed by the schema).
    PoolState, "node pool state" {
        Provisioning = "PROVISIONING",
        Running = "RUNNING",
        Reconciling = "RECONCILING",
        Stopping = "STOPPING",
        Deleted = "DELETED",
        Error = "ERROR",
    }
);

states!(
    /// The state a cluster or pool record rests in once no operation holds it.
    SettledState, "settled state" {
        Running = "RUNNING",
        Error = "ERROR",
        Deleted = "DELETED",
    }
);

states!(
    /// An operation's state; SUCCEEDED, FAILED and CANCELLED are final.
    OperationState, "operation state" {
        /// Waiting for an ADMIN's or OWNER's approval (the team's policy asks for it):
        /// claimed by no worker, blocking nothing, CANCELLED when it expires.
        PendingApproval = "PENDING_APPROVAL",
        Queued = "QUEUED",
        Running = "RUNNING",
        Succeeded = "SUCCEEDED",
        Failed = "FAILED",
        Cancelling = "CANCELLING",
        Cancelled = "CANCELLED",
    }
);

states!(
    /// A step's state within its operation.
    StepState, "step state" {
        Pending = "PENDING",
        Running = "RUNNING",
        Done = "DONE",
        Skipped = "SKIPPED",
        Failed = "FAILED",
        Cancelled = "CANCELLED",
    }
);

// One variant per kind of operation the engine runs, each registered once in
// `ops::kinds` with its typed input, steps, records and response; the `type=` filter,
// the OpenAPI enum and the worker registry all read this list.
states!(
    /// The kind of change an operation carries out.
    OperationType, "operation type" {
        /// `up`: create or repair a cluster.
        UpCluster = "UP_CLUSTER",
        /// `down`: delete a cluster and what `up` made for it.
        DownCluster = "DOWN_CLUSTER",
        /// Add a node pool (a failover pair counts as one).
        AddNodePool = "ADD_NODE_POOL",
        /// Remove a node pool (with its failover pair).
        RemoveNodePool = "REMOVE_NODE_POOL",
        /// Resize a node pool in place.
        UpdateNodePool = "UPDATE_NODE_POOL",
        /// Reclaim a spot pool and time its failover.
        FailoverDrill = "FAILOVER_DRILL",
        /// Converge the cluster's IAM and RBAC with its team's roster.
        SyncAccess = "SYNC_ACCESS",
        /// The engine's test workflow (development and test mode only).
        Noop = "NOOP",
    }
);

impl StepState {
    /// DONE or SKIPPED: later steps may start.
    pub fn finished_ok(self) -> bool {
        matches!(self, StepState::Done | StepState::Skipped)
    }
}

impl OperationType {
    /// Whether it counts toward a team's cap of unfinished operations: SYNC_ACCESS does
    /// not (at most one is queued per cluster, and a roster change must never be refused
    /// because the team is busy).
    pub fn counts_toward_cap(self) -> bool {
        !matches!(self, OperationType::SyncAccess)
    }
}

impl OperationState {
    /// SUCCEEDED, FAILED or CANCELLED: the operation will not change again.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            OperationState::Succeeded | OperationState::Failed | OperationState::Cancelled
        )
    }
}

impl SettledState {
    /// The settled state a cluster shows as.
    pub fn cluster(self) -> ClusterState {
        match self {
            SettledState::Running => ClusterState::Running,
            SettledState::Error => ClusterState::Error,
            SettledState::Deleted => ClusterState::Deleted,
        }
    }

    /// The settled state a pool shows as.
    pub fn pool(self) -> PoolState {
        match self {
            SettledState::Running => PoolState::Running,
            SettledState::Error => PoolState::Error,
            SettledState::Deleted => PoolState::Deleted,
        }
    }
}

impl Default for PoolState {
    /// A pool is PROVISIONING until its first operation settles it.
    fn default() -> PoolState {
        PoolState::Provisioning
    }
}

impl ClusterState {
    /// The settled state this is, if it is one.
    pub fn settled(self) -> Option<SettledState> {
        SettledState::parse(self.as_str()).ok()
    }
}

impl PoolState {
    /// The settled state this is, if it is one.
    pub fn settled(self) -> Option<SettledState> {
        SettledState::parse(self.as_str()).ok()
    }
}

// The kinds of the audit trail's events (`events.type`; the `type=` filter of the event
// lists). OPERATION_STATE_CHANGED is written by the database itself (a trigger on
// `operations`, migration 0009), so its string is fixed there too.
states!(
    /// What an audit event records.
    EventType, "event type" {
        /// A state-changing request (API or console) that was answered with success.
        RequestAccepted = "REQUEST_ACCEPTED",
        /// A state-changing request refused (by role, by policy, by validation, ...);
        /// `details.reason` is the error's reason.
        RequestRefused = "REQUEST_REFUSED",
        /// An operation entered a state (`details.from`, `details.to`).
        OperationStateChanged = "OPERATION_STATE_CHANGED",
        /// An operation waiting for approval was approved and queued.
        OperationApproved = "OPERATION_APPROVED",
        /// An operation waiting for approval was rejected.
        OperationRejected = "OPERATION_REJECTED",
        /// Someone joined the team (`details.after`: the role; `before` is null).
        MemberAdded = "MEMBER_ADDED",
        /// Someone left the team (`details.before`: the role they had; `after` is null).
        MemberRemoved = "MEMBER_REMOVED",
        /// A member's role changed (`details.before`, `details.after`).
        MemberRoleChanged = "MEMBER_ROLE_CHANGED",
        /// The team's policy changed (before and after).
        PolicyChanged = "POLICY_CHANGED",
        /// A kubeconfig was given out for a cluster (never the kubeconfig itself).
        CredentialsIssued = "CREDENTIALS_ISSUED",
        /// A team was created.
        TeamCreated = "TEAM_CREATED",
        /// A team was deleted.
        TeamDeleted = "TEAM_DELETED",
        /// The team's measured spend this month crossed 50, 80 or 100% of its budget
        /// (`details.thresholdPercent`, `spentUsd`, `budgetUsd`, `month`); once each.
        BudgetThreshold = "BUDGET_THRESHOLD",
        /// An idle rule will act on a pool or cluster at `details.actTime` unless it is
        /// used or snoozed (`rule`, `action`, `idleSince`).
        IdleWarning = "IDLE_WARNING",
        /// An idle rule started an operation (`details.operation`, `action`, `rule`).
        IdleAction = "IDLE_ACTION",
        /// A member postponed idle actions (and a cluster's TTL) to
        /// `details.snoozedUntil`.
        IdleSnoozed = "IDLE_SNOOZED",
        /// A cluster's TTL runs out at `details.actTime` (`expireTime`).
        TtlWarning = "TTL_WARNING",
        /// A cluster's TTL ran out: the rule started its `down` (`details.operation`).
        TtlExpired = "TTL_EXPIRED",
        /// A webhook was added to the team (`details`: its URL's host, events and
        /// format; never its secret).
        WebhookCreated = "WEBHOOK_CREATED",
        /// A webhook was removed from the team.
        WebhookDeleted = "WEBHOOK_DELETED",
        /// Spot nodes of a pool were reclaimed.
        SpotReclaimed = "SPOT_RECLAIMED",
        /// A node pool GKE had without a record was imported (`details.record`: what
        /// the record says).
        PoolImported = "POOL_IMPORTED",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_through_parse_and_serde() {
        for s in OperationState::ALL {
            assert_eq!(OperationState::parse(s.as_str()), Ok(*s));
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, s.as_str());
        }
        for s in StepState::ALL {
            assert_eq!(s.as_str().parse::<StepState>(), Ok(*s));
        }
        let e = ClusterState::parse("running").unwrap_err();
        assert!(e.to_string().contains("PROVISIONING, RUNNING"), "{e}");
    }

    #[test]
    fn settled_states_show_as_themselves() {
        for s in SettledState::ALL {
            assert_eq!(s.cluster().settled(), Some(*s));
            assert_eq!(s.pool().settled(), Some(*s));
        }
        assert_eq!(ClusterState::Deleting.settled(), None);
        assert_eq!(PoolState::Stopping.settled(), None);
    }
}
