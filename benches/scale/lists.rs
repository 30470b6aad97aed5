//! Page time against position: for every list endpoint, the first page and a page deep
//! in the listing (reached by walking `nextPageToken` with `pageSize=1000`, the largest
//! page, since a token is bound to the filters and not to the size), each requested
//! `samples` times, alternately, on one keep-alive connection.
//!
//! Invariant: both pages hold a full `pageSize=50` of items, so the two times differ
//! only by where the page starts; every response must be 200.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use kineticd::api::auth::{Authenticator, Mode};
use kineticd::app::{self, AppState};
use kineticd::domain::Email;
use serde_json::Value;

use crate::seed::{ADMIN, READER, SMALL, Target, WIDE};

pub struct Knobs {
    /// Requests per page and position.
    pub samples: usize,
    /// How deep the operation lists go (items before the deep page).
    pub deep_ops: usize,
}

/// The same app state as `serve --dev` but with [`ADMIN`] a service admin (every team
/// visible, as `KINETIC_ADMINS` makes it), on its own port.
pub async fn admin_server(state: &AppState) -> Result<String> {
    let mut s = state.parts();
    s.auth = Arc::new(Authenticator {
        identity: Arc::new(kineticd::auth::Authenticator {
            mode: Mode::Dev,
            admins: HashSet::from([Email::parse(ADMIN)?]),
        }),
        limits: state.auth.limits.clone(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(app::serve(
        listener,
        app::router(AppState::new(s)),
        std::future::pending(),
    ));
    Ok(format!("http://{addr}"))
}

/// One list and the caller who walks it.
pub struct Case {
    pub name: &'static str,
    pub user: &'static str,
    pub admin: bool,
    /// Path and query, without `pageSize`/`pageToken`.
    pub path: String,
    /// The JSON field holding the items.
    pub items: &'static str,
    /// Items before the deep page.
    pub deep: usize,
}

/// Every list endpoint of the API, with the caller and depth that make its deep page
/// deep in this data set.
pub fn cases(k: &Knobs, t: &Target) -> Vec<Case> {
    let c = |name, user, admin, path: &str, items, deep| Case {
        name,
        user,
        admin,
        path: path.to_owned(),
        items,
        deep,
    };
    let wide = "/v1/projects/bench-proj-x0/zones/us-central1-a/clusters/c-00000/nodePools";
    // The cluster with the most history: about one operation in 60 of bench's.
    let busy = format!(
        "/v1/operations?filter=target%3D%22projects/bench-proj-0/zones/{}/clusters/c-000%22",
        t.zone
    );
    vec![
        c(
            "clusters (1 team)",
            READER,
            false,
            "/v1/clusters",
            "clusters",
            1_500,
        ),
        c(
            "clusters (50 teams)",
            WIDE,
            false,
            "/v1/clusters",
            "clusters",
            1_500,
        ),
        c(
            "clusters (admin)",
            ADMIN,
            true,
            "/v1/clusters",
            "clusters",
            9_000,
        ),
        c(
            "clusters ?team=&state=",
            READER,
            false,
            "/v1/clusters?team=bench&state=RUNNING",
            "clusters",
            1_500,
        ),
        c(
            "project clusters (zone -)",
            READER,
            false,
            "/v1/projects/bench-proj-x1/zones/-/clusters",
            "clusters",
            300,
        ),
        c("node pools", READER, false, wide, "nodePools", 400),
        c(
            "operations (1 team)",
            READER,
            false,
            "/v1/operations",
            "operations",
            k.deep_ops,
        ),
        c(
            "operations (3 small teams)",
            SMALL,
            false,
            "/v1/operations",
            "operations",
            k.deep_ops.min(5_000),
        ),
        c(
            "operations (50 teams)",
            WIDE,
            false,
            "/v1/operations",
            "operations",
            k.deep_ops,
        ),
        c(
            "operations (admin)",
            ADMIN,
            true,
            "/v1/operations",
            "operations",
            k.deep_ops,
        ),
        c(
            "operations ?filter=done=true",
            READER,
            false,
            "/v1/operations?filter=done%3Dtrue",
            "operations",
            k.deep_ops,
        ),
        c(
            "operations ?filter=target=",
            READER,
            false,
            &busy,
            "operations",
            1_000,
        ),
        c("teams (admin)", ADMIN, true, "/v1/teams", "teams", 400),
        c(
            "members",
            READER,
            false,
            "/v1/teams/bench/members",
            "members",
            900,
        ),
        c("profiles", READER, false, "/v1/profiles", "profiles", 200),
    ]
}

pub fn url(api: &str, path: &str, size: usize, token: Option<&str>) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut u = format!("{api}{path}{sep}pageSize={size}");
    if let Some(t) = token {
        u.push_str("&pageToken=");
        u.push_str(t);
    }
    u
}

async fn get(http: &reqwest::Client, url: &str, user: &str) -> Result<(Value, usize)> {
    let r = http.get(url).header("x-kinetic-user", user).send().await?;
    let status = r.status();
    let body = r.bytes().await?;
    if !status.is_success() {
        bail!("GET {url}: {status} {}", String::from_utf8_lossy(&body));
    }
    Ok((serde_json::from_slice(&body)?, body.len()))
}

fn count(page: &Value, items: &str) -> usize {
    page[items].as_array().map_or(0, Vec::len)
}

/// Walk to `deep` items; returns the position reached and the token there (`None` if
/// the list is shorter than one page).
async fn walk(
    http: &reqwest::Client,
    api: &str,
    c: &Case,
    deep: usize,
) -> Result<(usize, Option<String>)> {
    let (mut pos, mut token): (usize, Option<String>) = (0, None);
    while pos < deep {
        let size = (deep - pos).min(1000);
        let (page, _) = get(http, &url(api, &c.path, size, token.as_deref()), c.user).await?;
        let n = count(&page, c.items);
        match page["nextPageToken"].as_str() {
            Some(t) if n > 0 => {
                pos += n;
                token = Some(t.to_owned());
            }
            _ => break,
        }
    }
    Ok((pos, token))
}

/// The deepest position up to `c.deep` whose page of 50 is full (a list shorter than
/// `c.deep + 50` gets its last 50 items), and its token; `None`: fewer than 51 items.
pub async fn deep_token(
    http: &reqwest::Client,
    api: &str,
    c: &Case,
) -> Result<Option<(usize, String)>> {
    let (pos, token) = walk(http, api, c, c.deep).await?;
    let Some(token) = token else {
        return Ok(None);
    };
    let (page, _) = get(http, &url(api, &c.path, 50, Some(&token)), c.user).await?;
    let n = count(&page, c.items);
    if n == 50 {
        return Ok(Some((pos, token)));
    }
    let (pos, token) = walk(http, api, c, (pos + n).saturating_sub(50)).await?;
    Ok(token.map(|t| (pos, t)))
}

/// One row of the table: milliseconds at the first and the deep page.
pub struct Timing {
    pub first: Vec<f64>,
    pub deep: Vec<f64>,
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
    v.get(rank - 1).copied().unwrap_or(f64::NAN)
}

/// Times every case; returns the cases with the deep position and token reached.
pub async fn run(
    k: &Knobs,
    api: &str,
    admin_api: &str,
    t: &Target,
) -> Result<Vec<(Case, usize, String)>> {
    let http = reqwest::Client::builder().tcp_nodelay(true).build()?;
    println!(
        "\nlists: first page vs deep page (pageSize=50), {} sequential requests each, alternating",
        k.samples
    );
    println!();
    println!(
        "| list | caller | deep page starts at | KB first / deep | first p50 ms | deep p50 ms | first p90 ms | deep p90 ms | deep/first p50 |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut walked = Vec::new();
    for c in cases(k, t) {
        let api = if c.admin { admin_api } else { api };
        let started = Instant::now();
        let Some((pos, token)) = deep_token(&http, api, &c).await? else {
            println!(
                "| {} | {} | (shorter than two pages) | | | | | | |",
                c.name, c.user
            );
            continue;
        };
        let first = url(api, &c.path, 50, None);
        let deep = url(api, &c.path, 50, Some(&token));
        // Warm both (plans cached, pages in memory), then alternate.
        for _ in 0..3 {
            get(&http, &first, c.user).await?;
            get(&http, &deep, c.user).await?;
        }
        let mut tm = Timing {
            first: Vec::new(),
            deep: Vec::new(),
        };
        let mut bytes = [0usize; 2];
        for _ in 0..k.samples {
            for (i, (u, into)) in [(&first, &mut tm.first), (&deep, &mut tm.deep)]
                .into_iter()
                .enumerate()
            {
                let t0 = Instant::now();
                let (page, len) = get(&http, u, c.user).await?;
                into.push(t0.elapsed().as_secs_f64() * 1e3);
                let n = count(&page, c.items);
                if n != 50 {
                    bail!("{}: a page of {n} items, not 50 ({u})", c.name);
                }
                bytes[i] = len;
            }
        }
        let (f50, d50) = (quantile(&tm.first, 0.5), quantile(&tm.deep, 0.5));
        println!(
            "| {} | {} | {pos} | {:.0} / {:.0} | {f50:.2} | {d50:.2} | {:.2} | {:.2} | {:.2} |",
            c.name,
            c.user,
            bytes[0] as f64 / 1024.0,
            bytes[1] as f64 / 1024.0,
            quantile(&tm.first, 0.9),
            quantile(&tm.deep, 0.9),
            d50 / f50
        );
        tracing::debug!(
            list = c.name,
            secs = started.elapsed().as_secs_f64(),
            "timed"
        );
        walked.push((c, pos, token));
    }
    Ok(walked)
}
