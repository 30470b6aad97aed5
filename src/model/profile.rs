//! Profiles: a caller's named pointers at clusters.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// `profiles/{profileId}`.
    #[schema(example = "profiles/research")]
    pub name: String,
    pub profile_id: String,
    /// `projects/{p}/zones/{z}/clusters/{c}`.
    #[schema(example = "projects/my-gcp-project/zones/us-central1-a/clusters/kinetic-cluster")]
    pub cluster: String,
    #[schema(example = "default")]
    pub namespace: String,
    /// The caller's one active profile.
    pub active: bool,
    /// The cluster no longer exists (or is not visible to the caller).
    pub stale: bool,
    #[schema(format = DateTime)]
    pub create_time: String,
    #[schema(format = DateTime)]
    pub update_time: String,
}
