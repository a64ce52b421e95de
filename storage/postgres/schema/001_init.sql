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
    sealed_seq     bigint NOT NULL DEFAULT 0, -- records up to here are in sealed chunks
    tail_bytes     bigint NOT NULL DEFAULT 0  -- raw bytes of the records after sealed_seq
);
-- Listing: newest first, ties by id, optionally within one working directory.
CREATE INDEX sessionmem_sessions_dir ON sessionmem_sessions (dir_key, updated_ns DESC, id);
CREATE INDEX sessionmem_sessions_updated ON sessionmem_sessions (updated_ns DESC, id);

-- A session's records, first_seq..last_seq, as one zstd frame of JSONL lines (each line
-- `{"seq":N,...}`). An append adds one unsealed chunk; when the unsealed chunks reach the
-- seal threshold they are replaced by sealed chunks of up to that size, which compress
-- several times better. Chunks never overlap and leave no gap.
CREATE TABLE sessionmem_chunks (
    sid       bigint NOT NULL REFERENCES sessionmem_sessions (sid) ON DELETE CASCADE,
    first_seq bigint NOT NULL,
    last_seq  bigint NOT NULL,
    raw_bytes bigint NOT NULL,           -- uncompressed size (the JSONL lines)
    sealed    boolean NOT NULL,
    data      bytea NOT NULL,
    PRIMARY KEY (sid, first_seq),
    CHECK (last_seq >= first_seq)
);
-- Already compressed: store large values out of line without trying pglz on them.
ALTER TABLE sessionmem_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Idempotency keys (Record.Key, memory's client message ids): a replayed key is refused.
CREATE TABLE sessionmem_keys (
    sid bigint NOT NULL REFERENCES sessionmem_sessions (sid) ON DELETE CASCADE,
    key text COLLATE "C" NOT NULL,
    PRIMARY KEY (sid, key)
);
