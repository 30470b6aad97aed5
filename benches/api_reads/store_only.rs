//! The database's part of each read without the HTTP server around it: the store
//! function the handler calls (the same SQL, the same sqlx decoding into records), from
//! `conns` concurrent tasks over a pool of `pool` connections in this process. Between
//! `pgbench -S` (the database's limit for a point read) and the full API (HTTP, identity,
//! the service's checks, JSON), it shows where the time per read goes.
//!
//! Invariant: every counted call returned the record it was asked for (an operation, a
//! cluster, a full page); anything else aborts the run.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use kineticd::store::clusters::ClusterFilter;
use kineticd::store::{self, Db};

use crate::load::Run;

/// Which store function: the reads of the bench.
#[derive(Debug, Clone, Copy)]
pub enum Read {
    /// `GET /v1/operations/{id}`'s (the kept rendering or the row, with the reader's role).
    Operation(uuid::Uuid),
    Cluster,
    ClusterPage,
}

/// What the cluster reads name, and who reads.
#[derive(Debug, Clone)]
pub struct Names {
    pub project: String,
    pub zone: String,
    pub cluster: String,
    pub reader: String,
}

async fn once(db: &Db, read: Read, n: &Names) -> Result<()> {
    match read {
        Read::Operation(id) => {
            let format = kineticd::service::operations::render_format();
            let r = store::rendered::operation(db, id, &n.reader, format).await?;
            ensure!(r.is_some(), "operation {id} not found");
        }
        Read::Cluster => {
            let parts = [n.project.as_str(), n.zone.as_str(), n.cluster.as_str()];
            let r = store::reads::cluster(db, parts, &n.reader).await?;
            ensure!(r.is_some(), "cluster {} not found", n.cluster);
        }
        Read::ClusterPage => {
            let filter = ClusterFilter {
                teams: None,
                member: Some(n.reader.clone()),
                team: None,
                state: None,
                project: None,
                zone: None,
            };
            // 51: the page and one more, as the service asks (to know there is a next).
            let r = store::reads::cluster_page(db, &filter, None, 51).await?;
            ensure!(r.len() == 51, "a page of {} clusters", r.len());
        }
    }
    Ok(())
}

/// `read` from `conns` tasks for `secs` after a 1 s warm-up; a fresh pool of `pool`
/// connections to `url`.
pub async fn run(
    url: &str,
    pool: u32,
    conns: usize,
    secs: u32,
    read: Read,
    n: &Names,
) -> Result<Run> {
    let db = store::connect(url, pool).await?;
    let warm = measure(&db, conns, Duration::from_secs(1), read, n).await;
    warm?;
    let r = measure(&db, conns, Duration::from_secs(u64::from(secs)), read, n).await;
    db.close().await;
    r
}

async fn measure(db: &Db, conns: usize, length: Duration, read: Read, n: &Names) -> Result<Run> {
    let start = Instant::now();
    let end = start + length;
    let tasks: Vec<_> = (0..conns)
        .map(|_| spawn_loop(db.clone(), n.clone(), end, read))
        .collect();
    let mut us: Vec<u32> = Vec::new();
    for t in tasks {
        us.extend(t.await??);
    }
    Ok(crate::load::summarise(us, start.elapsed().as_secs_f64()))
}

fn spawn_loop(
    db: Db,
    n: Names,
    end: Instant,
    read: Read,
) -> tokio::task::JoinHandle<Result<Vec<u32>>> {
    tokio::spawn(timed(end, move || {
        let (db, n) = (db.clone(), n.clone());
        async move { once(&db, read, &n).await }
    }))
}

/// Calls `f` until `end`; the microseconds of each call.
async fn timed<F, Fut>(end: Instant, f: F) -> Result<Vec<u32>>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let mut us = Vec::new();
    while Instant::now() < end {
        let t = Instant::now();
        f().await?;
        us.push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
    }
    Ok(us)
}
