-- AIP-155 request ids of the mutations that answer at once (teams, members, profiles,
-- cancel): the first answer, returned again to a retry with the same id and request.
-- The key is inserted first in the mutation's transaction, so a concurrent identical
-- request blocks on it and then finds the winner's answer; a mutation that fails rolls
-- its key back with it, so a retry runs again. Kept as long as idempotency_keys (24 h).
CREATE TABLE request_replies (
    caller       text NOT NULL,
    key          text NOT NULL,
    fingerprint  text NOT NULL,
    reply        jsonb NOT NULL DEFAULT 'null',
    create_time  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (caller, key)
);
CREATE INDEX request_replies_by_time ON request_replies (create_time);
