package main

import (
	"errors"
	"flag"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/fileops"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestLoadConfigStorePrecedence(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  func(string) string
		want string
	}{
		{"flag wins", []string{"--store", "/a"}, envOf(envStore, "/b", "XDG_DATA_HOME", "/x", "HOME", "/h"), "/a"},
		{"env next", nil, envOf(envStore, "/b", "XDG_DATA_HOME", "/x", "HOME", "/h"), "/b"},
		{"xdg next", nil, envOf("XDG_DATA_HOME", "/x", "HOME", "/h"), "/x/sessionmem"},
		{"home last", nil, envOf("HOME", "/h"), "/h/.local/share/sessionmem"},
		{"single dash flag", []string{"-store=/c"}, envOf("HOME", "/h"), "/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Store; got != tc.want {
				t.Errorf("store = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadConfigValues(t *testing.T) {
	cfg, err := loadConfig(
		[]string{"--http", "127.0.0.1:0", "--log-level", "debug", "--log-file", "/tmp/x.log", "--sampling-timeout", "90s"},
		envOf("HOME", "/h", envToken, "tok",
			envLLMURL, "https://api.example.com/v1/chat/completions", envLLMModel, "m1", envLLMAPIKey, "k",
			envFileTools, `{"view_file":{"op":"read","keys":["file"]},"patch":{"op":"modify","keys":["target","dest"]}}`,
			envRedact, `["corp-[0-9a-f]{32}"]`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != "127.0.0.1:0" || cfg.Token != "tok" || cfg.LogLevel != slog.LevelDebug || cfg.LogFile != "/tmp/x.log" {
		t.Errorf("cfg = %+v", cfg)
	}
	if got, want := cfg.SamplingTimeout, 90*time.Second; got != want {
		t.Errorf("sampling timeout = %v, want %v", got, want)
	}
	if cfg.LLM.URL == "" || cfg.LLM.Model != "m1" || cfg.LLM.APIKey != "k" {
		t.Errorf("llm = %+v", cfg.LLM)
	}
	if got := cfg.FileMapping["patch"]; got.Op != fileops.Modify || strings.Join(got.Keys, ",") != "target,dest" {
		t.Errorf("file mapping patch = %+v", got)
	}
	if got := cfg.FileMapping["view_file"]; got.Op != fileops.Read {
		t.Errorf("file mapping view_file = %+v", got)
	}
	if got := strings.Join(cfg.RedactPatterns, ","); got != "corp-[0-9a-f]{32}" {
		t.Errorf("redact = %q", got)
	}

	cfg, err = loadConfig([]string{"--max-age", "90d"}, envOf("HOME", "/h", envMaxSessions, "500"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention.MaxSessions != 500 || cfg.Retention.MaxAge != 90*24*time.Hour || !cfg.Retention.Enabled() {
		t.Errorf("retention = %+v", cfg.Retention)
	}

	cfg, err = loadConfig(nil, envOf("HOME", "/h"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention.Enabled() {
		t.Errorf("retention on by default: %+v", cfg.Retention)
	}
	if cfg.HTTPAddr != "" || cfg.SamplingTimeout != 2*time.Minute || cfg.LogLevel != slog.LevelInfo || cfg.LLM.URL != "" {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   func(string) string
		field string
		want  string
	}{
		{"no home", nil, envOf(), "--store", "pass --store"},
		{"unknown flag", []string{"--port", "1"}, envOf("HOME", "/h"), "flags", "-port"},
		{"positional", []string{"extra"}, envOf("HOME", "/h"), "arguments", "no positional"},
		{"remote without allow", []string{"--http", "0.0.0.0:8080"}, envOf("HOME", "/h"), "--http", "--allow-remote"},
		{"all interfaces", []string{"--http", ":8080"}, envOf("HOME", "/h"), "--http", "not a loopback"},
		{"remote without token", []string{"--http", "10.0.0.1:8080", "--allow-remote"}, envOf("HOME", "/h"), "--http", envToken},
		{"allow-remote without http", []string{"--allow-remote"}, envOf("HOME", "/h"), "--allow-remote", "--http"},
		{"bad addr", []string{"--http", "localhost"}, envOf("HOME", "/h"), "--http", "host:port"},
		{"port out of range", []string{"--http", "127.0.0.1:99999"}, envOf("HOME", "/h"), "--http",
			`invalid port "99999": the port must be a number from 1 to 65535 (0 picks a free one)`},
		{"port not a number", []string{"--http", ":abc"}, envOf("HOME", "/h"), "--http", `invalid port "abc"`},
		{"negative port", []string{"--http", "[::1]:-1"}, envOf("HOME", "/h"), "--http", `invalid port "-1"`},
		{"no port", []string{"--http", "127.0.0.1:"}, envOf("HOME", "/h"), "--http", "missing port"},
		{"env port out of range", nil, envOf("HOME", "/h", envHTTP, "localhost:65536"), envHTTP, "from 1 to 65535"},
		{"empty http", []string{"--http", ""}, envOf("HOME", "/h", envHTTP, "127.0.0.1:8080"), "--http", "empty; give an address"},
		{"empty metrics addr", []string{"--metrics-addr="}, envOf("HOME", "/h"), "--metrics-addr", "empty"},
		{"metrics port out of range", []string{"--metrics-addr", "127.0.0.1:70000"}, envOf("HOME", "/h"), "--metrics-addr", `invalid port "70000"`},
		{"env addr", nil, envOf("HOME", "/h", envHTTP, "192.168.1.2:80"), envHTTP, "loopback"},
		{"bad level", []string{"--log-level", "loud"}, envOf("HOME", "/h"), "--log-level", "debug, info"},
		{"bad timeout", []string{"--sampling-timeout", "-1s"}, envOf("HOME", "/h"), "--sampling-timeout", "positive duration"},
		{"llm url without model", nil, envOf("HOME", "/h", envLLMURL, "https://x/v1"), envLLMModel, "required"},
		{"llm key without url", nil, envOf("HOME", "/h", envLLMAPIKey, "k"), envLLMURL, "not set"},
		{"llm bad url", nil, envOf("HOME", "/h", envLLMURL, "ftp://x", envLLMModel, "m"), envLLMURL, "http(s)"},
		{"file tools not json", nil, envOf("HOME", "/h", envFileTools, "view_file=read"), envFileTools, "want JSON"},
		{"file tools bad op", nil, envOf("HOME", "/h", envFileTools, `{"v":{"op":"delete","keys":["f"]}}`), envFileTools, `"read" or "modify"`},
		{"file tools no keys", nil, envOf("HOME", "/h", envFileTools, `{"v":{"op":"read"}}`), envFileTools, "keys"},
		{"redact not a list", nil, envOf("HOME", "/h", envRedact, "abc"), envRedact, "JSON array"},
		{"bad max sessions", []string{"--max-sessions", "-3"}, envOf("HOME", "/h"), "--max-sessions", "number of sessions"},
		{"bad max age", nil, envOf("HOME", "/h", envMaxAge, "soon"), envMaxAge, "90d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(tc.args, tc.env)
			var ce *configError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a configError", err)
			}
			if ce.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", ce.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadConfigAllowsRemoteWithToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", "[::]:8080", ":8080"} {
		if _, err := loadConfig([]string{"--http", addr, "--allow-remote"}, envOf("HOME", "/h", envToken, "t")); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:1", "[::1]:1", "localhost:1", "127.0.0.2:1"} {
		if _, err := loadConfig([]string{"--http", addr}, envOf("HOME", "/h")); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

func TestServeHelp(t *testing.T) {
	_, err := loadConfig([]string{"--help"}, envOf())
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"--store", "--http", "--allow-remote", "--log-level", "--log-file", "--sampling-timeout",
		envStore, envToken, envHTTP, envLLMURL, envLLMModel, envLLMAPIKey, envFileTools, envRedact, "/mcp", "/sse", "Origin"} {
		if !strings.Contains(serveHelp, want) {
			t.Errorf("serve --help does not mention %s", want)
		}
	}
}

// TestServeListenErrors: a bad --http port is bad usage before anything starts (no store
// created, no log of background work); a port in use fails after the store is open, with
// that one error and no warning of background work cut short.
func TestServeListenErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		addr string
		code int
		want string // in stderr
	}{
		{"port out of range", "127.0.0.1:99999", 2, "sessionmem serve: --http=\"127.0.0.1:99999\": invalid port \"99999\": the port must be a number from 1 to 65535"},
		{"port not a number", ":abc", 2, `invalid port "abc"`},
		{"empty", "", 2, "sessionmem serve: --http: empty; give an address such as 127.0.0.1:8080, or leave --http out to serve over stdio"},
		{"port in use", busy.Addr().String(), 1, "sessionmem: listen on " + busy.Addr().String() + ": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			r := runCLI(t, "", "serve", "--http", tt.addr, "--store", store)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d\nstderr: %q\nwant in it: %q", r.code, tt.code, r.stderr, tt.want)
			}
			if strings.Contains(r.stderr, "level=WARN") || strings.Contains(r.stderr, "level=INFO") {
				t.Fatalf("a server that did not start logged: %q", r.stderr)
			}
			if _, err := os.Stat(store); tt.code == 2 && !os.IsNotExist(err) {
				t.Fatalf("a usage error created the store (%v)", err)
			}
		})
	}
}
