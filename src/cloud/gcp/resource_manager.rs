//! Cloud Resource Manager v3 (project IAM policy) client.

use super::http::GcpHttp;

#[derive(Debug, Clone)]
pub struct ResourceManager {
    #[allow(dead_code)]
    http: GcpHttp,
}

impl ResourceManager {
    pub fn new(http: GcpHttp) -> ResourceManager {
        ResourceManager { http }
    }
}
