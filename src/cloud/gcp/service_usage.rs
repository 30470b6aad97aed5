//! Service Usage v1 client.

use super::http::GcpHttp;

#[derive(Debug, Clone)]
pub struct ServiceUsage {
    #[allow(dead_code)]
    http: GcpHttp,
}

impl ServiceUsage {
    pub fn new(http: GcpHttp) -> ServiceUsage {
        ServiceUsage { http }
    }
}
