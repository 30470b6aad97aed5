-- Indexes for the keyset lists (issue 15, benchmark 2: page time constant in the page's
-- position at 10,000 clusters and 1,000,000 operations). A member's list reads one
-- range per visible team (store::keyset), so each list order is indexed after team_id;
-- an admin's list reads the same order across teams.

-- Clusters, live by default: DELETED history is outside the partial indexes, so it
-- never costs a page anything however much of it accumulates.
CREATE INDEX clusters_live_by_team ON clusters (team_id, project_id, zone, name, id)
    WHERE state <> 'DELETED';
CREATE INDEX clusters_live_by_key ON clusters (project_id, zone, name, id)
    WHERE state <> 'DELETED';
-- `state=` lists (DELETED history included).
CREATE INDEX clusters_by_team_state ON clusters (team_id, state, project_id, zone, name, id);
CREATE INDEX clusters_by_state ON clusters (state, project_id, zone, name, id);

-- Operations: `done=false` per team (a few rows among the finished millions), and one
-- target's history (`filter=target=...`, what the API's messages point callers at).
CREATE INDEX operations_unfinished_by_team ON operations (team_id, create_time DESC, id DESC)
    WHERE end_time IS NULL;
CREATE INDEX operations_by_target ON operations (target, create_time DESC, id DESC);
