-- Webhooks (issue 30 item 3): a team's subscriptions, and one delivery per (webhook,
-- audit event) it matches, written by a trigger on `events` in the transaction of the
-- event itself, so an event and its deliveries commit or vanish together. (0011 is the
-- usage work's.)
CREATE TABLE webhooks (
    team_id     text NOT NULL REFERENCES teams (team_id) ON DELETE CASCADE,
    id          text NOT NULL,
    url         text NOT NULL,
    -- WebhookEvent names (OPERATION_FINISHED, ...), none twice.
    events      text[] NOT NULL CHECK (cardinality(events) > 0),
    format      text NOT NULL CHECK (format IN ('JSON', 'SLACK')),
    -- The HMAC key, `whsec_<64 hex>`: shown once by the create reply, then only used to sign.
    secret      text NOT NULL,
    created_by  text NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, id)
);

-- A webhook's deliveries go with it (deleting a webhook removes its pending ones).
CREATE TABLE webhook_deliveries (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    team_id           text NOT NULL,
    webhook_id        text NOT NULL,
    event             text NOT NULL,
    event_id          uuid NOT NULL,
    -- The audit event as it was: {time, team, target, actor, type, details}.
    payload           jsonb NOT NULL,
    state             text NOT NULL DEFAULT 'PENDING'
                      CHECK (state IN ('PENDING', 'DELIVERED', 'FAILED')),
    attempts          integer NOT NULL DEFAULT 0,
    next_attempt_time timestamptz NOT NULL DEFAULT now(),
    lease_owner       text,
    lease_expire      timestamptz,
    last_status       integer,
    last_error        text,
    create_time       timestamptz NOT NULL DEFAULT clock_timestamp(),
    deliver_time      timestamptz,
    FOREIGN KEY (team_id, webhook_id) REFERENCES webhooks (team_id, id) ON DELETE CASCADE
);
-- What is due, oldest first (the delivery loop's claim).
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_time)
    WHERE state = 'PENDING';
-- A webhook's log, newest first.
CREATE INDEX webhook_deliveries_log
    ON webhook_deliveries (team_id, webhook_id, create_time DESC, id DESC);

-- Every try of a delivery: when, how long, and the HTTP status or the error.
CREATE TABLE webhook_attempts (
    delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt     integer NOT NULL,
    time        timestamptz NOT NULL,
    duration_ms integer NOT NULL,
    status      integer,
    error       text,
    PRIMARY KEY (delivery_id, attempt)
);

-- The webhook events an audit event is (none for most): the mapping of issue 30.
CREATE FUNCTION webhook_events_of(type text, details jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN type = 'OPERATION_STATE_CHANGED' THEN CASE
            WHEN details ->> 'to' = 'CANCELLED' AND details ->> 'reason' = 'APPROVAL_EXPIRED'
                THEN ARRAY['OPERATION_FINISHED', 'APPROVAL_DECIDED']
            WHEN details ->> 'to' IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
                THEN ARRAY['OPERATION_FINISHED']
            WHEN details ->> 'to' = 'PENDING_APPROVAL' THEN ARRAY['APPROVAL_NEEDED']
            ELSE ARRAY[]::text[]
        END
        WHEN type IN ('OPERATION_APPROVED', 'OPERATION_REJECTED') THEN ARRAY['APPROVAL_DECIDED']
        WHEN type IN ('IDLE_WARNING', 'IDLE_ACTION', 'TTL_WARNING', 'BUDGET_THRESHOLD',
                      'SPOT_RECLAIMED') THEN ARRAY[type]
        ELSE ARRAY[]::text[]
    END
$$;

-- One delivery per matching webhook of the event's team, and a wake-up for the delivery
-- loops (sent at commit, dropped with a rollback).
CREATE FUNCTION events_fan_out_webhooks() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    kinds text[];
BEGIN
    IF NEW.team_id IS NULL THEN
        RETURN NULL;
    END IF;
    kinds := webhook_events_of(NEW.type, NEW.details);
    IF cardinality(kinds) = 0 THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (team_id, webhook_id, event, event_id, payload)
    SELECT w.team_id, w.id, k, NEW.id, jsonb_build_object(
               'time', NEW.time, 'team', NEW.team_id, 'target', NEW.target,
               'actor', NEW.actor, 'auditType', NEW.type, 'details', NEW.details)
    FROM webhooks w CROSS JOIN unnest(kinds) AS k
    WHERE w.team_id = NEW.team_id AND k = ANY (w.events);
    IF FOUND THEN
        PERFORM pg_notify('kinetic_webhooks', 'due');
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER events_webhooks AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_fan_out_webhooks();
