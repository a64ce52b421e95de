// Package redact removes secrets from text before it reaches disk: API keys of common
// providers (OpenAI, Anthropic, AWS, GitHub, GitLab, Slack, Stripe, Google, Hugging Face, mem0,
// npm), JWTs, Authorization and Bearer credentials, PEM private keys, credentials in URLs,
// secret-looking assignments (password=…, "api_key": "…", GITHUB_TOKEN=…, --token …), and
// <private>…</private> spans the user marked, plus user-supplied patterns.
//
// Whole secrets become "[REDACTED:kind]" (kind names the provider, e.g. openai-key); in
// assignments only the value is replaced and the key is kept ("password=[REDACTED]").
// Redaction is idempotent. A one-pass prefilter keeps the cost of clean text low.
//
// Imports: the standard library only; nothing of sessionmem.
//
// Concurrency: a Redactor is immutable after New and safe for concurrent use.
package redact
