//! Artifact Registry v1 client.

use super::http::GcpHttp;

#[derive(Debug, Clone)]
pub struct ArtifactRegistry {
    #[allow(dead_code)]
    http: GcpHttp,
}

impl ArtifactRegistry {
    pub fn new(http: GcpHttp) -> ArtifactRegistry {
        ArtifactRegistry { http }
    }
}
