//! The REST paths API.md promises: every one must be in the OpenAPI document (served
//! and committed alike). One list, so a new route is added to every check at once.

/// Every documented path template, `/v1/...` routes first, then the probes.
pub const DOCUMENTED: &[&str] = &[
    "/v1/me",
    "/v1/teams",
    "/v1/teams/{team}",
    "/v1/teams/{team}/members",
    "/v1/teams/{team}/members/{email}",
    "/v1/profiles",
    "/v1/profiles/{profile}",
    "/v1/profiles/{profile}:activate",
    "/v1/clusters",
    "/v1/projects/{project}/zones/{zone}/clusters",
    "/v1/projects/{project}/zones/{zone}/clusters/{cluster}",
    "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools",
    "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}",
    "/v1/operations",
    "/v1/operations/{operation}",
    "/v1/operations/{operation}:cancel",
    "/v1/operations/{operation}:wait",
    "/v1/operations/{operation}:watch",
    "/healthz",
    "/readyz",
    "/metrics",
];
