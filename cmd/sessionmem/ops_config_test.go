package main

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadConfigMetricsAddr: --metrics-addr (or its variable) takes a loopback address only,
// since it serves /metrics without the token.
func TestLoadConfigMetricsAddr(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   func(string) string
		want  string // the address; "" with field set: refused
		field string
	}{
		{"flag", []string{"--metrics-addr", "127.0.0.1:9090"}, envOf("HOME", "/h"), "127.0.0.1:9090", ""},
		{"variable", nil, envOf("HOME", "/h", envMetricsAddr, "[::1]:0"), "[::1]:0", ""},
		{"flag wins", []string{"--metrics-addr", "localhost:1"}, envOf("HOME", "/h", envMetricsAddr, "127.0.0.1:2"), "localhost:1", ""},
		{"none", nil, envOf("HOME", "/h"), "", ""},
		{"all interfaces", []string{"--metrics-addr", ":9090"}, envOf("HOME", "/h"), "", "--metrics-addr"},
		{"remote, even with a token", []string{"--metrics-addr", "0.0.0.0:9090", "--http", "0.0.0.0:8080", "--allow-remote"},
			envOf("HOME", "/h", envToken, "t"), "", "--metrics-addr"},
		{"variable remote", nil, envOf("HOME", "/h", envMetricsAddr, "10.1.2.3:9090"), "", envMetricsAddr},
		{"no port", []string{"--metrics-addr", "127.0.0.1"}, envOf("HOME", "/h"), "", "--metrics-addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(tc.args, tc.env)
			if tc.field == "" {
				if err != nil || cfg.MetricsAddr != tc.want {
					t.Fatalf("MetricsAddr %q, %v; want %q", cfg.MetricsAddr, err, tc.want)
				}
				return
			}
			var ce *configError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), "loopback") {
				t.Fatalf("err = %v, want a configError on %s saying loopback", err, tc.field)
			}
		})
	}
	for _, want := range []string{"--metrics-addr", envMetricsAddr, "/healthz", "/readyz", "/metrics"} {
		if !strings.Contains(serveHelp, want) {
			t.Errorf("serve --help does not mention %s", want)
		}
	}
}
