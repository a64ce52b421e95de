-- sessionmem schema version 4: what BM25 ranking needs (contract v3's session_search).
-- Applied by the program (storage/postgres, schema.go) inside one transaction.

-- len: how many terms the document's text has (BM25's document length), set by every insert.
-- Documents written before this version have none (NULL) until the background fill of a
-- server reads it off their tsvector's positions (storage/postgres, docslen.go); a search
-- ranks them as of average length meanwhile. Adding a column without a default rewrites
-- nothing, so this migration takes a moment even on a large table.
ALTER TABLE sessionmem_documents ADD COLUMN len integer;
-- The fill's work list. It holds every document at first (building it reads the table once),
-- then empties as the fill goes, and documents written with their len never enter it.
CREATE INDEX sessionmem_documents_len_unknown ON sessionmem_documents (doc) WHERE len IS NULL;

-- How many documents there are and how many terms they hold, for BM25's N and average
-- document length, kept exact by the triggers below in the same transactions as the changes
-- of the documents (inserts, deletes, deletes cascaded from a session, the fill's updates).
-- Sixteen rows summed at read time rather than one: every writer updates the row of its
-- connection (pg_backend_pid() % 16), so writers on different connections do not queue
-- behind one row lock. docs counts every document; lens those whose len is known, and
-- terms the sum of their len.
CREATE TABLE sessionmem_doc_stats (
    slot  smallint PRIMARY KEY,
    docs  bigint NOT NULL DEFAULT 0,
    lens  bigint NOT NULL DEFAULT 0,
    terms bigint NOT NULL DEFAULT 0
);
INSERT INTO sessionmem_doc_stats (slot) SELECT generate_series(0, 15);
UPDATE sessionmem_doc_stats SET docs = (SELECT count(*) FROM sessionmem_documents) WHERE slot = 0;

-- Statement-level triggers with transition tables: one update of one stats row per
-- statement, whatever its number of rows. search_path is fixed to the one the tables were
-- created with, so that the functions find their table whatever a caller's search_path.
CREATE FUNCTION sessionmem_doc_stats_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE sessionmem_doc_stats t SET docs = t.docs + c.docs, lens = t.lens + c.lens, terms = t.terms + c.terms
    FROM (SELECT count(*) AS docs, count(len) AS lens, coalesce(sum(len), 0) AS terms FROM new_docs) c
    WHERE t.slot = pg_backend_pid() % 16 AND c.docs > 0;
    RETURN NULL;
END $$;

CREATE FUNCTION sessionmem_doc_stats_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE sessionmem_doc_stats t SET docs = t.docs - c.docs, lens = t.lens - c.lens, terms = t.terms - c.terms
    FROM (SELECT count(*) AS docs, count(len) AS lens, coalesce(sum(len), 0) AS terms FROM old_docs) c
    WHERE t.slot = pg_backend_pid() % 16 AND c.docs > 0;
    RETURN NULL;
END $$;

CREATE FUNCTION sessionmem_doc_stats_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE sessionmem_doc_stats t SET lens = t.lens + c.lens, terms = t.terms + c.terms
    FROM (SELECT (SELECT count(len) FROM new_docs) - (SELECT count(len) FROM old_docs) AS lens,
        (SELECT coalesce(sum(len), 0) FROM new_docs) - (SELECT coalesce(sum(len), 0) FROM old_docs) AS terms) c
    WHERE t.slot = pg_backend_pid() % 16 AND (c.lens <> 0 OR c.terms <> 0);
    RETURN NULL;
END $$;

CREATE TRIGGER sessionmem_doc_stats_insert AFTER INSERT ON sessionmem_documents
    REFERENCING NEW TABLE AS new_docs FOR EACH STATEMENT EXECUTE FUNCTION sessionmem_doc_stats_insert();
CREATE TRIGGER sessionmem_doc_stats_delete AFTER DELETE ON sessionmem_documents
    REFERENCING OLD TABLE AS old_docs FOR EACH STATEMENT EXECUTE FUNCTION sessionmem_doc_stats_delete();
CREATE TRIGGER sessionmem_doc_stats_update AFTER UPDATE ON sessionmem_documents
    REFERENCING OLD TABLE AS old_docs NEW TABLE AS new_docs FOR EACH STATEMENT EXECUTE FUNCTION sessionmem_doc_stats_update();
