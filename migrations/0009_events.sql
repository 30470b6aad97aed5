-- The audit trail (issue 29): one row per thing that happened, appended and never
-- changed. `team_id` has no foreign key: the trail outlives the team it tells about
-- (TEAM_DELETED is itself an event of the team). `time` is the clock when the row was
-- written (`clock_timestamp()`, not the transaction's start), so events written in one
-- transaction keep their order. Rows are removed only by retention (DELETE by time).
CREATE TABLE events (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id    text,
    time       timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor      text NOT NULL,
    type       text NOT NULL,
    target     text NOT NULL,
    request_id text,
    details    jsonb NOT NULL DEFAULT '{}'
);
-- A team's trail, newest first (GET /v1/teams/{team}/events, one index range).
CREATE INDEX events_by_team ON events (team_id, time DESC, id DESC);
-- Every team's trail, newest first (GET /v1/events), and retention's cut by time.
CREATE INDEX events_by_time ON events (time DESC, id DESC);

-- Append-only: an UPDATE is refused whoever sends it (DELETE stays for retention).
CREATE FUNCTION events_refuse_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only: UPDATE is not allowed'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER events_append_only BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION events_refuse_update();

-- Every state an operation enters, as an OPERATION_STATE_CHANGED event: on insert (by
-- its creator) and on every change of `state` (by kineticd). Whatever states exist
-- (the CHECK on operations may widen): the trigger copies them as text. The reason of a
-- FAILED or CANCELLED operation is its error's first ErrorInfo reason (lax JSON path:
-- an error of another shape gives none, never a failed write).
CREATE FUNCTION operations_record_state() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    actor   text;
    details jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        actor := NEW.created_by;
        details := jsonb_build_object('from', NULL::text, 'to', NEW.state);
    ELSE
        actor := 'kineticd';
        details := jsonb_build_object('from', OLD.state, 'to', NEW.state);
    END IF;
    details := details || jsonb_build_object(
        'operationType', NEW.op_type, 'operationTarget', NEW.target);
    IF NEW.state IN ('FAILED', 'CANCELLED') THEN
        details := details || jsonb_build_object(
            'reason', jsonb_path_query_first(NEW.error, 'lax $.details[*].reason') #>> '{}');
    END IF;
    INSERT INTO events (team_id, actor, type, target, details)
    VALUES (NEW.team_id, actor, 'OPERATION_STATE_CHANGED', 'operations/' || NEW.id, details);
    RETURN NULL;
END;
$$;
CREATE TRIGGER operations_state_inserted AFTER INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_record_state();
CREATE TRIGGER operations_state_changed AFTER UPDATE OF state ON operations
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION operations_record_state();
