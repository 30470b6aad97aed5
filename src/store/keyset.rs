//! The text of keyset list statements (AIP-158 pages) whose cost depends on the page
//! size and the caller's team count, never on the page's position or the table's size.
//!
//! Invariants:
//! - A condition is in the text only when its filter is set (no `$n IS NULL OR ...`), so
//!   every combination is its own prepared statement whose generic plan can use the
//!   index that matches it; the parameters stay bound (unused ones as typed NULLs).
//! - A caller who sees only some teams reads one index range per visible team
//!   (`team_id = v.team_id`, the filters, the keyset bound, the order), each cut to the
//!   page size, and the ranges are merged: a page costs at most teams x page size rows
//!   however few of the table's rows those teams own.
//! - Only placeholders (`$n`) and fixed SQL reach the text; values are always bound.

/// The teams whose rows a caller may list, as placeholders of the statement.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Teams<'a> {
    /// The member's email: their teams, looked up in the statement.
    pub member: Option<&'a str>,
    /// Exactly this team.
    pub team: Option<&'a str>,
    /// One of these teams (a `text[]`).
    pub any_of: Option<&'a str>,
}

impl Teams<'_> {
    /// `SELECT team_id` of the visible teams; `None` when every team is visible.
    fn source(&self) -> Option<String> {
        let mut s = match (self.member, self.team, self.any_of) {
            (Some(m), _, _) => format!("SELECT m.team_id FROM team_members m WHERE m.email = {m}"),
            (None, Some(t), _) => format!("SELECT {t}::text AS team_id"),
            (None, None, Some(a)) => {
                return Some(format!("SELECT DISTINCT unnest({a}::text[]) AS team_id"));
            }
            (None, None, None) => return None,
        };
        let restrictions = match (self.member, self.team, self.any_of) {
            (Some(_), t, a) => [
                t.map(|t| format!("m.team_id = {t}")),
                a.map(|a| format!("m.team_id = ANY({a})")),
            ],
            (None, Some(t), a) => [a.map(|a| format!("{t} = ANY({a})")), None],
            _ => [None, None],
        };
        let more: Vec<String> = restrictions.into_iter().flatten().collect();
        if !more.is_empty() {
            let glue = if self.member.is_some() {
                " AND "
            } else {
                " WHERE "
            };
            s.push_str(glue);
            s.push_str(&more.join(" AND "));
        }
        Some(s)
    }

    /// `team_id IN (...)` for a statement that reads another index (a filter that
    /// already narrows the rows to a few, such as one target); `None`: every team.
    pub fn condition(&self) -> Option<String> {
        self.source().map(|s| format!("team_id IN ({s})"))
    }
}

/// The conditions of the filters that are set, in order (each a fixed text naming its
/// placeholder): a filter not set adds nothing to the text.
pub(super) fn set_conditions<const N: usize>(filters: [(bool, &str); N]) -> Vec<String> {
    filters
        .into_iter()
        .filter(|(set, _)| *set)
        .map(|(_, cond)| cond.to_owned())
        .collect()
}

/// `columns` of `table` (aliased `t`) meeting all of `conds`, in `order` (bare column
/// names, e.g. `create_time DESC, id DESC`), at most `limit` (a placeholder) rows; with
/// `teams` restricting, one range per team merged (see the module's invariants).
pub(super) fn page(
    columns: &str,
    table: &str,
    conds: &[String],
    order: &str,
    limit: &str,
    teams: Teams<'_>,
) -> String {
    match teams.source() {
        None => {
            let wher = if conds.is_empty() {
                String::new()
            } else {
                format!(" WHERE {}", conds.join(" AND "))
            };
            format!("SELECT {columns} FROM {table} t{wher} ORDER BY {order} LIMIT {limit}")
        }
        Some(source) => {
            let mut inner = vec!["t.team_id = v.team_id".to_owned()];
            inner.extend(conds.iter().cloned());
            format!(
                "SELECT p.* FROM ({source}) v CROSS JOIN LATERAL \
                 (SELECT {columns} FROM {table} t WHERE {} ORDER BY {order} LIMIT {limit}) p \
                 ORDER BY {order} LIMIT {limit}",
                inner.join(" AND ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_filters_reach_the_text() {
        let all = page("id", "x", &[], "id", "$9", Teams::default());
        assert_eq!(all, "SELECT id FROM x t ORDER BY id LIMIT $9");
        let member = page(
            "id",
            "x",
            &["id > $2".to_owned()],
            "id",
            "$9",
            Teams {
                member: Some("$1"),
                team: Some("$3"),
                any_of: None,
            },
        );
        assert_eq!(
            member,
            "SELECT p.* FROM (SELECT m.team_id FROM team_members m WHERE m.email = $1 \
             AND m.team_id = $3) v CROSS JOIN LATERAL (SELECT id FROM x t WHERE \
             t.team_id = v.team_id AND id > $2 ORDER BY id LIMIT $9) p ORDER BY id LIMIT $9"
        );
        let one = Teams {
            team: Some("$3"),
            any_of: Some("$4"),
            ..Teams::default()
        };
        assert_eq!(
            one.condition().unwrap(),
            "team_id IN (SELECT $3::text AS team_id WHERE $3 = ANY($4))"
        );
        assert!(Teams::default().condition().is_none());
    }
}
