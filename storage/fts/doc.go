// Package fts is sessionmem's search language and token model, shared by every storage
// backend's full-text index.
//
// # What it owns
//
//   - The query language of session_search (contract v3): words, ranked rather than all
//     required (an entry needs one of them that is not a function word, IsStopWord), +word and
//     "quoted phrases" that must occur, a trailing * for a prefix, -word and -"phrase" for
//     exclusions. Parse turns a query string into a Query (an AST) or an *Error that says what
//     was wrong and what to do, so callers can turn it into a tool error as is. Query.Matches
//     is the reference meaning every index implements.
//   - The tokenizer used both to index text and to read queries (Tokenize, AppendTerms), so
//     that a query word and the text it should find always yield the same terms, English
//     words by their stem (AppendStem, the Porter2 algorithm).
//   - The ranking both stores share: BM25's parameters and terms (K1, B, IDF, TermScore) and
//     how much of the neighbouring messages' scores an entry gets (ContextScore).
//   - Snippet extraction: plain text of at most 300 characters around the best match, cut
//     from a document's text (which the store, not the index, keeps).
//   - Doc, what an index receives for one stored record.
//   - The PostgreSQL encoding of the token model: TSVector and Query.TSQuery build tsvector
//     and tsquery literals from the same terms (checked against a real server by
//     TestPostgresOracle when SESSIONMEM_TEST_POSTGRES is set).
//
// # Token model
//
// A term is a maximal run of word characters (Unicode letters, decimal digits, combining
// marks and '_'), lower-cased; every other character separates terms. A term of three or
// more ASCII letters is replaced by its English stem (Stemmable), so that fix, fixes, fixed
// and fixing are one term; the decision looks at the word alone (not its case, not its
// neighbours), so a query and its text always agree. Each Han, Hiragana or
// Katakana character is a term of its own, since those scripts do not separate words. Terms
// are numbered 0, 1, 2... in text order; a phrase matches consecutive positions. Terms longer
// than MaxTermBytes (base64 blobs, minified code) are dropped.
//
// Identifiers are kept whole: parseConfig, parse_config and ParseConfig(x) each yield one
// term (parseconfig / parse_config). Paths, dotted names and kebab-case split at their
// punctuation, and a query word that splits into several terms is searched as a phrase of
// them, so auth/login.go (auth, login, go in a row) finds internal/auth/login.go and
// /home/me/internal/auth/login.go:42, and login.go finds both. camelCase and snake_case
// parts are deliberately not indexed as terms of their own: the contract asks for whole
// identifiers, and parts would hurt ranking (next section).
//
// # Why no identifier parts and no separate path terms (ranking)
//
// Splitting parseConfig into parse + config would make a query for the English word
// "config" match every entry that mentions loadConfig, ConfigMap or config_test; in coding
// transcripts tool output dominates the text, so those entries would outnumber and, by term
// frequency, outrank the ones that talk about configuration. BM25's inverse document
// frequency also rewards a rare whole identifier (parseconfig) over its common parts, which
// only works if the whole identifier is a term. A prefix (parse*) covers "identifiers that
// start with". Indexing whole paths (internal/auth/login.go) and their suffixes as extra terms
// would add several terms per path mention without changing what is found: BM25 in FTS5 and
// ts_rank in PostgreSQL score a phrase by its own rarity, so auth/login.go as a phrase ranks
// like a path term would.
//
// # Imports
//
// Standard library only. Backends (storage/ftsindex for the local store, storage/postgres)
// run the queries; nothing here talks to a database.
package fts
