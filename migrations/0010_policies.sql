-- Team guardrails (issue 29). A team's policy is one JSON document (every field
-- optional: unset limits nothing); `version` makes its etag.
CREATE TABLE team_policies (
    team_id     text PRIMARY KEY REFERENCES teams (team_id) ON DELETE CASCADE,
    policy      jsonb NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    update_time timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL
);

-- Bumped by every apply that checks the policy, in the statement that reads the team's
-- usage: the bump takes the team's row lock, and a bump that finds another committed
-- since the statement's snapshot means the usage read is stale (read again, now under
-- the lock). Concurrent requests of one team so check and enqueue one at a time.
ALTER TABLE teams ADD COLUMN usage_seq bigint NOT NULL DEFAULT 0;

-- Operations that wait for a person: no worker claims them (not QUEUED, no lease) and no
-- cluster queue waits behind them (their serial_key is their own until approved).
ALTER TABLE operations DROP CONSTRAINT operations_state_check;
ALTER TABLE operations ADD CONSTRAINT operations_state_check
    CHECK (state IN ('PENDING_APPROVAL', 'QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLING', 'CANCELLED'));

-- Queue order: when an operation joined its cluster's queue. It is its create_time,
-- except for an approved operation, which joins at its approval (an operation queued on
-- the cluster while it waited must not find it ahead of itself).
ALTER TABLE operations ADD COLUMN queue_time timestamptz NOT NULL DEFAULT now();
UPDATE operations SET queue_time = create_time WHERE end_time IS NULL;
DROP INDEX operations_unfinished;
CREATE INDEX operations_unfinished ON operations (serial_key, queue_time, id) WHERE end_time IS NULL;
DROP INDEX operations_claimable;
CREATE INDEX operations_claimable ON operations (queue_time, id) WHERE end_time IS NULL;

-- What an operation waiting for approval needs to be approved: the queue it joins, the
-- request approval replays (re-checked then: the world may have changed), and the
-- decision.
CREATE TABLE approvals (
    operation_id uuid PRIMARY KEY REFERENCES operations (id) ON DELETE CASCADE,
    team_id      text NOT NULL,
    requested_by text NOT NULL,
    serial_key   text NOT NULL,
    request      jsonb NOT NULL,
    policy       jsonb NOT NULL,
    expire_time  timestamptz NOT NULL,
    decision     text CHECK (decision IN ('APPROVED', 'REJECTED', 'EXPIRED')),
    decided_by   text,
    comment      text,
    decide_time  timestamptz
);
CREATE INDEX approvals_pending ON approvals (expire_time) WHERE decision IS NULL;
CREATE INDEX approvals_pending_by_team ON approvals (team_id, operation_id) WHERE decision IS NULL;
