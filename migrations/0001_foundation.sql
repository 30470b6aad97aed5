-- kineticd foundation schema: teams, members, projects, clusters, node pools, profiles,
-- operations (the durable queue the worker pool consumes) and idempotency keys.
-- Every list the API serves has an index matching its keyset order.

CREATE TABLE teams (
    team_id      text PRIMARY KEY CHECK (team_id ~ '^[a-z][a-z0-9-]{2,39}$'),
    display_name text NOT NULL DEFAULT '',
    create_time  timestamptz NOT NULL DEFAULT now(),
    update_time  timestamptz NOT NULL DEFAULT now(),
    version      bigint NOT NULL DEFAULT 1
);

-- A GCP project belongs to at most one team: the primary key is the project alone.
CREATE TABLE team_projects (
    project_id text PRIMARY KEY,
    team_id    text NOT NULL REFERENCES teams (team_id) ON DELETE CASCADE,
    add_time   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX team_projects_by_team ON team_projects (team_id, project_id);

CREATE TABLE team_members (
    team_id  text NOT NULL REFERENCES teams (team_id) ON DELETE CASCADE,
    email    text NOT NULL,
    role     text NOT NULL CHECK (role IN ('VIEWER', 'MEMBER', 'ADMIN', 'OWNER')),
    add_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, email)
);
CREATE INDEX team_members_by_email ON team_members (email, team_id);

-- Clusters keep their record after `down` (state DELETED) so history and operations
-- still resolve; only one live cluster may hold a (project, zone, name).
CREATE TABLE clusters (
    id            uuid PRIMARY KEY,
    project_id    text NOT NULL,
    zone          text NOT NULL,
    name          text NOT NULL,
    team_id       text NOT NULL REFERENCES teams (team_id),
    state         text NOT NULL CHECK (state IN ('PROVISIONING', 'RUNNING', 'RECONCILING', 'DELETING', 'DELETED', 'ERROR')),
    spec          jsonb NOT NULL DEFAULT '{}',
    resources     jsonb NOT NULL DEFAULT '{}',
    endpoint      text,
    reconciling   boolean NOT NULL DEFAULT false,
    created_by    text NOT NULL,
    create_time   timestamptz NOT NULL DEFAULT now(),
    update_time   timestamptz NOT NULL DEFAULT now(),
    delete_time   timestamptz,
    version       bigint NOT NULL DEFAULT 1
);
CREATE UNIQUE INDEX clusters_live_name ON clusters (project_id, zone, name) WHERE state <> 'DELETED';
CREATE INDEX clusters_by_key ON clusters (project_id, zone, name, id);
CREATE INDEX clusters_by_team ON clusters (team_id, project_id, zone, name, id);

CREATE TABLE node_pools (
    cluster_id  uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    pool_id     text NOT NULL,
    state       text NOT NULL CHECK (state IN ('PROVISIONING', 'RUNNING', 'RECONCILING', 'STOPPING', 'DELETED', 'ERROR')),
    spec        jsonb NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now(),
    update_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, pool_id)
);

-- Profiles are per caller; at most one is active per caller.
CREATE TABLE profiles (
    owner_email text NOT NULL,
    profile_id  text NOT NULL,
    cluster     text NOT NULL,
    namespace   text NOT NULL DEFAULT 'default',
    active      boolean NOT NULL DEFAULT false,
    create_time timestamptz NOT NULL DEFAULT now(),
    update_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_email, profile_id)
);
CREATE UNIQUE INDEX profiles_one_active ON profiles (owner_email) WHERE active;

-- The durable operation queue. A worker claims a row with FOR UPDATE SKIP LOCKED,
-- setting lease_owner / lease_expire_time and bumping generation; every later write is
-- fenced on that generation. serial_key (the target cluster's name) orders operations
-- on one cluster: only the oldest unfinished operation of a key may run.
CREATE TABLE operations (
    id                uuid PRIMARY KEY,
    op_type           text NOT NULL,
    target            text NOT NULL,
    serial_key        text NOT NULL,
    team_id           text REFERENCES teams (team_id) ON DELETE SET NULL,
    cluster_id        uuid REFERENCES clusters (id) ON DELETE SET NULL,
    created_by        text NOT NULL,
    request_id        text,
    state             text NOT NULL CHECK (state IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLING', 'CANCELLED')),
    cancel_requested  boolean NOT NULL DEFAULT false,
    attempt           integer NOT NULL DEFAULT 0,
    input             jsonb NOT NULL DEFAULT '{}',
    plan              jsonb,
    -- json, not jsonb: rewritten on every step and only ever read whole, so the cheaper
    -- text form wins.
    steps             json NOT NULL DEFAULT '[]',
    response          jsonb,
    error             jsonb,
    lease_owner       text,
    lease_expire_time timestamptz,
    generation        bigint NOT NULL DEFAULT 0,
    deadline          timestamptz,
    create_time       timestamptz NOT NULL DEFAULT now(),
    start_time        timestamptz,
    update_time       timestamptz NOT NULL DEFAULT now(),
    end_time          timestamptz
)
-- Each step rewrites the row: keep it inline and uncompressed (no TOAST work per step)
-- and leave room on the page for HOT updates.
WITH (toast_tuple_target = 8160, fillfactor = 70);
CREATE INDEX operations_unfinished ON operations (serial_key, create_time, id) WHERE end_time IS NULL;
CREATE INDEX operations_claimable ON operations (create_time, id) WHERE end_time IS NULL;
CREATE INDEX operations_by_team ON operations (team_id, create_time DESC, id DESC);
CREATE INDEX operations_by_time ON operations (create_time DESC, id DESC);
CREATE INDEX operations_finished ON operations (end_time) WHERE end_time IS NOT NULL;

-- Idempotency keys (AIP-155 requestId or the Idempotency-Key header), per caller, kept
-- 24 h. The fingerprint binds a key to one request so a reused key with another body
-- is refused instead of silently returning an unrelated operation.
CREATE TABLE idempotency_keys (
    caller       text NOT NULL,
    key          text NOT NULL,
    fingerprint  text NOT NULL,
    -- Deferred: the key is inserted first in the enqueue transaction, so a concurrent
    -- identical request blocks on it and then finds the winner's operation.
    operation_id uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    create_time  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (caller, key)
);
CREATE INDEX idempotency_keys_by_time ON idempotency_keys (create_time);
CREATE INDEX idempotency_keys_by_operation ON idempotency_keys (operation_id);

-- Effects of the NOOP test workflow, committed in the same fenced transaction that marks
-- a step DONE; tests count them to prove no step's effect is applied twice.
-- No foreign key or index: the engine benchmark measures a step commit, not an extra
-- key check; retention removes effects of purged operations.
CREATE TABLE noop_effects (
    operation_id uuid NOT NULL,
    step_id      text NOT NULL,
    generation   bigint NOT NULL,
    applied_time timestamptz NOT NULL DEFAULT now()
);
