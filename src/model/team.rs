//! Teams, members and the caller's own view (`/v1/me`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::Role;

use super::Profile;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Team {
    /// `teams/{teamId}`.
    #[schema(example = "teams/ml-research")]
    pub name: String,
    #[schema(example = "ml-research")]
    pub team_id: String,
    pub display_name: String,
    /// GCP projects owned by the team; a project belongs to at most one team.
    pub projects: Vec<String>,
    #[schema(format = DateTime)]
    pub create_time: String,
    #[schema(format = DateTime)]
    pub update_time: String,
    pub etag: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub email: String,
    pub role: Role,
    #[schema(format = DateTime)]
    pub add_time: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamRole {
    /// `teams/{teamId}`.
    pub team: String,
    pub role: Role,
}

/// Who the caller is, as the server sees it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    pub email: String,
    /// Service admins see and change everything.
    pub admin: bool,
    pub teams: Vec<TeamRole>,
    #[schema(required = true)]
    pub active_profile: Option<Profile>,
}
