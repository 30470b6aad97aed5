//! Cloud Storage JSON API v1 client.

use super::http::GcpHttp;

#[derive(Debug, Clone)]
pub struct Storage {
    #[allow(dead_code)]
    http: GcpHttp,
}

impl Storage {
    pub fn new(http: GcpHttp) -> Storage {
        Storage { http }
    }
}
