package ops

import (
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sessionmem/sessionmem/internal/buildinfo"
	"github.com/sessionmem/sessionmem/mcpserver"
	"github.com/sessionmem/sessionmem/storage"
)

// MetricsOptions say what a Metrics reports beside the tool calls.
type MetricsOptions struct {
	// Tools are the tool names (mcpserver.ToolNames): their series exist from the start, at
	// zero, and any other name is counted as "other" (a client cannot grow the label).
	Tools []string
	// Backend names the store's kind in sessionmem_build_info ("local", "postgres").
	Backend string
	// IndexLag, when set, is read at every scrape for the sessionmem_search_index_* gauges.
	IndexLag func() storage.IndexLag
	// Pool, when set, is read at every scrape for the sessionmem_pg_pool_* figures.
	Pool func() *pgxpool.Stat
}

// PoolStatter is a store that reads and writes through a pgx connection pool (the
// PostgreSQL store), whose figures MetricsOptions.Pool reads. It is declared here, not in
// storage, because its figures are pgx's type, which only ops and that backend import; a
// caller checks for it with a type assertion.
type PoolStatter interface {
	// PoolStat returns the pool's figures now.
	PoolStat() *pgxpool.Stat
}

// Metrics is the server's Prometheus registry and the mcpserver.Observer that feeds it.
type Metrics struct {
	reg         *prometheus.Registry
	tools       map[string]bool
	calls       *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	saved       prometheus.Counter
	savedBytes  prometheus.Counter
	search      prometheus.Histogram
	storeErrors *prometheus.CounterVec
}

var _ mcpserver.Observer = (*Metrics)(nil)

// Latency buckets, in seconds: a save is about a millisecond, a resume of a large session
// or a search of a large store can take seconds, a compaction with a summarizer a minute.
var (
	toolBuckets   = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	searchBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
)

// NewMetrics returns a Metrics with every family registered: the tool calls, the Go
// runtime and the process (the standard go_* and process_* families), the build, and the
// store's figures that o provides.
func NewMetrics(o MetricsOptions) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), tools: map[string]bool{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sessionmem_tool_calls_total",
		Help: "Tool calls by tool and outcome (ok, input_required, invalid, not_found, stale, unavailable, store_error, timeout, canceled, refused, panic, internal).",
	}, []string{"tool", "outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sessionmem_tool_call_duration_seconds",
		Help:    "Time from the tool middleware to the answer, by tool (every outcome).",
		Buckets: toolBuckets,
	}, []string{"tool"})
	m.saved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sessionmem_messages_saved_total",
		Help: "Messages stored by successful session_save calls (messages replayed with an id already stored are not counted).",
	})
	m.savedBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sessionmem_saved_bytes_total",
		Help: "Bytes of the messages argument (JSON as received) of successful session_save calls.",
	})
	m.search = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sessionmem_search_duration_seconds",
		Help:    "Time session_search spent searching (the index, or a scan while it is unavailable), per call.",
		Buckets: searchBuckets,
	})
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sessionmem_store_errors_total",
		Help: "Tool calls failed by the store, by kind (unavailable, corrupt, newer_format, closed, search_unavailable, io).",
	}, []string{"kind"})
	info := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sessionmem_build_info",
		Help: "Always 1; the labels say which build serves and on which kind of store (every replica should show the same version).",
		ConstLabels: prometheus.Labels{"version": info.Version, "commit": info.Commit, "go_version": info.GoVersion,
			"backend": o.Backend},
	})
	build.Set(1)
	m.reg.MustRegister(m.calls, m.latency, m.saved, m.savedBytes, m.search, m.storeErrors, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.IndexLag != nil {
		m.reg.MustRegister(lagCollector(o.IndexLag))
	}
	if o.Pool != nil {
		m.reg.MustRegister(poolCollector(o.Pool))
	}
	// Every series a dashboard or an alert reads exists from the start: rate() of a series
	// that appears with its first increment misses that increment.
	for _, t := range append(o.Tools, otherTool) {
		m.tools[t] = true
		for _, oc := range outcomes {
			m.calls.WithLabelValues(t, oc)
		}
		m.latency.WithLabelValues(t)
	}
	for _, k := range storeKinds {
		m.storeErrors.WithLabelValues(k)
	}
	return m
}

// otherTool is the tool label of a name not in MetricsOptions.Tools.
const otherTool = "other"

// ToolCall implements mcpserver.Observer.
func (m *Metrics) ToolCall(c mcpserver.ToolCall) {
	tool := c.Tool
	if !m.tools[tool] {
		tool = otherTool
	}
	outcome, kind := Classify(c)
	m.calls.WithLabelValues(tool, outcome).Inc()
	m.latency.WithLabelValues(tool).Observe(c.Elapsed.Seconds())
	if kind != "" {
		m.storeErrors.WithLabelValues(kind).Inc()
	}
	if outcome == OutcomeOK {
		m.saved.Add(float64(c.Saved))
		m.savedBytes.Add(float64(c.SavedBytes))
	}
	if c.Search > 0 {
		m.search.Observe(c.Search.Seconds())
	}
}

// Handler serves the metrics in Prometheus' text format (or OpenMetrics when asked).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, Timeout: 10 * time.Second})
}

// Registry is the registry the metrics are in (for tests and further collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }
