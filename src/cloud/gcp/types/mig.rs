//! Wire structs of Compute's zonal managed instance groups (`instanceGroupManagers`):
//! the managed instances a group lists and the body of `deleteInstances`.
//!
//! Invariant: field names are the discovery document's (compute v1); every field is
//! optional on input, so a group with no instances (`{}`) reads as an empty list.

use serde::{Deserialize, Serialize};

use super::list::Page;

/// One VM of a managed instance group (`ManagedInstance`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ManagedInstance {
    /// The instance's URL (`.../zones/{zone}/instances/{name}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// RUNNING, STOPPING, ... (absent while the VM is being created).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_status: Option<String>,
    /// NONE, CREATING, DELETING, RECREATING, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_action: Option<String>,
}

/// `InstanceGroupManagersListManagedInstancesResponse`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ManagedInstanceList {
    pub managed_instances: Vec<ManagedInstance>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

impl Page for ManagedInstanceList {
    type Item = ManagedInstance;
    fn into_parts(self) -> (Vec<ManagedInstance>, Option<String>) {
        (self.managed_instances, self.next_page_token)
    }
}

/// `InstanceGroupManagersDeleteInstancesRequest`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteInstancesRequest {
    /// Instance URLs (full or partial: `zones/{zone}/instances/{name}`).
    #[serde(default)]
    pub instances: Vec<String>,
    /// Proceed past instances that are not (or no longer) members of the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_instances_on_validation_error: Option<bool>,
}
