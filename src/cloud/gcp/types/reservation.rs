//! Wire structs of Compute Engine zonal reservations (compute v1 `Reservation`): what
//! kineticd reads to check a pool bound to a specific reservation, and what the
//! simulator (and `gcloud compute reservations create`) sends to make one.
//!
//! Invariant: every field name and type is the discovery document's (`compute.v1.json`):
//! `count`, `inUseCount`, `assuredCount` are int64 (JSON strings, numbers accepted),
//! `acceleratorCount` is int32, `id` uint64 (an opaque string), enums are strings;
//! unset optional fields are not sent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::int64;
use super::list::List;
use super::uint64_id::id_string;

/// `Reservation` (zonal).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Reservation {
    #[serde(
        deserialize_with = "id_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    /// `compute#reservation`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The VMs it holds (a reservation of one machine shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub specific_reservation: Option<AllocationSpecificSkuReservation>,
    /// true: only VMs that name the reservation consume it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub specific_reservation_required: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_settings: Option<ShareSettings>,
    /// Zone URL (output; a name is accepted on insert).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// CREATING | DELETING | INVALID | READY | UPDATING.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commitment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub satisfies_pzs: Option<bool>,
}

/// `AllocationSpecificSKUReservation`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AllocationSpecificSkuReservation {
    /// VMs reserved.
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// VMs consuming it now (output only).
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub in_use_count: Option<i64>,
    /// Output only.
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub assured_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_properties: Option<ReservedInstanceProperties>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_instance_template: Option<String>,
}

impl AllocationSpecificSkuReservation {
    /// VMs reserved and not in use (never negative).
    pub fn free(&self) -> i64 {
        (self.count.unwrap_or(0) - self.in_use_count.unwrap_or(0)).max(0)
    }
}

/// `AllocationSpecificSKUAllocationReservedInstanceProperties`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReservedInstanceProperties {
    /// A machine type name, `a2-highgpu-1g` (not a URL).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub machine_type: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guest_accelerators: Vec<ReservedAccelerator>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_cpu_platform: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location_hint: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub local_ssds: Vec<ReservedDisk>,
}

/// `AcceleratorConfig` (Compute's: int32 count, type `nvidia-l4` or a URL).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReservedAccelerator {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accelerator_count: Option<i32>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub accelerator_type: String,
}

/// `AllocationSpecificSKUAllocationAllocatedInstancePropertiesReservedDisk`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReservedDisk {
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub disk_size_gb: Option<i64>,
    /// NVME | SCSI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
}

/// `ShareSettings`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ShareSettings {
    /// LOCAL | SPECIFIC_PROJECTS | ORGANIZATION | SHARE_TYPE_UNSPECIFIED.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_type: Option<String>,
    /// Project id -> its config (SPECIFIC_PROJECTS).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub project_map: BTreeMap<String, ShareSettingsProjectConfig>,
}

impl ShareSettings {
    /// Whether a reservation with these settings, owned by `owner`, may be consumed by
    /// VMs of `project`.
    pub fn shared_with(settings: Option<&ShareSettings>, owner: &str, project: &str) -> bool {
        if owner == project {
            return true;
        }
        settings.is_some_and(|s| match s.share_type.as_deref() {
            Some("SPECIFIC_PROJECTS") => s
                .project_map
                .iter()
                .any(|(k, v)| k == project || v.project_id.as_deref() == Some(project)),
            // Shared with the owner's organization: membership cannot be told from here.
            Some("ORGANIZATION") => true,
            _ => false,
        })
    }
}

/// `ShareSettingsProjectConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ShareSettingsProjectConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
}

/// `ReservationList` (one page).
pub type ReservationList = List<Reservation>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int64_counts_are_strings() {
        let r: Reservation = serde_json::from_value(serde_json::json!({
            "name": "r1",
            "zone": "https://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a",
            "specificReservation": {"count": "4", "inUseCount": 1,
                "instanceProperties": {"machineType": "g2-standard-4",
                    "guestAccelerators": [{"acceleratorType": "nvidia-l4", "acceleratorCount": 1}]}},
            "shareSettings": {"shareType": "SPECIFIC_PROJECTS", "projectMap": {"c": {"projectId": "c"}}}
        }))
        .unwrap();
        let s = r.specific_reservation.as_ref().unwrap();
        assert_eq!((s.count, s.in_use_count, s.free()), (Some(4), Some(1), 3));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["specificReservation"]["count"], "4");
        assert_eq!(v["specificReservation"]["inUseCount"], "1");
        assert!(ShareSettings::shared_with(
            r.share_settings.as_ref(),
            "p",
            "c"
        ));
        assert!(!ShareSettings::shared_with(
            r.share_settings.as_ref(),
            "p",
            "d"
        ));
        assert!(ShareSettings::shared_with(None, "p", "p"));
    }
}
