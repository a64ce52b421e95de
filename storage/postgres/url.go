package postgres

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Two parsers read a store URL: Go's net/url (Redact, the labels in logs and output) and
// pgx's libpq-style parser (what is connected to). They disagree on URLs whose user name or
// password holds an unencoded '@', '/', '#' or '?': pgx ends the user information at the first
// '@' before the first '/', net/url at the last '@' before the first '/', '?' or '#'. With
// postgres://u:pa@ss@host/db, pgx connects to the host "ss@host" (a DNS lookup carrying part of
// the password, and errors quoting it) while the label shows u:xxxxx@host. CheckURL refuses
// every such URL before anything parses it for connecting, so both parsers always see the
// same user, password and host, and the password shows nowhere.

// ErrMalformedURL is wrapped by the errors of CheckURL, New and Open for a URL that cannot be
// used as written. Their text never holds the password.
var ErrMalformedURL = errors.New("malformed PostgreSQL URL")

// URLError is a store URL refused before any connection attempt: what is wrong and how to
// write it. Its text holds no part of the URL's password.
type URLError struct{ Msg string }

func (e *URLError) Error() string { return "malformed PostgreSQL URL: " + e.Msg }

// Unwrap makes a URLError an ErrMalformedURL.
func (e *URLError) Unwrap() error { return ErrMalformedURL }

// urlForm is appended to the refusals: how a URL is written.
const urlForm = "write postgres://user:password@host:5432/dbname?sslmode=disable, " +
	"percent-encoding in the user name and password every @ as %40, / as %2F, : as %3A, # as %23 and ? as %3F"

// splitScheme returns the scheme of a scheme://rest URL (as written) and rest; ok is false
// when raw is not of the postgres:// or postgresql:// form (in any letter case).
func splitScheme(raw string) (scheme, rest string, ok bool) {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return "", "", false
	}
	switch strings.ToLower(raw[:i]) {
	case "postgres", "postgresql":
		return raw[:i], raw[i+3:], true
	}
	return "", "", false
}

// NormalizeURL lower-cases the scheme of a postgres:// URL (POSTGRES://, Postgresql://):
// pgx recognises only the lower-case schemes and would take anything else for a keyword/value
// connection string. Anything else is returned unchanged.
func NormalizeURL(raw string) string {
	scheme, rest, ok := splitScheme(raw)
	if !ok {
		return raw
	}
	return strings.ToLower(scheme) + "://" + rest
}

// CheckURL reports whether a postgres:// URL (scheme in any letter case) can be used as
// written: net/url parses it, pgx would read the same user, password and host from it, and it
// names something to connect to. The error, a *URLError, says what is wrong without quoting
// the password. A keyword/value connection string (host=… dbname=…) is not checked.
func CheckURL(raw string) error {
	_, rest, ok := splitScheme(raw)
	if !ok {
		return nil
	}
	if rest == "" {
		return &URLError{Msg: "it names no host or database; " + urlForm}
	}
	if strings.ContainsAny(raw, "#") {
		return &URLError{Msg: "it holds a '#' (if it is in the password, percent-encode it as %23); " + urlForm}
	}
	// pgx's user information: up to the first '@', unless a '/' comes before it.
	after := rest
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		if strings.ContainsAny(rest[:i], "?") {
			return &URLError{Msg: "the part before '@' holds a '?' (if it is in the password, percent-encode it as %3F); " + urlForm}
		}
		after = rest[i+1:]
	}
	// Any '@' left before the query means a user name or password holding an unencoded '@'
	// (or a '/', which ends the host part for both parsers before the '@').
	beforeQuery, _, _ := strings.Cut(after, "?")
	if strings.Contains(beforeQuery, "@") {
		return &URLError{Msg: "more than one '@', or an '@' after a '/': the password (or user name) must percent-encode '@' as %40 and '/' as %2F; " + urlForm}
	}
	u, err := url.Parse(NormalizeURL(raw))
	if err != nil {
		msg := "it cannot be parsed"
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = RedactText(ue.Err.Error(), passwordCandidates(raw)...)
		}
		return &URLError{Msg: msg + "; " + urlForm}
	}
	if u.Opaque != "" {
		return &URLError{Msg: "it lacks the // after the scheme; " + urlForm}
	}
	return nil
}

// passwordCandidates returns what either parser could take for the password of raw: pgx's
// (after the first ':' up to the first '@' before any '/') and net/url's, for scrubbing texts
// about the URL itself.
func passwordCandidates(raw string) []string {
	var out []string
	if _, rest, ok := splitScheme(raw); ok {
		if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
			if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
				out = append(out, pw)
			}
		}
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
				out = append(out, pw)
			}
		}
	}
	if pw := passwordOf(raw); pw != "" {
		out = append(out, pw)
	}
	return out
}

var (
	// userinfoRE finds scheme://user:password@ in a text; the password runs to the last '@'
	// before white space or a quote, so a password holding '@' is masked whole.
	userinfoRE = regexp.MustCompile("(?i)\\b([a-z][a-z0-9+.-]*://[^\\s/@:\"'`]*):[^\\s\"'`]*@")
	// passwordParamRE finds password=… (keyword/value strings, URL query parameters).
	passwordParamRE = regexp.MustCompile(`(?i)\b((?:ssl)?password=)('[^']*'|[^\s&"'` + "`" + `]+)`)
)

// RedactText masks every password it can recognise in a text that may quote a connection
// string (an error from pgx or net/url): each of secrets, the password of any
// scheme://user:password@ URL, and every password= value. It is applied to every error text
// the store returns, on top of leaving URLs out of them, so that no error path can carry a
// password even if a library starts quoting its input.
func RedactText(text string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= 3 {
			text = strings.ReplaceAll(text, s, "xxxxx")
		}
	}
	text = userinfoRE.ReplaceAllString(text, "${1}:xxxxx@")
	return passwordParamRE.ReplaceAllString(text, "${1}xxxxx")
}

// parseError is the error for a URL pgx cannot parse: pgx's reason without the connection
// string its error quotes (pgx masks the password there only as far as it can tell which
// part is the password).
func parseError(raw string, err error) error {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		msg = pe.Error()
		// "cannot parse `…`: reason": leave out the quoted string.
		if i, j := strings.Index(msg, "`"), strings.LastIndex(msg, "`"); i >= 0 && j > i {
			msg = msg[:i] + "the URL" + msg[j+1:]
		}
	}
	msg = RedactText(strings.ReplaceAll(msg, raw, "the URL"), passwordCandidates(raw)...)
	return &URLError{Msg: joinErrorLines(msg) + "; " + urlForm}
}
