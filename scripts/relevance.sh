#!/usr/bin/env bash
# The judged relevance benchmark (issue 21): recall@5, recall@10, MRR, hit@10 and the share of
# questions answered with nothing, for the local store and PostgreSQL (when its server
# binaries are installed) through the built binary, beside a plain BM25 baseline; overall and
# per kind of question. Data: testdata/relevance (233 questions judged by reading four real
# coding sessions).
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -run '^TestRelevanceEndToEnd$' -v ./cmd/sessionmem/ 2>&1 | sed -n '/judged questions/,/^---/p'
