//! GKE (container.googleapis.com v1) client.

use super::http::GcpHttp;

#[derive(Debug, Clone)]
pub struct Container {
    #[allow(dead_code)]
    http: GcpHttp,
}

impl Container {
    pub fn new(http: GcpHttp) -> Container {
        Container { http }
    }
}
