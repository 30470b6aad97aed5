-- The secret that signs page tokens (HMAC-SHA256): one row, generated on first use by
-- whichever replica starts first, so tokens work across replicas and survive restarts.
CREATE TABLE page_token_key (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    key bytea NOT NULL CHECK (length(key) >= 32),
    create_time timestamptz NOT NULL DEFAULT now()
);
