//! Statements whose parameters are keys of one type (text ids, optional filters), bound
//! in order as `$1`, `$2`, …: the store's many lookups by name, without a `.bind` chain
//! each.
//!
//! Invariant: keys are always bound as parameters, never formatted into the SQL text.

use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{AssertSqlSafe, Encode, FromRow, PgExecutor, Postgres, SqlSafeStr, Type};

use super::StoreError;

/// A key a statement binds: `&str`, `Option<&str>`, ….
pub(super) trait Key<'q>: 'q + Encode<'q, Postgres> + Type<Postgres> + Copy + Send {}
impl<'q, K: 'q + Encode<'q, Postgres> + Type<Postgres> + Copy + Send> Key<'q> for K {}

/// A statement returning rows of `T`.
pub(super) fn rows<'q, T, K: Key<'q>>(
    sql: impl SqlSafeStr,
    keys: &[K],
) -> QueryAs<'q, Postgres, T, PgArguments>
where
    T: for<'r> FromRow<'r, PgRow>,
{
    keys.iter().fold(sqlx::query_as(sql), |q, k| q.bind(*k))
}

/// A statement returning the first column of its rows.
pub(super) fn scalars<'q, T, K: Key<'q>>(
    sql: impl SqlSafeStr,
    keys: &[K],
) -> QueryScalar<'q, Postgres, T, PgArguments>
where
    (T,): for<'r> FromRow<'r, PgRow>,
{
    keys.iter().fold(sqlx::query_scalar(sql), |q, k| q.bind(*k))
}

/// A statement returning no rows.
pub(super) fn statement<'q, K: Key<'q>>(
    sql: impl SqlSafeStr,
    keys: &[K],
) -> Query<'q, Postgres, PgArguments> {
    keys.iter().fold(sqlx::query(sql), |q, k| q.bind(*k))
}

/// What a row decodes into.
pub(super) trait Record: for<'r> FromRow<'r, PgRow> + Send + Unpin {}
impl<T: for<'r> FromRow<'r, PgRow> + Send + Unpin> Record for T {}

/// The row `keys` pick, if any.
pub(super) async fn optional<'q, T: Record, K: Key<'q>>(
    ex: impl PgExecutor<'_>,
    sql: impl SqlSafeStr,
    keys: &[K],
) -> Result<Option<T>, StoreError> {
    Ok(rows(sql, keys).fetch_optional(ex).await?)
}

/// A page: the rows `keys` pick, at most `limit` (bound after the keys).
pub(super) async fn page<'q, T: Record, K: Key<'q>>(
    ex: impl PgExecutor<'_>,
    sql: impl SqlSafeStr,
    keys: &[K],
    limit: i64,
) -> Result<Vec<T>, StoreError> {
    Ok(rows(sql, keys).bind(limit).fetch_all(ex).await?)
}

/// Run a statement; how many rows it changed.
pub(super) async fn execute<'q, K: Key<'q>>(
    ex: impl PgExecutor<'_>,
    sql: impl SqlSafeStr,
    keys: &[K],
) -> Result<u64, StoreError> {
    Ok(statement(sql, keys).execute(ex).await?.rows_affected())
}

/// A table's rows under one parent, paged in the order of a text key (a team's members,
/// a caller's profiles, a cluster's pools). The names are the store's own constants.
pub(super) struct Children {
    pub table: &'static str,
    pub columns: &'static str,
    pub parent: &'static str,
    pub key: &'static str,
}

impl Children {
    /// The rows of `parent` whose key is after `after`, at most `limit`, in key order.
    pub async fn page<'q, T: Record, P: Key<'q>>(
        &self,
        ex: impl PgExecutor<'_>,
        parent: P,
        after: Option<&'q str>,
        limit: i64,
    ) -> Result<Vec<T>, StoreError> {
        let Children {
            table,
            columns,
            parent: by,
            key,
        } = self;
        // The keyset bound is in the text only when there is one.
        let bound = match after {
            Some(_) => format!(" AND {key} > $2"),
            None => String::new(),
        };
        let sql =
            format!("SELECT {columns} FROM {table} WHERE {by} = $1{bound} ORDER BY {key} LIMIT $3");
        let q = rows(AssertSqlSafe(sql), &[parent]).bind(after).bind(limit);
        Ok(q.fetch_all(ex).await?)
    }
}
