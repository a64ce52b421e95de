-- sessionmem schema version 2: full-text search documents and store-wide settings.
-- Applied by the program (storage/postgres, schema.go) inside one transaction.

-- Every record before docs_through (inclusive) has its documents in sessionmem_documents.
-- An Append writes the documents of its records in its own transaction and moves
-- docs_through along when it was caught up; the backfill (storage/postgres, docs.go) builds
-- what is missing (records stored before this version, or by a handle without Options.Docs).
ALTER TABLE sessionmem_sessions ADD COLUMN docs_through bigint NOT NULL DEFAULT 0;
-- The backfill's work list: sessions whose documents are behind their records.
CREATE INDEX sessionmem_sessions_docs_behind ON sessionmem_sessions (sid) WHERE docs_through < last_seq;

-- One row per searchable document (a message, or a compaction's summary) of a record. No
-- text is kept: terms is the tsvector of the text, built in Go (storage/fts.TSVector) with
-- sessionmem's own tokenizer, and snippets are cut from the record read back from the chunks.
-- The session's name and working directory are read from sessionmem_sessions at search
-- time, so a rename reaches every hit at once.
CREATE TABLE sessionmem_documents (
    sid      bigint NOT NULL REFERENCES sessionmem_sessions (sid) ON DELETE CASCADE,
    seq      bigint NOT NULL,              -- the record's seq
    n        smallint NOT NULL DEFAULT 0,  -- which document of the record (0, 1, ...)
    doc      bigint GENERATED ALWAYS AS IDENTITY, -- insertion order: the ranking window, ties, paging snapshots
    entry_id text NOT NULL,
    kind     text NOT NULL,                -- 'message' or 'summary'
    role     text NOT NULL,
    time_ns  bigint NOT NULL,              -- Unix nanoseconds
    files    text[] NOT NULL DEFAULT '{}', -- absolute, cleaned paths the record's tool calls touched
    terms    tsvector NOT NULL,
    PRIMARY KEY (sid, seq, n)
);
-- Keep tsvectors in the row, compressed, rather than out of line in the TOAST table: ranking
-- reads the tsvector of every match, and a TOAST fetch per match made that 2-3 times slower.
ALTER TABLE sessionmem_documents ALTER COLUMN terms SET STORAGE MAIN;
CREATE INDEX sessionmem_documents_terms ON sessionmem_documents USING gin (terms);
CREATE INDEX sessionmem_documents_files ON sessionmem_documents USING gin (files);
-- A search's snapshot (the newest document) and the ranking window's floor. No B-tree on time:
-- every search starts from a GIN index (the words or the files), and each index costs every
-- save an insert.
CREATE UNIQUE INDEX sessionmem_documents_doc ON sessionmem_documents (doc);

-- Store-wide settings (storage.Settings): e.g. which redaction rules the whole store was last
-- redacted with, so that every server re-applies new rules once.
CREATE TABLE sessionmem_settings (
    key        text COLLATE "C" PRIMARY KEY,
    value      text NOT NULL,
    updated_ns bigint NOT NULL
);
