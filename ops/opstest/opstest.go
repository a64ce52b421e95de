// Package opstest reads a server's /metrics the way Prometheus does, for tests: it fetches
// the page over HTTP, parses the text format with Prometheus' own parser, and looks series
// up by name and labels.
package opstest

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one scrape: the metric families by name.
type Families map[string]*dto.MetricFamily

// Scrape GETs url (with "Authorization: Bearer token" when token is set), fails the test
// unless the answer is 200 in Prometheus' text format, and parses it.
func Scrape(t testing.TB, url, token string) Families {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape %s: %s (%s)\n%s", url, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("scrape %s: not Prometheus text format: %v\n%s", url, err, body)
	}
	return fams
}

// Value returns the value of the series of family name whose labels include labels (name=value
// pairs): a counter's or gauge's value, a histogram's sample count. It fails the test when no
// series or more than one matches.
func (f Families) Value(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	m := f.series(t, name, labels)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	t.Fatalf("%s%v: no value", name, labels)
	return 0
}

// Sum returns a histogram series' sum of observations.
func (f Families) Sum(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	m := f.series(t, name, labels)
	if m.Histogram == nil {
		t.Fatalf("%s%v is not a histogram", name, labels)
	}
	return m.Histogram.GetSampleSum()
}

// Has reports whether the scrape holds family name.
func (f Families) Has(name string) bool { return f[name] != nil }

// Names lists the families, sorted (for failure messages).
func (f Families) Names() []string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (f Families) series(t testing.TB, name string, labels []string) *dto.Metric {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("labels %v: want name, value pairs", labels)
	}
	fam := f[name]
	if fam == nil {
		t.Fatalf("no family %s in the scrape (has %v)", name, f.Names())
	}
	var found *dto.Metric
	for _, m := range fam.Metric {
		if matches(m, labels) {
			if found != nil {
				t.Fatalf("%s%v matches more than one series", name, labels)
			}
			found = m
		}
	}
	if found == nil {
		t.Fatalf("%s has no series with labels %v", name, labels)
	}
	return found
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i < len(labels); i += 2 {
		ok := false
		for _, lp := range m.Label {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// String renders a family's series, for failure messages.
func (f Families) String(name string) string {
	fam := f[name]
	if fam == nil {
		return name + ": absent"
	}
	var b strings.Builder
	for _, m := range fam.Metric {
		fmt.Fprintf(&b, "%s%v\n", name, m.Label)
	}
	return b.String()
}
