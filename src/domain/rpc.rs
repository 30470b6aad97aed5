//! The google.rpc.Code table: every canonical code with its number, its name and its
//! HTTP status (AIP-193), once for the whole crate.
//!
//! Invariant: `number`, `name` and `from_number`/`from_name` are exact inverses over
//! [`RpcCode::ALL`]; HTTP statuses map to codes and back as Google's APIs do.

use std::fmt;

/// The `@type` of a google.rpc.ErrorInfo detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// A google.rpc.Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum RpcCode {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl RpcCode {
    /// Every code, in number order.
    pub const ALL: [RpcCode; 17] = [
        RpcCode::Ok,
        RpcCode::Cancelled,
        RpcCode::Unknown,
        RpcCode::InvalidArgument,
        RpcCode::DeadlineExceeded,
        RpcCode::NotFound,
        RpcCode::AlreadyExists,
        RpcCode::PermissionDenied,
        RpcCode::ResourceExhausted,
        RpcCode::FailedPrecondition,
        RpcCode::Aborted,
        RpcCode::OutOfRange,
        RpcCode::Unimplemented,
        RpcCode::Internal,
        RpcCode::Unavailable,
        RpcCode::DataLoss,
        RpcCode::Unauthenticated,
    ];

    /// The code's number (`NOT_FOUND` is 5).
    pub fn number(self) -> i32 {
        self as i32
    }

    /// The canonical name (`NOT_FOUND`).
    pub fn name(self) -> &'static str {
        match self {
            RpcCode::Ok => "OK",
            RpcCode::Cancelled => "CANCELLED",
            RpcCode::Unknown => "UNKNOWN",
            RpcCode::InvalidArgument => "INVALID_ARGUMENT",
            RpcCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            RpcCode::NotFound => "NOT_FOUND",
            RpcCode::AlreadyExists => "ALREADY_EXISTS",
            RpcCode::PermissionDenied => "PERMISSION_DENIED",
            RpcCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            RpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            RpcCode::Aborted => "ABORTED",
            RpcCode::OutOfRange => "OUT_OF_RANGE",
            RpcCode::Unimplemented => "UNIMPLEMENTED",
            RpcCode::Internal => "INTERNAL",
            RpcCode::Unavailable => "UNAVAILABLE",
            RpcCode::DataLoss => "DATA_LOSS",
            RpcCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The code of a number; `None` outside 0..=16.
    pub fn from_number(n: i64) -> Option<RpcCode> {
        RpcCode::ALL
            .into_iter()
            .find(|c| i64::from(c.number()) == n)
    }

    /// The code of a canonical name (`RESOURCE_EXHAUSTED`); `None` for anything else.
    pub fn from_name(name: &str) -> Option<RpcCode> {
        RpcCode::ALL.into_iter().find(|c| c.name() == name)
    }

    /// [`RpcCode::from_name`], UNKNOWN for a name that is not canonical.
    pub fn from_status(name: &str) -> RpcCode {
        RpcCode::from_name(name).unwrap_or(RpcCode::Unknown)
    }

    /// The HTTP status Google's APIs answer with for this code (AIP-193).
    pub fn http_status(self) -> u16 {
        match self {
            RpcCode::Ok => 200,
            RpcCode::InvalidArgument | RpcCode::FailedPrecondition | RpcCode::OutOfRange => 400,
            RpcCode::Unauthenticated => 401,
            RpcCode::PermissionDenied => 403,
            RpcCode::NotFound => 404,
            RpcCode::AlreadyExists | RpcCode::Aborted => 409,
            RpcCode::ResourceExhausted => 429,
            RpcCode::Cancelled => 499,
            RpcCode::Unimplemented => 501,
            RpcCode::Unavailable => 503,
            RpcCode::DeadlineExceeded => 504,
            RpcCode::Unknown | RpcCode::Internal | RpcCode::DataLoss => 500,
        }
    }

    /// The code an HTTP error status stands for when the body names none.
    pub fn from_http(status: u16) -> RpcCode {
        match status {
            400 | 413 | 415 => RpcCode::InvalidArgument,
            401 => RpcCode::Unauthenticated,
            403 => RpcCode::PermissionDenied,
            404 => RpcCode::NotFound,
            405 | 501 => RpcCode::Unimplemented,
            408 | 504 => RpcCode::DeadlineExceeded,
            409 => RpcCode::AlreadyExists,
            412 => RpcCode::FailedPrecondition,
            429 => RpcCode::ResourceExhausted,
            499 => RpcCode::Cancelled,
            502 | 503 => RpcCode::Unavailable,
            s if s >= 500 => RpcCode::Internal,
            _ => RpcCode::Unknown,
        }
    }
}

/// In the API document a code is its name (`status` of google.rpc.Status as Google's
/// JSON APIs write it): an enum of every name.
impl utoipa::PartialSchema for RpcCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(RpcCode::ALL.iter().map(|c| c.name())))
            .description(Some("A google.rpc.Code by name."))
            .into()
    }
}

impl utoipa::ToSchema for RpcCode {
    fn name() -> std::borrow::Cow<'static, str> {
        "RpcStatus".into()
    }
}

impl fmt::Display for RpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_round_trip() {
        for (i, c) in RpcCode::ALL.into_iter().enumerate() {
            assert_eq!(c.number() as usize, i);
            assert_eq!(RpcCode::from_number(i as i64), Some(c));
            assert_eq!(RpcCode::from_name(c.name()), Some(c));
        }
        assert_eq!(RpcCode::from_number(17), None);
        assert_eq!(RpcCode::from_status("BOGUS"), RpcCode::Unknown);
        assert_eq!(RpcCode::NotFound.to_string(), "NOT_FOUND");
    }

    #[test]
    fn http_statuses() {
        assert_eq!(RpcCode::FailedPrecondition.http_status(), 400);
        assert_eq!(RpcCode::Aborted.http_status(), 409);
        assert_eq!(RpcCode::from_http(409), RpcCode::AlreadyExists);
        assert_eq!(RpcCode::from_http(502), RpcCode::Unavailable);
        assert_eq!(RpcCode::from_http(507), RpcCode::Internal);
        assert_eq!(RpcCode::from_http(418), RpcCode::Unknown);
        for c in RpcCode::ALL
            .into_iter()
            .filter(|c| ![200, 500].contains(&c.http_status()))
        {
            let back = RpcCode::from_http(c.http_status());
            assert_eq!(back.http_status(), c.http_status(), "{c}");
        }
    }
}
