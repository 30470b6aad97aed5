//! Finished operations as they were rendered: the one-statement read behind
//! `GET /v1/operations/{id}` (the kept rendering, or the row to render, with the reader's
//! role), and the write that keeps a rendering.
//!
//! Invariants: a rendering is kept only for a finished row that has a team, and only
//! while that row is unchanged since it was read (finished rows never change but for
//! `team_id` going NULL when the team is deleted, so the write names the team it saw);
//! it is served only for a finished row that still has a team and whose
//! `rendered_format` is the caller's format (the end of an operation clears whatever
//! the row held before, [`super::operations::finish`]). Anything else comes back as the
//! full row.

use std::borrow::Cow;
use std::sync::LazyLock;

use sqlx::{AssertSqlSafe, PgExecutor};
use uuid::Uuid;

use super::operations::{COLUMNS, OperationRow};
use super::{StoreError, keyed};

/// What the read found: the kept rendering, or the row to render.
#[derive(Debug, Clone)]
pub enum Body {
    /// The rendering stored for this finished operation in the format asked for.
    Kept(String),
    /// The row (unfinished, never rendered, or rendered in another format).
    Row(Box<OperationRow>),
}

/// An operation as `GET` reads it, with what visibility is decided on.
#[derive(Debug, Clone)]
pub struct OperationRead {
    pub team_id: Option<String>,
    pub created_by: String,
    /// The reader's stored role in the operation's team (`None`: no team, or not a member).
    pub reader_role: Option<String>,
    pub body: Body,
}

#[derive(sqlx::FromRow)]
struct ReadRow {
    #[sqlx(flatten)]
    op: OperationRow,
    reader_role: Option<String>,
    kept: Option<String>,
}

/// The select list of [`ReadRow`]: the row's columns, except that when the kept rendering
/// is served its JSON columns are left out (empty), so PostgreSQL neither reads nor sends
/// them and the driver decodes nothing big twice.
fn select_list() -> String {
    COLUMNS
        .split(", ")
        .map(|c| match c.trim() {
            "input" => "CASE WHEN o.fresh THEN '{}'::jsonb ELSE o.input END AS input".to_owned(),
            "steps" => "CASE WHEN o.fresh THEN '[]'::json ELSE o.steps END AS steps".to_owned(),
            big @ ("plan" | "response" | "error") => {
                format!("CASE WHEN o.fresh THEN NULL ELSE o.{big} END AS {big}")
            }
            other => format!("o.{other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Operation `id`, read for `email` with the rendering kept in `format`: one statement.
pub async fn operation(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    email: &str,
    format: &str,
) -> Result<Option<OperationRead>, StoreError> {
    // Built once per process: the text is the same for every read.
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {}, \
               CASE WHEN o.fresh THEN o.rendered END AS kept, \
               (SELECT m.role FROM team_members m WHERE m.team_id = o.team_id AND m.email = $2) AS reader_role \
             FROM (SELECT *, (rendered_format = $3 AND end_time IS NOT NULL AND team_id IS NOT NULL) AS fresh \
                   FROM operations WHERE id = $1) o",
            select_list()
        )
    });
    let row: Option<ReadRow> = keyed::optional(
        ex,
        AssertSqlSafe(Cow::Borrowed(SQL.as_str())),
        (id, email, format),
    )
    .await?;
    Ok(row.map(|r| OperationRead {
        team_id: r.op.team_id.clone(),
        created_by: r.op.created_by.clone(),
        reader_role: r.reader_role,
        body: match r.kept {
            Some(json) => Body::Kept(json),
            None => Body::Row(Box::new(r.op)),
        },
    }))
}

/// Keep `json`, the rendering in `format` of finished operation `id` as read with team
/// `team`. False when nothing was written: the row is gone, unfinished, no longer has
/// that team, or already holds a rendering in `format`.
pub async fn keep(
    ex: impl PgExecutor<'_>,
    id: Uuid,
    team: &str,
    format: &str,
    json: &str,
) -> Result<bool, StoreError> {
    let n = keyed::execute(
        ex,
        "UPDATE operations SET rendered = $4, rendered_format = $3 \
         WHERE id = $1 AND end_time IS NOT NULL AND team_id = $2 \
           AND rendered_format IS DISTINCT FROM $3",
        (id, team, format, json),
    )
    .await?;
    Ok(n > 0)
}
