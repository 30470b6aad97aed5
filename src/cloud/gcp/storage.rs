//! Cloud Storage JSON API v1 client: buckets, objects (list, delete, media upload) and
//! bucket IAM policies.
//!
//! Invariant: object names travel percent-encoded as one path segment (`/` included);
//! a refused delete of a non-empty bucket always surfaces as reason
//! [`BUCKET_NOT_EMPTY`] (status FAILED_PRECONDITION, terminal), whether the server said
//! 409 (Google) or 412 (fake-gcs-server), so callers never mistake it for ALREADY_EXISTS;
//! a stale bucket-policy etag surfaces as ABORTED (retryable), like IAM's.

use reqwest::Method;
use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::{GcpError, RetryClass};
use super::http::Call;
use super::pages::{all_pages, paged};
use super::policy::{modify_policy, policy_client};
use super::types::iam::Policy;
use super::types::list::List;
use super::types::storage::{Bucket, BucketPolicy, Object, Objects};

/// Reason of the error [`Storage::delete_bucket`] returns for a bucket still holding
/// objects.
pub const BUCKET_NOT_EMPTY: &str = "bucketNotEmpty";

/// Largest page objects.list returns.
pub const MAX_PAGE: u32 = 1000;

const S: Service = Service::Storage;

policy_client!(Storage);

/// Paging and filtering for [`Storage::list_objects`].
#[derive(Debug, Clone, Default)]
pub struct ListObjects<'a> {
    pub prefix: Option<&'a str>,
    pub page_token: Option<&'a str>,
    pub max_results: Option<u32>,
}

/// `objects.list` of `bucket`, filtered by `prefix` (a page size and token still to add).
fn objects<'a>(bucket: &str, prefix: Option<&str>) -> Call<'a> {
    let call = Call::get(S, "objects.list", format!("b/{}/o", encode(bucket)));
    match prefix {
        Some(p) => call.query("prefix", p),
        None => call,
    }
}

impl Storage {
    /// buckets.insert: create `bucket` in `project`.
    pub async fn insert_bucket(&self, project: &str, bucket: &Bucket) -> Result<Bucket, GcpError> {
        self.http
            .call(
                Call::post(S, "buckets.insert", "b")
                    .query("project", project)
                    .json(bucket),
            )
            .await
    }

    /// buckets.get.
    pub async fn get_bucket(&self, bucket: &str) -> Result<Bucket, GcpError> {
        self.http
            .get(S, "buckets.get", format!("b/{}", encode(bucket)))
            .await
    }

    /// buckets.delete. A bucket that still holds objects fails with reason
    /// [`BUCKET_NOT_EMPTY`] (see [`is_bucket_not_empty`]).
    pub async fn delete_bucket(&self, bucket: &str) -> Result<(), GcpError> {
        self.http
            .call_unit(Call::delete(
                S,
                "buckets.delete",
                format!("b/{}", encode(bucket)),
            ))
            .await
            .map_err(bucket_delete_error)
    }

    /// objects.list: one page.
    pub async fn list_objects(
        &self,
        bucket: &str,
        opts: &ListObjects<'_>,
    ) -> Result<Objects, GcpError> {
        let call = objects(bucket, opts.prefix);
        self.http
            .call(paged(call, opts.max_results, opts.page_token))
            .await
    }

    /// objects.list, following `nextPageToken` to the end.
    pub async fn list_all_objects(
        &self,
        bucket: &str,
        prefix: Option<&str>,
        page_size: Option<u32>,
    ) -> Result<Vec<Object>, GcpError> {
        // Every page: unlike Compute's lists, a bucket's objects have no bound. A page
        // is read as the generic `List` (the same `items` and `nextPageToken`).
        let call = objects(bucket, prefix);
        all_pages::<List<Object>>(&self.http, call, page_size, usize::MAX).await
    }

    /// objects.delete.
    pub async fn delete_object(&self, bucket: &str, name: &str) -> Result<(), GcpError> {
        self.http
            .call_unit(Call::delete(
                S,
                "objects.delete",
                format!("b/{}/o/{}", encode(bucket), encode(name)),
            ))
            .await
    }

    /// Delete every (live) object in `bucket`; objects already gone are fine. Returns how
    /// many were deleted. Lists from the start each round, since deleting invalidates
    /// page tokens.
    pub async fn empty_bucket(&self, bucket: &str) -> Result<usize, GcpError> {
        let mut deleted = 0;
        loop {
            let page = self
                .list_objects(
                    bucket,
                    &ListObjects {
                        max_results: Some(MAX_PAGE),
                        ..ListObjects::default()
                    },
                )
                .await?;
            if page.items.is_empty() {
                return Ok(deleted);
            }
            for o in &page.items {
                match self.delete_object(bucket, &o.name).await {
                    Ok(()) => deleted += 1,
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }

    /// Simple media upload (`/upload/storage/v1/b/{b}/o?uploadType=media&name=`).
    pub async fn upload_object(
        &self,
        bucket: &str,
        name: &str,
        bytes: Vec<u8>,
        content_type: &str,
    ) -> Result<Object, GcpError> {
        let mut call = Call::post(S, "objects.insert", format!("b/{}/o", encode(bucket)))
            .query("uploadType", "media")
            .query("name", name);
        call.upload = Some((bytes, content_type));
        self.http.call(call).await
    }

    /// buckets.getIamPolicy (policy version 3).
    pub async fn get_bucket_iam_policy(&self, bucket: &str) -> Result<BucketPolicy, GcpError> {
        let path = format!("b/{}/iam", encode(bucket));
        let call =
            Call::get(S, "buckets.getIamPolicy", path).query("optionsRequestedPolicyVersion", 3);
        self.http.call(call).await
    }

    /// buckets.setIamPolicy. A stale `etag` fails (Storage says 412 `conditionNotMet`)
    /// with status ABORTED, retryable: redo the read-modify-write.
    pub async fn set_bucket_iam_policy(
        &self,
        bucket: &str,
        policy: &BucketPolicy,
    ) -> Result<BucketPolicy, GcpError> {
        let path = format!("b/{}/iam", encode(bucket));
        let call = Call::new(S, "buckets.setIamPolicy", Method::PUT, path);
        self.http
            .call(call.json(policy))
            .await
            .map_err(etag_conflict)
    }

    /// Read-modify-write of a bucket's policy (see [`modify_policy`]).
    pub async fn modify_bucket_iam_policy<F>(
        &self,
        bucket: &str,
        cancel: &CancellationToken,
        mutate: F,
    ) -> Result<Policy, GcpError>
    where
        F: FnMut(&mut Policy) -> bool,
    {
        let to_iam = |p: BucketPolicy| Policy {
            version: p.version,
            bindings: p.bindings,
            audit_configs: Vec::new(),
            etag: p.etag,
        };
        modify_policy(
            S.name(),
            "buckets.setIamPolicy",
            self.rmw,
            cancel,
            || async { self.get_bucket_iam_policy(bucket).await.map(to_iam) },
            |p| async move {
                let body = BucketPolicy {
                    version: p.version,
                    bindings: p.bindings,
                    etag: p.etag,
                    ..BucketPolicy::default()
                };
                self.set_bucket_iam_policy(bucket, &body).await.map(to_iam)
            },
            mutate,
        )
        .await
    }

    /// Grant each `(role, member)` on the bucket (idempotent).
    pub async fn add_bucket_bindings(
        &self,
        bucket: &str,
        grants: &[(&str, &str)],
        cancel: &CancellationToken,
    ) -> Result<Policy, GcpError> {
        self.modify_bucket_iam_policy(bucket, cancel, |p| p.add_bindings(grants))
            .await
    }
}

/// Storage reports a stale policy etag as 412 `conditionNotMet`; it is an etag conflict.
fn etag_conflict(mut e: GcpError) -> GcpError {
    if e.http_status == 412 {
        e.status = "ABORTED".into();
        e.retry = RetryClass::Retryable;
    }
    e
}

/// Whether `e` is the refusal to delete a bucket that still holds objects.
pub fn is_bucket_not_empty(e: &GcpError) -> bool {
    e.reason == BUCKET_NOT_EMPTY
}

/// buckets.delete answers a non-empty bucket with 409 `conflict` (Google) or 412
/// (fake-gcs-server); both mean the same and neither is worth retrying as is.
fn bucket_delete_error(mut e: GcpError) -> GcpError {
    if matches!(e.http_status, 409 | 412) {
        e.status = "FAILED_PRECONDITION".into();
        e.reason = BUCKET_NOT_EMPTY.into();
        e.retry = RetryClass::Terminal;
    }
    e
}

/// Percent-encode one path segment (RFC 3986 unreserved characters stay as they are).
pub fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_segments() {
        assert_eq!(encode("a/b c%é"), "a%2Fb%20c%25%C3%A9");
        assert_eq!(encode("logs-1.txt"), "logs-1.txt");
    }

    #[test]
    fn not_empty_mapping() {
        for (code, body) in [
            (
                409,
                r#"{"error":{"code":409,"message":"The bucket you tried to delete is not empty.","errors":[{"domain":"global","reason":"conflict","message":"The bucket you tried to delete is not empty."}]}}"#,
            ),
            (
                412,
                r#"{"error":{"code":412,"message":"Precondition failed"}}"#,
            ),
        ] {
            let e = bucket_delete_error(GcpError::from_response(
                "storage",
                "buckets.delete",
                code,
                body,
            ));
            assert!(is_bucket_not_empty(&e));
            assert_eq!(e.status, "FAILED_PRECONDITION");
            assert!(!e.is_retryable());
            assert!(!e.is_already_exists());
        }
    }
}
