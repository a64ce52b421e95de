-- sessionmem schema version 3: search documents written after the save's commit.
-- Applied by the program (storage/postgres, schema.go) inside one transaction.

-- A save no longer writes its records' documents in its own transaction: each process queues
-- them and writes them shortly after (storage/postgres, docqueue.go), and docs_through says
-- how far they are. docs_gen counts the rewrites of the session's records (redaction): a
-- document built from a record before a rewrite is written only while docs_gen is still
-- what it was when the record was read, so old text never returns to the index.
ALTER TABLE sessionmem_sessions ADD COLUMN docs_gen bigint NOT NULL DEFAULT 0;
