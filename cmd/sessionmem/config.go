package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sessionmem/sessionmem/compaction"
	"github.com/sessionmem/sessionmem/fileops"
	"github.com/sessionmem/sessionmem/memory"
)

// Environment variables read by serve. Secrets (the token, the LLM API key) come only from
// the environment, never from flags, so they do not show up in process listings.
const (
	envStore           = "SESSIONMEM_STORE"
	envHTTP            = "SESSIONMEM_HTTP"
	envToken           = "SESSIONMEM_TOKEN"
	envLogLevel        = "SESSIONMEM_LOG_LEVEL"
	envLogFile         = "SESSIONMEM_LOG_FILE"
	envLLMURL          = "SESSIONMEM_LLM_URL"
	envLLMModel        = "SESSIONMEM_LLM_MODEL"
	envLLMAPIKey       = "SESSIONMEM_LLM_API_KEY"
	envFileTools       = "SESSIONMEM_FILE_TOOLS"
	envRedact          = "SESSIONMEM_REDACT_PATTERNS"
	envSamplingTimeout = "SESSIONMEM_SAMPLING_TIMEOUT"
	envMaxSessions     = "SESSIONMEM_MAX_SESSIONS"
	envMaxAge          = "SESSIONMEM_MAX_AGE"
	envMetricsAddr     = "SESSIONMEM_METRICS_ADDR"
)

// serveConfig is everything serve needs, parsed and validated once at start-up.
type serveConfig struct {
	Store           string
	HTTPAddr        string // empty: stdio
	AllowRemote     bool
	Token           string
	LogLevel        slog.Level
	LogFile         string // empty: stderr
	SamplingTimeout time.Duration
	LLM             compaction.LLMConfig // URL empty: no llm summarizer
	FileMapping     fileops.Mapping
	RedactPatterns  []string
	Retention       memory.RetentionPolicy // applied at start and hourly when enabled
	MetricsAddr     string                 // loopback listener for /metrics; empty: none
}

// configError names the setting that is wrong, its value, and what to do.
type configError struct {
	Field string // flag or environment variable
	Value string
	Msg   string
}

func (e *configError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Msg)
	}
	return fmt.Sprintf("%s=%q: %s", e.Field, e.Value, e.Msg)
}

// loadConfig parses serve's flags and environment (precedence: flag, then environment, then
// default). It reads no files, so tests need none. It returns flag.ErrHelp for --help.
func loadConfig(args []string, getenv func(string) string) (serveConfig, error) {
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	store := fs.String("store", "", "")
	httpAddr := fs.String("http", "", "")
	allowRemote := fs.Bool("allow-remote", false, "")
	logLevel := fs.String("log-level", "", "")
	logFile := fs.String("log-file", "", "")
	samplingTimeout := fs.String("sampling-timeout", "", "")
	maxSessions := fs.String("max-sessions", "", "")
	maxAge := fs.String("max-age", "", "")
	metricsAddr := fs.String("metrics-addr", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, &configError{Field: "flags", Msg: err.Error() + "; run 'sessionmem serve --help'"}
	}
	if fs.NArg() > 0 {
		return cfg, &configError{Field: "arguments", Value: strings.Join(fs.Args(), " "),
			Msg: "serve takes no positional arguments; run 'sessionmem serve --help'"}
	}
	pick := func(flagVal, env string) (string, string) {
		if flagVal != "" {
			return flagVal, ""
		}
		return getenv(env), env
	}

	// Store: --store, $SESSIONMEM_STORE, $XDG_DATA_HOME/sessionmem, ~/.local/share/sessionmem.
	var err error
	if cfg.Store, err = resolveStore(*store, getenv); err != nil {
		return cfg, err
	}

	cfg.Token = getenv(envToken)
	cfg.AllowRemote = *allowRemote
	if err := emptyListenFlags(fs); err != nil {
		return cfg, err
	}
	if err := cfg.loadListeners(pick, *httpAddr, *metricsAddr); err != nil {
		return cfg, err
	}

	level, field := pick(*logLevel, envLogLevel)
	if field == "" {
		field = "--log-level"
	}
	if level != "" {
		if err := cfg.LogLevel.UnmarshalText([]byte(level)); err != nil {
			return cfg, &configError{Field: field, Value: level, Msg: "want debug, info, warn or error"}
		}
	}
	cfg.LogFile, _ = pick(*logFile, envLogFile)

	if err := cfg.loadLimits(pick, *samplingTimeout, *maxSessions, *maxAge); err != nil {
		return cfg, err
	}

	if cfg.LLM, err = llmConfig(getenv); err != nil {
		return cfg, err
	}
	if cfg.FileMapping, err = fileMapping(getenv(envFileTools)); err != nil {
		return cfg, err
	}
	if raw := getenv(envRedact); raw != "" {
		if err := json.Unmarshal([]byte(raw), &cfg.RedactPatterns); err != nil {
			return cfg, &configError{Field: envRedact, Value: raw,
				Msg: `want a JSON array of regular expressions, e.g. ["corp-[0-9a-f]{32}"]`}
		}
	}
	return cfg, nil
}

// emptyListenFlags refuses --http "" and --metrics-addr "": an empty flag would fall back to
// the environment (stdio, for --http), so a script passing an unset variable would get a
// server it did not ask for instead of being told.
func emptyListenFlags(fs *flag.FlagSet) error {
	if flagGiven(fs, "http") && fs.Lookup("http").Value.String() == "" {
		return &configError{Field: "--http", Msg: "empty; give an address such as 127.0.0.1:8080, or leave --http out to serve over stdio"}
	}
	if flagGiven(fs, "metrics-addr") && fs.Lookup("metrics-addr").Value.String() == "" {
		return &configError{Field: "--metrics-addr", Msg: "empty; give a loopback address such as 127.0.0.1:9090, or leave the flag out"}
	}
	return nil
}

// pickFunc returns a flag's value when it was given, else the environment variable's; the
// second result names the variable the value came from ("" for the flag).
type pickFunc func(flagVal, env string) (string, string)

// loadListeners sets the HTTP and metrics addresses (cfg.Token and cfg.AllowRemote already set).
func (cfg *serveConfig) loadListeners(pick pickFunc, httpAddr, metricsAddr string) error {
	addr, field := pick(httpAddr, envHTTP)
	if field == "" {
		field = "--http"
	}
	if addr != "" {
		if err := checkListenAddr(addr, cfg.AllowRemote, cfg.Token != ""); err != nil {
			return &configError{Field: field, Value: addr, Msg: err.Error()}
		}
		cfg.HTTPAddr = addr
	} else if cfg.AllowRemote {
		return &configError{Field: "--allow-remote", Msg: "only applies with --http ADDR"}
	}

	if addr, field := pick(metricsAddr, envMetricsAddr); addr != "" {
		if field == "" {
			field = "--metrics-addr"
		}
		// Loopback only: it serves /metrics without the token. Remote scrapers read
		// /metrics on the --http listener, with the token.
		host, port, err := net.SplitHostPort(addr)
		if err == nil {
			if perr := checkPort(port); perr != nil {
				return &configError{Field: field, Value: addr, Msg: perr.Error()}
			}
		}
		if err != nil || !isLoopback(host) {
			return &configError{Field: field, Value: addr, Msg: "want a loopback host:port such as 127.0.0.1:9090 " +
				"(it serves /metrics without a token; remote scrapers read /metrics on the --http address, with " + envToken + ")"}
		}
		cfg.MetricsAddr = addr
	}
	return nil
}

// loadLimits sets the sampling timeout and the retention policy.
func (cfg *serveConfig) loadLimits(pick pickFunc, samplingTimeout, maxSessions, maxAge string) error {
	cfg.SamplingTimeout = 2 * time.Minute
	st, field := pick(samplingTimeout, envSamplingTimeout)
	if field == "" {
		field = "--sampling-timeout"
	}
	if st != "" {
		d, err := time.ParseDuration(st)
		if err != nil || d <= 0 {
			return &configError{Field: field, Value: st, Msg: "want a positive duration such as 90s or 2m"}
		}
		cfg.SamplingTimeout = d
	}

	var err error
	cfg.Retention, err = loadRetention(pick, maxSessions, maxAge)
	return err
}

// loadRetention reads the retention limits, serve's and prune's: each from its flag when
// given (maxSessions, maxAge as typed), else from SESSIONMEM_MAX_SESSIONS / SESSIONMEM_MAX_AGE.
func loadRetention(pick pickFunc, maxSessions, maxAge string) (memory.RetentionPolicy, error) {
	var p memory.RetentionPolicy
	if v, field := pick(maxSessions, envMaxSessions); v != "" {
		if field == "" {
			field = "--max-sessions"
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, &configError{Field: field, Value: v, Msg: "want a number of sessions to keep, 0 for no limit"}
		}
		p.MaxSessions = n
	}
	if v, field := pick(maxAge, envMaxAge); v != "" {
		if field == "" {
			field = "--max-age"
		}
		var d dayDuration
		if err := d.Set(v); err != nil {
			return p, &configError{Field: field, Value: v, Msg: err.Error() + " (0 for no limit)"}
		}
		p.MaxAge = d.d
	}
	return p, nil
}

// checkListenAddr refuses to expose the store beyond this machine by accident: a non-loopback
// (or unspecified, e.g. ":8080") host needs --allow-remote and a bearer token.
func checkListenAddr(addr string, allowRemote, haveToken bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port such as 127.0.0.1:8080 (%v)", err)
	}
	if err := checkPort(port); err != nil {
		return err
	}
	if isLoopback(host) {
		return nil
	}
	if !allowRemote {
		return errors.New("not a loopback address: the server would be reachable from other machines; " +
			"bind 127.0.0.1, or pass --allow-remote and set " + envToken)
	}
	if !haveToken {
		return errors.New("--allow-remote needs a bearer token: set " + envToken)
	}
	return nil
}

// checkPort checks the port of a listen address, so that a port listen would refuse is a
// usage error before anything starts (a server that failed to listen only after starting its
// background work logged that work's failure too).
func checkPort(port string) error {
	if port == "" {
		return errors.New("missing port; use e.g. 127.0.0.1:8080 (port 0 picks a free one)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("invalid port %q: the port must be a number from 1 to 65535 (0 picks a free one)", port)
	}
	return nil
}

// flagGiven reports whether the command line set flag name (even to its default).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

func llmConfig(getenv func(string) string) (compaction.LLMConfig, error) {
	cfg := compaction.LLMConfig{URL: getenv(envLLMURL), Model: getenv(envLLMModel), APIKey: getenv(envLLMAPIKey)}
	switch {
	case cfg.URL == "" && cfg.Model == "" && cfg.APIKey == "":
		return cfg, nil
	case cfg.URL == "":
		return cfg, &configError{Field: envLLMURL, Msg: "not set, but " + envLLMModel + " or " + envLLMAPIKey +
			" is: set the chat-completions URL, e.g. https://api.openai.com/v1/chat/completions"}
	case cfg.Model == "":
		return cfg, &configError{Field: envLLMModel, Msg: "required when " + envLLMURL + " is set"}
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, &configError{Field: envLLMURL, Value: cfg.URL, Msg: "want an http(s) URL of a chat-completions endpoint"}
	}
	return cfg, nil
}

// fileMapping parses SESSIONMEM_FILE_TOOLS: extra tool names for file tracking, e.g.
// {"view_file":{"op":"read","keys":["file"]},"patch":{"op":"modify","keys":["target"]}}.
func fileMapping(raw string) (fileops.Mapping, error) {
	if raw == "" {
		return nil, nil
	}
	var m map[string]struct {
		Op   string   `json:"op"`
		Keys []string `json:"keys"`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, &configError{Field: envFileTools, Value: raw,
			Msg: `want JSON like {"view_file":{"op":"read","keys":["file"]}} (` + err.Error() + ")"}
	}
	out := make(fileops.Mapping, len(m))
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := m[name]
		var op fileops.Op
		switch r.Op {
		case "read":
			op = fileops.Read
		case "modify", "write", "edit":
			op = fileops.Modify
		default:
			return nil, &configError{Field: envFileTools, Value: raw,
				Msg: fmt.Sprintf("tool %q: op must be \"read\" or \"modify\", got %q", name, r.Op)}
		}
		if len(r.Keys) == 0 {
			return nil, &configError{Field: envFileTools, Value: raw,
				Msg: fmt.Sprintf("tool %q: keys must list the argument(s) holding the path", name)}
		}
		out[name] = fileops.Rule{Op: op, Keys: r.Keys}
	}
	return out, nil
}

const serveHelp = `Usage: sessionmem serve [flags]

Serve the session tools over MCP. Without --http the server speaks MCP over stdio: stdout
carries only the protocol, logs go to stderr (or --log-file).

Flags:
  --store DIR|URL        session store: a directory (created 0700 if missing) or a
                         PostgreSQL URL (postgres://user:password@host:5432/db?sslmode=...)
                         that servers on any number of machines share. Default:
                         $SESSIONMEM_STORE, else $XDG_DATA_HOME/sessionmem,
                         else ~/.local/share/sessionmem. Several servers may share one store.
  --http ADDR            serve HTTP on ADDR instead of stdio (also $SESSIONMEM_HTTP):
                         streamable HTTP at /mcp, legacy SSE at /sse + /message.
                         ADDR must be loopback (127.0.0.1:8080, [::1]:8080, localhost:8080)
                         unless --allow-remote is given; the port is 1-65535, and port 0
                         picks a free port.
  --allow-remote         allow a non-loopback --http address; requires $SESSIONMEM_TOKEN.
  --metrics-addr ADDR    also serve /metrics, /healthz and /readyz on this loopback address,
                         without a token, whatever the transport (also $SESSIONMEM_METRICS_ADDR).
  --log-level LEVEL      debug, info, warn or error (default info; also $SESSIONMEM_LOG_LEVEL).
  --log-file FILE        append logs to FILE instead of stderr (also $SESSIONMEM_LOG_FILE).
  --sampling-timeout D   how long to wait for a client's MCP sampling answer when it
                         writes a compaction summary (default 2m; $SESSIONMEM_SAMPLING_TIMEOUT).
  --max-sessions N       retention: keep only the N most recently updated sessions
                         (also $SESSIONMEM_MAX_SESSIONS; default 0, no limit).
  --max-age D            retention: delete sessions idle for longer than D, e.g. 90d or 720h
                         (also $SESSIONMEM_MAX_AGE; default 0, no limit). Retention runs at
                         start and hourly, never touches a session updated in the last hour
                         or locked by another process; 'sessionmem prune' does it by hand.

Environment:
  SESSIONMEM_TOKEN             HTTP only: require "Authorization: Bearer <token>" on every request.
  SESSIONMEM_LLM_URL           OpenAI-compatible chat-completions URL for the "llm" summarizer,
  SESSIONMEM_LLM_MODEL         e.g. https://api.openai.com/v1/chat/completions and gpt-4.1-mini;
  SESSIONMEM_LLM_API_KEY       its API key (environment only, never a flag).
  SESSIONMEM_FILE_TOOLS        extra tools for file tracking, JSON:
                               {"view_file":{"op":"read","keys":["file"]}}  (op: read | modify)
  SESSIONMEM_REDACT_PATTERNS   extra secret patterns redacted before anything is stored,
                               JSON array of Go regular expressions: ["corp-[0-9a-f]{32}"]

HTTP security: loopback by default; requests with an Origin header are accepted only from
localhost origins (browsers); with SESSIONMEM_TOKEN set every request needs the bearer token,
but for /healthz (200 while the process serves) and /readyz (200 while the store is usable,
503 otherwise), which a load balancer probes and which reveal nothing. /metrics (Prometheus)
is behind the token like /mcp.
SIGINT/SIGTERM stop the server gracefully: running calls finish and the store is closed.

Examples:
  sessionmem serve
  sessionmem serve --store ~/work/.sessions --log-level debug --log-file /tmp/sessionmem.log
  SESSIONMEM_TOKEN=s3cret sessionmem serve --http 127.0.0.1:8080
`
