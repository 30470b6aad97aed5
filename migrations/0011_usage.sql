-- What ran (issue 30): node intervals sampled from the clusters' Kubernetes APIs on the
-- cloud's clock, the gaps where a cluster could not be read, and each pool's last busy
-- time (for idle rules).
--
-- A node interval is one node seen continuously with the same facts, from the first
-- sample that saw them to the last (`end_time`): pool, accelerator type and count per
-- node, provisioning model, the member it is booked to, the price per node hour in force,
-- and `busy`, the accelerators its pods requested. A sample that finds a fact changed
-- (a pod started or ended) ends the interval there and opens the next, so busy and idle
-- hours of any range are exact to the sample. An interval is extended only by a sample
-- contiguous with the one before; a sample never moves time backwards
-- (`usage_clusters`), so two collectors, or one restarted, never count a second twice.

ALTER TABLE node_pools ADD COLUMN created_by text;

CREATE TABLE usage_intervals (
    id             bigserial PRIMARY KEY,
    team_id        text NOT NULL,
    cluster_id     uuid NOT NULL,
    cluster_name   text NOT NULL,
    pool           text NOT NULL,
    node           text NOT NULL,
    node_uid       text NOT NULL DEFAULT '',
    accelerator    text,
    accelerators   integer NOT NULL CHECK (accelerators >= 0),
    provisioning   text NOT NULL,
    member         text,
    price_per_hour double precision NOT NULL CHECK (price_per_hour >= 0),
    start_time     timestamptz NOT NULL,
    end_time       timestamptz NOT NULL CHECK (end_time >= start_time),
    busy           integer NOT NULL CHECK (busy >= 0 AND busy <= accelerators),
    open           boolean NOT NULL DEFAULT true
);
-- The collector's work: the open intervals of one cluster (grows with nodes, not history).
CREATE UNIQUE INDEX usage_open_nodes ON usage_intervals (cluster_id, node) WHERE open;
-- A team's usage over a range (intervals starting before its end, ending after its
-- start: the month-to-date spend reads by end).
CREATE INDEX usage_by_team ON usage_intervals (team_id, start_time);
CREATE INDEX usage_by_team_end ON usage_intervals (team_id, end_time);

-- Per cluster: the last good sample's time (the fence: a sample at or before it is
-- dropped) and its round; a sample extends intervals only when the cluster's previous
-- good sample was the collector's previous round.
CREATE TABLE usage_clusters (
    cluster_id  uuid PRIMARY KEY,
    team_id     text NOT NULL,
    last_sample timestamptz NOT NULL,
    last_round  bigint NOT NULL,
    -- Since when samples have been contiguous, and the last one with any accelerator
    -- requested (the cluster's idle rule).
    seen_since  timestamptz NOT NULL,
    last_busy   timestamptz
);

-- Background tasks with one owner across replicas (the usage collector): the holder
-- renews before `expire_time`; another process takes over only after it. `round` and
-- `round_time` are the task's progress, kept across owners.
CREATE TABLE task_leases (
    name        text PRIMARY KEY,
    holder      text NOT NULL,
    expire_time timestamptz NOT NULL,
    round       bigint NOT NULL DEFAULT 0
);

-- Spans where a cluster could not be read: usage there is unknown, not zero.
CREATE TABLE usage_gaps (
    id           bigserial PRIMARY KEY,
    team_id      text NOT NULL,
    cluster_id   uuid NOT NULL,
    cluster_name text NOT NULL,
    start_time   timestamptz NOT NULL,
    end_time     timestamptz,
    reason       text NOT NULL
);
CREATE UNIQUE INDEX usage_open_gaps ON usage_gaps (cluster_id) WHERE end_time IS NULL;
CREATE INDEX usage_gaps_by_team ON usage_gaps (team_id, start_time);

-- Per pool: when it was first seen and when pods last requested its accelerators.
CREATE TABLE usage_pools (
    cluster_id  uuid NOT NULL,
    pool        text NOT NULL,
    team_id     text NOT NULL,
    seen_since  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    last_busy   timestamptz,
    PRIMARY KEY (cluster_id, pool)
);

-- Budget thresholds (50, 80, 100% of the policy's monthlyBudgetUsd) a team's measured
-- spend crossed, once per month each: the row is the "already told" mark, written in the
-- statement that appends the BUDGET_THRESHOLD audit event.
CREATE TABLE budget_alerts (
    team_id   text NOT NULL,
    month     date NOT NULL,
    threshold integer NOT NULL,
    spent     double precision NOT NULL,
    budget    double precision NOT NULL,
    PRIMARY KEY (team_id, month, threshold)
);

-- Idle rules and TTLs (issue 30 item 2). A cluster's TTL: when it is brought down.
ALTER TABLE clusters ADD COLUMN expire_time timestamptz;

-- Per rule and target (a pool, or the cluster itself with pool ''): the idle episode or
-- expiry the marks are for (a new one resets them), whether the team was warned, the
-- operation that acted, and a member's snooze.
CREATE TABLE rule_marks (
    cluster_id    uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    pool          text NOT NULL DEFAULT '',
    rule          text NOT NULL CHECK (rule IN ('POOL_IDLE', 'CLUSTER_IDLE', 'TTL')),
    episode       timestamptz,
    warned        boolean NOT NULL DEFAULT false,
    operation_id  uuid,
    snoozed_until timestamptz,
    PRIMARY KEY (cluster_id, pool, rule)
);
