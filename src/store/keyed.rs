//! Statements and their parameters, bound in order as `$1`, `$2`, …: the keys of one
//! type the store's many lookups by name take (`&[owner, id]`), or a tuple of values of
//! any types (`(id, generation, lease_seconds)`), without a `.bind` chain each.
//!
//! Invariant: parameters are always bound (by `.bind`, in order), never formatted into
//! the SQL text.

use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{AssertSqlSafe, Encode, FromRow, PgExecutor, Postgres, SqlSafeStr, Type};

use super::StoreError;

/// A key a statement binds: `&str`, `Option<&str>`, ….
pub(super) trait Key<'q>: 'q + Encode<'q, Postgres> + Type<Postgres> + Copy + Send {}
impl<'q, K: 'q + Encode<'q, Postgres> + Type<Postgres> + Copy + Send> Key<'q> for K {}

/// A statement's parameters, bound in placeholder order.
pub(super) trait Params<'q> {
    fn bind_to<Q: Bind<'q>>(self, q: Q) -> Q;
}

/// A statement that binds its next parameter (`.bind` of each kind of query).
pub(super) trait Bind<'q> {
    fn bind_next<T: 'q + Encode<'q, Postgres> + Type<Postgres>>(self, value: T) -> Self;
}

impl<'q> Bind<'q> for Query<'q, Postgres, PgArguments> {
    fn bind_next<T: 'q + Encode<'q, Postgres> + Type<Postgres>>(self, value: T) -> Self {
        self.bind(value)
    }
}

impl<'q, O> Bind<'q> for QueryAs<'q, Postgres, O, PgArguments> {
    fn bind_next<T: 'q + Encode<'q, Postgres> + Type<Postgres>>(self, value: T) -> Self {
        self.bind(value)
    }
}

impl<'q, O> Bind<'q> for QueryScalar<'q, Postgres, O, PgArguments> {
    fn bind_next<T: 'q + Encode<'q, Postgres> + Type<Postgres>>(self, value: T) -> Self {
        self.bind(value)
    }
}

impl<'q, K: Key<'q>> Params<'q> for &[K] {
    fn bind_to<Q: Bind<'q>>(self, q: Q) -> Q {
        self.iter().fold(q, |q, k| q.bind_next(*k))
    }
}

impl<'q, K: Key<'q>, const N: usize> Params<'q> for &[K; N] {
    fn bind_to<Q: Bind<'q>>(self, q: Q) -> Q {
        self.as_slice().bind_to(q)
    }
}

macro_rules! tuple_params {
    ($($v:ident: $t:ident),+) => {
        impl<'q, $($t: 'q + Encode<'q, Postgres> + Type<Postgres>),+> Params<'q> for ($($t,)+) {
            fn bind_to<Q: Bind<'q>>(self, q: Q) -> Q {
                let ($($v,)+) = self;
                q$(.bind_next($v))+
            }
        }
    };
}

tuple_params!(a: A);
tuple_params!(a: A, b: B);
tuple_params!(a: A, b: B, c: C);
tuple_params!(a: A, b: B, c: C, d: D);
tuple_params!(a: A, b: B, c: C, d: D, e: E);
tuple_params!(a: A, b: B, c: C, d: D, e: E, f: F);
tuple_params!(a: A, b: B, c: C, d: D, e: E, f: F, g: G);
tuple_params!(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H);
tuple_params!(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H, i: I);
tuple_params!(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H, i: I, j: J);
tuple_params!(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H, i: I, j: J, k: K);
tuple_params!(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H, i: I, j: J, k: K, l: L);

/// A statement returning rows of `T`.
pub(super) fn rows<'q, T>(
    sql: impl SqlSafeStr,
    params: impl Params<'q>,
) -> QueryAs<'q, Postgres, T, PgArguments>
where
    T: for<'r> FromRow<'r, PgRow>,
{
    params.bind_to(sqlx::query_as(sql))
}

/// A statement returning the first column of its rows.
pub(super) fn scalars<'q, T>(
    sql: impl SqlSafeStr,
    params: impl Params<'q>,
) -> QueryScalar<'q, Postgres, T, PgArguments>
where
    (T,): for<'r> FromRow<'r, PgRow>,
{
    params.bind_to(sqlx::query_scalar(sql))
}

/// A statement returning no rows.
pub(super) fn statement<'q>(
    sql: impl SqlSafeStr,
    params: impl Params<'q>,
) -> Query<'q, Postgres, PgArguments> {
    params.bind_to(sqlx::query(sql))
}

/// What a row decodes into.
pub(super) trait Record: for<'r> FromRow<'r, PgRow> + Send + Unpin {}
impl<T: for<'r> FromRow<'r, PgRow> + Send + Unpin> Record for T {}

/// The row `params` pick, if any.
pub(super) async fn optional<'q, T: Record>(
    ex: impl PgExecutor<'_>,
    sql: impl SqlSafeStr,
    params: impl Params<'q>,
) -> Result<Option<T>, StoreError> {
    Ok(rows(sql, params).fetch_optional(ex).await?)
}

/// The one row `params` pick (none is [`sqlx::Error::RowNotFound`]).
pub(super) async fn one<'q, T: Record>(
    ex: impl PgExecutor<'_>,
    sql: impl SqlSafeStr,
    params: impl Params<'q>,
) -> Result<T, StoreError> {
    Ok(rows(sql, params).fetch_one(ex).await?)
}

/// Every row `params` pick.
pub(super) async fn all<'q, T: Record>(
    ex: impl PgExecutor<'_>,
    sql: impl SqlSafeStr,
    params: impl Params<'q>,
) -> Result<Vec<T>, StoreError> {
    Ok(rows(sql, params).fetch_all(ex).await?)
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
pub(super) async fn execute<'q>(
    ex: impl PgExecutor<'_>,
    sql: impl SqlSafeStr,
    params: impl Params<'q>,
) -> Result<u64, StoreError> {
    Ok(statement(sql, params).execute(ex).await?.rows_affected())
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
        all(ex, AssertSqlSafe(sql), (parent, after, limit)).await
    }
}
