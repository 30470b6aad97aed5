//! Compute Engine (compute v1) client.

use super::http::GcpHttp;

#[derive(Debug, Clone)]
pub struct Compute {
    #[allow(dead_code)]
    http: GcpHttp,
}

impl Compute {
    pub fn new(http: GcpHttp) -> Compute {
        Compute { http }
    }
}
