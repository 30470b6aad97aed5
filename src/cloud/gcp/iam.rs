//! IAM v1 (service accounts) client.

use super::http::GcpHttp;

#[derive(Debug, Clone)]
pub struct Iam {
    #[allow(dead_code)]
    http: GcpHttp,
}

impl Iam {
    pub fn new(http: GcpHttp) -> Iam {
        Iam { http }
    }
}
