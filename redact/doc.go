// Package redact removes secrets from text before it reaches disk: API keys of common
// providers (OpenAI, Anthropic, AWS, GitHub, GitLab, Slack, Stripe, Google, Hugging Face, mem0,
// npm, Heroku), JWTs, Authorization and Bearer credentials, PEM private keys, credentials in
// URLs, secret-looking assignments (password=…, "api_key": "…", GITHUB_TOKEN=…, --token …),
// keys in URL query strings (?key=…, &X-Amz-Signature=…), .env lines (APP_KEY=…, DB_PASS=…),
// netrc entries, the secrets of common command lines (aws configure set …, npm config set …,
// echo … | gh auth login --with-token, docker login -p …, curl -u user:…, heroku auth:token),
// and <private>…</private> spans the user marked, plus user-supplied patterns.
//
// Whole secrets become "[REDACTED:kind]" (kind names the provider, e.g. openai-key); in
// assignments and command lines only the value is replaced and the key is kept
// ("password=[REDACTED]"). Redaction is idempotent. A one-pass prefilter keeps the cost of
// clean text low. The rules are checked against a corpus of both sides in the repository's
// testdata/redact: secrets in the forms they arrive in, and lookalikes that must never change
// (git SHAs, UUIDs, lock-file and go.sum checksums, npm integrity, docker digests, base64
// images, paths).
//
// NewHandler wraps a slog.Handler so that log records are redacted too.
//
// Imports: the standard library only; nothing of sessionmem. Package redacttest generates
// fake secrets of every kind for tests.
//
// Concurrency: a Redactor is immutable after New and safe for concurrent use.
package redact
