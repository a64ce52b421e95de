-- sessionmem schema version 1: sessions, their records in zstd chunks, idempotency keys.
-- Applied by the program (storage/postgres, migrate.go) inside one transaction.

-- One row per session: the header (immutable) and the listing metadata (rewritten by every
-- save). sid is the internal key the other tables use (8 bytes instead of the text id, and a
-- session deleted and created again under the same id gets a new one).
CREATE TABLE sessionmem_sessions (
    sid            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id             text COLLATE "C" NOT NULL UNIQUE,
    format         smallint NOT NULL,
    nonce          text NOT NULL,
    created_ns     bigint NOT NULL,      -- Unix nanoseconds: Go times round-trip exactly
    working_dir    text NOT NULL,
    dir_key        text NOT NULL,        -- working_dir without trailing / or \ (list filter)
    parent_session text NOT NULL DEFAULT '',
    name           text NOT NULL DEFAULT '',
    model          text NOT NULL DEFAULT '',
    provider       text NOT NULL DEFAULT '',
    updated_ns     bigint NOT NULL,
    messages       bigint NOT NULL DEFAULT 0,
    compactions    bigint NOT NULL DEFAULT 0,
    context_tokens bigint NOT NULL DEFAULT 0,
    preview        text NOT NULL DEFAULT '',
    match_name     text NOT NULL DEFAULT '', -- name and preview lower-cased by Go's
    match_preview  text NOT NULL DEFAULT '', -- strings.ToLower (the list text filter)
    leaf           text NOT NULL DEFAULT '',
    checkpoint     bigint NOT NULL DEFAULT 0,
    last_seq       bigint NOT NULL DEFAULT 0,
    -- Where the chunks stand (storage/postgres, append.go): records up to l2_end are in
    -- level-2 chunks, the last of which starts at open_l2 and may still grow (0: it may not);
    -- records up to l1_end are in l1_chunks level-1 chunks; the rest, l0_bytes of JSONL, in
    -- level-0 chunks.
    l2_end         bigint NOT NULL DEFAULT 0,
    l1_end         bigint NOT NULL DEFAULT 0,
    l1_chunks      int NOT NULL DEFAULT 0,
    l0_bytes       bigint NOT NULL DEFAULT 0,
    open_l2        bigint NOT NULL DEFAULT 0
);
-- Listing: newest first, ties by id, optionally within one working directory.
CREATE INDEX sessionmem_sessions_dir ON sessionmem_sessions (dir_key, updated_ns DESC, id);
CREATE INDEX sessionmem_sessions_updated ON sessionmem_sessions (updated_ns DESC, id);

-- A session's records, first_seq..last_seq, as one zstd frame of JSONL lines (each line
-- `{"seq":N,...}`). An append adds a level-0 chunk; level-0 chunks are merged into level-1
-- chunks of about 32 records, and those into level-2 chunks of up to 1,024 records or 1 MiB,
-- which compress several times better. Chunks never overlap and leave no gap.
CREATE TABLE sessionmem_chunks (
    sid       bigint NOT NULL REFERENCES sessionmem_sessions (sid) ON DELETE CASCADE,
    first_seq bigint NOT NULL,
    last_seq  bigint NOT NULL,
    raw_bytes bigint NOT NULL,           -- uncompressed size (the JSONL lines)
    level     smallint NOT NULL,
    data      bytea NOT NULL,
    PRIMARY KEY (sid, first_seq),
    CHECK (last_seq >= first_seq)
);
-- Already compressed: store large values out of line without trying pglz on them.
ALTER TABLE sessionmem_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
-- Every merge deletes the chunks it replaces: vacuum them soon, so their space is
-- reused instead of growing the table (the default waits for 20% of the table to be dead).
ALTER TABLE sessionmem_chunks SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 200,
    toast.autovacuum_vacuum_scale_factor = 0.01, toast.autovacuum_vacuum_threshold = 200);

-- Idempotency keys (Record.Key, memory's client message ids): a replayed key is refused.
-- The key is stored as its 64-bit xxhash (a row of 40 bytes plus 24 in the index, where the
-- text would take about three times as much); two distinct keys of one session colliding has
-- a probability of about n^2/2^65 for n keys, 3e-10 at 100,000 messages in one session.
CREATE TABLE sessionmem_keys (
    sid      bigint NOT NULL REFERENCES sessionmem_sessions (sid) ON DELETE CASCADE,
    key_hash bigint NOT NULL,
    PRIMARY KEY (sid, key_hash)
);
