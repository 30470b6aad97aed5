-- What GET /v1/operations/{id} answers for a finished operation, kept so it is served as
-- stored bytes instead of being decoded and rendered again on every poll. A finished
-- operation's row never changes (every engine write is fenced on `end_time IS NULL`),
-- except `team_id` becoming NULL when its team is deleted: the service stores a rendering
-- only for a finished row with a team and serves it only while the row still has one.
-- `rendered_format` names the rendering's format (the Operation schema's hash and a
-- revision): a rendering of another format is rendered again. Rows without one (older
-- rows, unfinished operations) render the normal way.
ALTER TABLE operations
    ADD COLUMN rendered text,
    ADD COLUMN rendered_format text;
