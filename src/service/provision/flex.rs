//! `pool add`'s provisioning mode: the request's `provisioning`, `spot`, `reservation`,
//! `failover`, `minNodes` and `maxRunDuration` resolved into one consistent mode
//! ([`crate::domain::provisioning`]), and the GKE version a flex-start mode needs.
//!
//! Invariant: a request whose fields contradict its mode, or a flex-start pool on a GKE
//! version without flex-start for its accelerator, is refused with a 400 before any
//! record or operation exists.

use crate::cloud::Cloud;
use crate::domain::accelerators::Resolved;
use crate::domain::pricing::PriceTable;
use crate::domain::provisioning::{self, Provisioning, ProvisioningError, Resolution};

use super::super::{Error, Result};
use super::Mutation;
use super::pool_request::AddPoolRequest;
use super::version;

fn provisioning_error(e: ProvisioningError) -> Error {
    let err = Error::invalid(e.reason(), e.to_string());
    match &e {
        ProvisioningError::Conflict { mode, field, .. } => {
            err.with("provisioning", mode).with("field", field)
        }
        ProvisioningError::TooLong { text } => err.with("maxRunDuration", text).with(
            "maximum",
            format!("{}s", provisioning::FLEX_MAX_RUN_SECONDS),
        ),
        ProvisioningError::Unsupported {
            mode, accelerator, ..
        } => err
            .with("provisioning", mode)
            .with("accelerator", accelerator),
        _ => err,
    }
}

/// The request's mode, checked against its other fields and its accelerator.
pub fn resolve(acc: &Resolved, req: &AddPoolRequest) -> Result<Resolution> {
    provisioning::resolve(
        acc,
        &provisioning::Request {
            provisioning: req.provisioning.as_deref(),
            spot: req.spot,
            reservation: req.reservation.as_deref(),
            failover: req.failover.unwrap_or(false),
            min_nodes: req.min_nodes.unwrap_or(0),
            max_run_duration: req.max_run_duration.as_deref(),
        },
    )
    .map_err(provisioning_error)
}

/// A warning when a flex-start pool's estimate uses the on-demand price (the price
/// table has no flex-start price for its accelerator).
pub fn price_warning(prices: &PriceTable, acc: &Resolved, mode: Provisioning) -> Option<String> {
    match prices.per_node_in(acc, mode) {
        Some((_, false)) => Some(format!(
            "the price table has no flex-start price for {}: its estimate uses the on-demand price, an upper bound (flex-start VMs are billed at Dynamic Workload Scheduler prices; set \"flexStart\" in KINETIC_PRICES_FILE)",
            acc.gke_accelerator_type
        )),
        _ => None,
    }
}

/// A flex-start mode needs a GKE version that runs it for the accelerator: the
/// cluster's `currentMasterVersion` as GKE reports it now. A version that cannot be
/// read is a warning (GKE refuses the pool itself when it is too old).
pub async fn check_version(
    cloud: &Cloud,
    m: &Mutation,
    mode: Provisioning,
    acc: &Resolved,
) -> Result<Vec<String>> {
    let Some(min) = mode.min_version(acc) else {
        return Ok(Vec::new());
    };
    let n = m.names();
    let unread = |e: &str| format!("({e}); {mode} needs GKE {min} or later");
    let needs = format!(
        "{mode} pools of {} need GKE {min} or later: upgrade the cluster (gcloud container clusters upgrade {} --master --cluster-version=...) or ask for ON_DEMAND or SPOT",
        acc.base_name(),
        n.cluster
    );
    // The one error `require` answers is the refusal, which names the mode.
    version::require(cloud, m, &min, unread, &needs)
        .await
        .map_err(|e| e.with("provisioning", mode))
}
