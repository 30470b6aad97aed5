//! Profiles: per-caller named pointers at clusters; at most one active.
//!
//! Invariant: a caller only ever reads or changes their own profiles; `stale` is
//! computed at read time from the clusters the caller can see, never stored.

use super::replies;
use crate::domain::{ClusterName, ProfileId, ProjectId, ZoneName};
use crate::model::{self, Profile};
use crate::ops::queue::Idempotency;
use crate::store::{self, Db, profiles::ProfileRecord};

use super::access::{self, Caller};
use super::{Error, Page, PageRequest, Result};

/// A parsed `projects/{p}/zones/{z}/clusters/{c}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRef {
    pub project: ProjectId,
    pub zone: ZoneName,
    pub cluster: ClusterName,
}

impl ClusterRef {
    pub fn parse(s: &str) -> Result<ClusterRef> {
        let bad = |why: String| {
            Error::invalid(
                "INVALID_CLUSTER_NAME",
                format!(
                    "cluster {s:?} is invalid: {why}; expected projects/PROJECT/zones/ZONE/clusters/CLUSTER"
                ),
            )
        };
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            ["projects", p, "zones", z, "clusters", c] => Ok(ClusterRef {
                project: ProjectId::parse(p).map_err(|e| bad(e.to_string()))?,
                zone: ZoneName::parse(z).map_err(|e| bad(e.to_string()))?,
                cluster: ClusterName::parse(c).map_err(|e| bad(e.to_string()))?,
            }),
            _ => Err(bad("wrong shape".into())),
        }
    }
}

fn check_namespace(ns: &str) -> Result<()> {
    let ok = (1..=63).contains(&ns.len())
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !ns.starts_with('-')
        && !ns.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "INVALID_NAMESPACE",
            format!(
                "namespace {ns:?} is not a Kubernetes namespace name (lowercase letters, digits, hyphens; at most 63)"
            ),
        ))
    }
}

async fn render(db: &Db, caller: &Caller, p: ProfileRecord) -> Result<Profile> {
    Ok(render_all(db, caller, vec![p]).await?.remove(0))
}

/// Render a page: the caller's visible teams and which of the profiles' clusters are
/// live among them are read once for the whole page (two statements, whatever its size).
async fn render_all(db: &Db, caller: &Caller, ps: Vec<ProfileRecord>) -> Result<Vec<Profile>> {
    let teams = access::visible_teams(db, caller).await?;
    let refs: Vec<Option<ClusterRef>> = ps
        .iter()
        .map(|p| ClusterRef::parse(&p.cluster).ok())
        .collect();
    let names: Vec<(&str, &str, &str)> = refs
        .iter()
        .flatten()
        .map(|c| (c.project.as_str(), c.zone.as_str(), c.cluster.as_str()))
        .collect();
    let live = store::clusters::live_among(db, &names, teams.as_deref()).await?;
    let is_live = |c: &Option<ClusterRef>| {
        c.as_ref().is_some_and(|c| {
            let key = (
                c.project.to_string(),
                c.zone.to_string(),
                c.cluster.to_string(),
            );
            live.contains(&key)
        })
    };
    Ok(ps
        .into_iter()
        .zip(&refs)
        .map(|(p, c)| Profile {
            name: format!("profiles/{}", p.profile_id),
            stale: !is_live(c),
            profile_id: p.profile_id,
            cluster: p.cluster,
            namespace: p.namespace,
            active: p.active,
            create_time: model::timestamp(p.create_time),
            update_time: model::timestamp(p.update_time),
        })
        .collect())
}

fn not_found(id: &str) -> Error {
    Error::not_found(
        "PROFILE_NOT_FOUND",
        format!("profile profiles/{id} not found; list yours with GET /v1/profiles"),
    )
    .with("profile", id)
}

pub async fn active(db: &Db, caller: &Caller) -> Result<Option<Profile>> {
    match store::profiles::active(db, caller.email.as_str()).await? {
        Some(p) => Ok(Some(render(db, caller, p).await?)),
        None => Ok(None),
    }
}

pub async fn list(db: &Db, caller: &Caller, page: &PageRequest) -> Result<Page<Profile>> {
    let after: Option<String> = page.after("profiles")?;
    let rows = store::profiles::list(
        db,
        caller.email.as_str(),
        after.as_deref(),
        page.limit()? + 1,
    )
    .await?;
    let page = page.page("profiles", rows, |p| p.profile_id.clone(), |p| p)?;
    let items = render_all(db, caller, page.items).await?;
    Ok(Page {
        items,
        next_page_token: page.next_page_token,
    })
}

pub async fn get(db: &Db, caller: &Caller, id: &ProfileId) -> Result<Profile> {
    let p = store::profiles::get(db, caller.email.as_str(), id.as_str())
        .await?
        .ok_or_else(|| not_found(id.as_str()))?;
    render(db, caller, p).await
}

/// Create or replace; returns the profile and whether it was created.
pub async fn put(
    db: &Db,
    caller: &Caller,
    id: &ProfileId,
    cluster: &str,
    namespace: Option<&str>,
    idem: Option<&Idempotency>,
) -> Result<(Profile, bool)> {
    let who = caller.email.as_str();
    let cref = ClusterRef::parse(cluster)?;
    let namespace = namespace.unwrap_or("default");
    check_namespace(namespace)?;
    let canonical = format!(
        "projects/{}/zones/{}/clusters/{}",
        cref.project, cref.zone, cref.cluster
    );
    let mut tx = replies::begin_or_replay!(db, who, idem);
    let (p, created) =
        store::profiles::upsert(&mut *tx, who, id.as_str(), &canonical, namespace).await?;
    let answer = (render(db, caller, p).await?, created);
    replies::commit(tx, who, idem, &answer).await?;
    Ok(answer)
}

pub async fn delete(
    db: &Db,
    caller: &Caller,
    id: &ProfileId,
    idem: Option<&Idempotency>,
) -> Result<()> {
    let who = caller.email.as_str();
    let mut tx = replies::begin_or_replay!(db, who, idem);
    if !store::profiles::delete(&mut *tx, who, id.as_str()).await? {
        return Err(not_found(id.as_str()));
    }
    replies::commit(tx, who, idem, &()).await
}

pub async fn activate(
    db: &Db,
    caller: &Caller,
    id: &ProfileId,
    idem: Option<&Idempotency>,
) -> Result<Profile> {
    let who = caller.email.as_str();
    let mut tx = replies::begin_or_replay!(db, who, idem);
    let p = store::profiles::activate(&mut tx, who, id.as_str())
        .await?
        .ok_or_else(|| not_found(id.as_str()))?;
    let answer = render(db, caller, p).await?;
    replies::commit(tx, who, idem, &answer).await?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_refs() {
        let c = ClusterRef::parse("projects/my-project/zones/us-central1-a/clusters/kc").unwrap();
        assert_eq!(c.zone.region(), "us-central1");
        for bad in [
            "projects/my-project/zones/us-central1-a",
            "projects/x/zones/us-central1-a/clusters/kc",
            "projects/my-project/zones/us-central1-a/clusters/KC",
            "projects/my-project/regions/us-central1/clusters/kc",
        ] {
            assert_eq!(
                ClusterRef::parse(bad).unwrap_err().reason,
                "INVALID_CLUSTER_NAME",
                "{bad}"
            );
        }
    }
}
