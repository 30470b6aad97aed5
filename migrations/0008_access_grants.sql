-- The IAM grants kineticd made from team rosters (issue 28): a SYNC_ACCESS operation
-- revokes only what is recorded here, so a grant someone made by hand is never touched.
-- `resource` is the policy's resource (`projects/p`, `projects/_/buckets/b`, ...),
-- `member` the IAM member (`user:alice@example.com`). A PENDING row is written before the
-- policy is set and becomes GRANTED after; a row left PENDING by a crash counts as ours.
CREATE TABLE access_grants (
    resource   text NOT NULL,
    role       text NOT NULL,
    member     text NOT NULL,
    state      text NOT NULL CHECK (state IN ('PENDING', 'GRANTED')),
    team_id    text,
    grant_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (resource, role, member)
);
