//! The simulator's request journal (`GET /sim/v1/journal`) read over HTTP, as any client
//! sees it: every request the simulator served, in order, optionally only those of one
//! service and method. Shared by the tests that run the simulator in process and those
//! that run `kineticd sim` as a child.

use serde_json::Value;

/// The journal of the simulator at `sim_url`, filtered by `query` (`service`, `method`;
/// empty for every entry).
pub async fn sim_journal(
    http: &reqwest::Client,
    sim_url: &str,
    query: &[(&str, &str)],
) -> Vec<Value> {
    let j: Value = http
        .get(format!("{sim_url}/sim/v1/journal"))
        .query(query)
        .send()
        .await
        .expect("journal")
        .json()
        .await
        .expect("journal body");
    j["entries"].as_array().cloned().unwrap_or_default()
}
