package prometheus_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	lockmuxprometheus "github.com/lockmux/lockmux/contrib/prometheus"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
)

// Serve a Client's metrics on /metrics. A service listens with
// http.ListenAndServe; this example asks for one page through httptest.
func Example() {
	addresses, stop := trustednodes.Start(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{NodeTimeout: time.Second})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	registry := prometheus.NewRegistry()
	registry.MustRegister(lockmuxprometheus.NewCollector(client, lockmuxprometheus.Options{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))

	ctx := context.Background()
	m := client.NewMutex("orders:1001", redlock.MutexOptions{TTL: 10 * time.Second})
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}

	page := httptest.NewRecorder()
	mux.ServeHTTP(page, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	lines := bufio.NewScanner(page.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "lockmux_lock_attempts_total") || strings.HasPrefix(lines.Text(), "lockmux_releases_total") {
			fmt.Println(lines.Text())
		}
	}
	// Output:
	// lockmux_lock_attempts_total{result="acquired"} 1
	// lockmux_lock_attempts_total{result="not_acquired"} 0
	// lockmux_releases_total{result="lost"} 0
	// lockmux_releases_total{result="released"} 1
}
