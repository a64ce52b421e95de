package ops

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sessionmem/sessionmem/storage"
)

// funcCollector reads one value (the store's lag, the pool's figures) once per scrape and
// reports its series.
type funcCollector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func lagCollector(read func() storage.IndexLag) prometheus.Collector {
	var (
		queued = prometheus.NewDesc("sessionmem_search_index_queued_records",
			"Records this process saved whose search index entries are not written yet (written within about 100 ms).", nil, nil)
		behind = prometheus.NewDesc("sessionmem_search_index_behind_records",
			"Records the search index lacked at the store's last look (local store: every 400 ms; PostgreSQL: every backfill pass), whichever process saved them.", nil, nil)
		behindSessions = prometheus.NewDesc("sessionmem_search_index_behind_sessions",
			"Sessions with records the search index lacked at the store's last look.", nil, nil)
		rebuilding = prometheus.NewDesc("sessionmem_search_index_rebuilding",
			"1 while the search index is being rebuilt (searches scan the sessions meanwhile, slower).", nil, nil)
		unavailable = prometheus.NewDesc("sessionmem_search_index_unavailable",
			"1 when the store has no usable search index (cannot be opened, or turned off).", nil, nil)
	)
	return &funcCollector{
		descs: []*prometheus.Desc{queued, behind, behindSessions, rebuilding, unavailable},
		collect: func(ch chan<- prometheus.Metric) {
			lag := read()
			gauge(ch, queued, float64(lag.Queued))
			gauge(ch, behind, float64(lag.Behind))
			gauge(ch, behindSessions, float64(lag.BehindSessions))
			gauge(ch, rebuilding, boolValue(lag.Rebuilding))
			gauge(ch, unavailable, boolValue(lag.Unavailable))
		},
	}
}

func poolCollector(read func() *pgxpool.Stat) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("sessionmem_pg_pool_"+name, help, nil, nil)
	}
	var (
		acquired     = d("acquired_conns", "PostgreSQL connections in use now.")
		idle         = d("idle_conns", "PostgreSQL connections idle in the pool now.")
		constructing = d("constructing_conns", "PostgreSQL connections being opened now.")
		total        = d("total_conns", "PostgreSQL connections in the pool now (in use, idle and being opened).")
		maxConns     = d("max_conns", "The pool's size limit (pool_max_conns).")
		acquires     = d("acquires_total", "Connections taken from the pool.")
		acquireSecs  = d("acquire_seconds_total", "Time spent taking connections from the pool, in all.")
		empty        = d("empty_acquires_total", "Takes that found no idle connection and waited for one to be opened or released.")
		emptyWait    = d("empty_acquire_wait_seconds_total", "Time those takes waited, in all.")
		canceled     = d("canceled_acquires_total", "Takes given up because the call's context ended.")
		newConns     = d("new_conns_total", "Connections opened.")
		lifetime     = d("max_lifetime_destroys_total", "Connections closed for reaching their maximum lifetime.")
		idleDestroys = d("max_idle_destroys_total", "Connections closed for being idle too long.")
	)
	return &funcCollector{
		descs: []*prometheus.Desc{acquired, idle, constructing, total, maxConns, acquires, acquireSecs, empty, emptyWait, canceled, newConns, lifetime, idleDestroys},
		collect: func(ch chan<- prometheus.Metric) {
			s := read()
			gauge(ch, acquired, float64(s.AcquiredConns()))
			gauge(ch, idle, float64(s.IdleConns()))
			gauge(ch, constructing, float64(s.ConstructingConns()))
			gauge(ch, total, float64(s.TotalConns()))
			gauge(ch, maxConns, float64(s.MaxConns()))
			counter(ch, acquires, float64(s.AcquireCount()))
			counter(ch, acquireSecs, s.AcquireDuration().Seconds())
			counter(ch, empty, float64(s.EmptyAcquireCount()))
			counter(ch, emptyWait, s.EmptyAcquireWaitTime().Seconds())
			counter(ch, canceled, float64(s.CanceledAcquireCount()))
			counter(ch, newConns, float64(s.NewConnsCount()))
			counter(ch, lifetime, float64(s.MaxLifetimeDestroyCount()))
			counter(ch, idleDestroys, float64(s.MaxIdleDestroyCount()))
		},
	}
}
