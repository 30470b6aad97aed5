//! The end of approvals nobody gave: PENDING_APPROVAL operations past their expiry end
//! CANCELLED with reason APPROVAL_EXPIRED (decided by `kineticd:approval-expiry`), and
//! the statuses a rejected or expired operation ends with.
//!
//! Invariant: an expiry ends only operations still pending, each once, under the row
//! locks of [`crate::store::approvals`]; replicas sweeping together skip each other's
//! rows.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::domain::RpcCode;
use crate::store::{Db, StoreError, approvals, operations};

use super::steps::status_json;

/// Who ends an expired approval in the audit trail and the approval record.
pub const EXPIRY_ACTOR: &str = "kineticd:approval-expiry";

/// The error of an operation an ADMIN or OWNER rejected (the comment in its message and
/// metadata).
pub fn rejected_status(by: &str, comment: Option<&str>) -> Value {
    let mut meta = BTreeMap::new();
    meta.insert("rejectedBy".to_owned(), by.to_owned());
    if let Some(c) = comment {
        meta.insert("comment".to_owned(), c.to_owned());
    }
    let message = match comment {
        Some(c) => format!("the request was rejected: {c}"),
        None => "the request was rejected".to_owned(),
    };
    status_json(RpcCode::Cancelled, &message, "APPROVAL_REJECTED", &meta)
}

fn expired_status() -> Value {
    status_json(
        RpcCode::Cancelled,
        "nobody approved the request before its approval expired; send it again",
        "APPROVAL_EXPIRED",
        &BTreeMap::new(),
    )
}

/// End up to `limit` expired approvals; returns how many ended.
pub async fn expire_due(db: &Db, limit: i64) -> Result<usize, StoreError> {
    let mut tx = db.begin().await?;
    let ids = approvals::expired(&mut tx, limit).await?;
    let error = expired_status();
    let mut ended = Vec::new();
    for id in &ids {
        if let Some(row) =
            approvals::end(&mut tx, *id, "EXPIRED", EXPIRY_ACTOR, None, &error).await?
        {
            ended.push(format!("{}:CANCELLED", row.id));
        }
    }
    tx.commit().await?;
    if !ended.is_empty() {
        operations::announce(db, &ended).await?;
        tracing::info!(expired = ended.len(), "approvals expired");
    }
    Ok(ended.len())
}
