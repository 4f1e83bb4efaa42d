package agent

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/testhost"
)

// serveDGX runs an agent with one DGX snapshot on loopback.
func serveDGX(tb testing.TB) (*Agent, string, func()) {
	tb.Helper()
	a := newAgent(tb, Config{Audit: fixtureAudit(tb, testhost.Path(tb, "dgx-h100")), Interval: time.Hour})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx, ln); close(done) }()
	for i := 0; i < 200 && !a.Snapshot().Ready(); i++ { // bounded: 10 s
		time.Sleep(50 * time.Millisecond)
	}
	if !a.Snapshot().Ready() {
		tb.Fatal("no snapshot")
	}
	return a, "http://" + ln.Addr().String() + "/metrics", func() { cancel(); <-done }
}

// scrape GETs u as Prometheus does (gzip accepted; the body is read but,
// as Prometheus's parser would, not decompressed here).
func scrape(c *http.Client, u string) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// BenchmarkScrape is one /metrics scrape of the DGX snapshot over loopback
// (gzip, as Prometheus asks).
func BenchmarkScrape(b *testing.B) {
	_, u, stop := serveDGX(b)
	defer stop()
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := scrape(c, u); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCycle is one audit cycle (discovery, audit, IRQ analysis,
// metrics) on the DGX fixture. cpu-ms/op is the process's CPU time (user +
// system, every thread: the audit's goroutines and the GC) per cycle, the
// figure issue 24's budget (50 ms) is about; ns/op is wall time.
func BenchmarkCycle(b *testing.B) {
	a := newAgent(b, Config{Audit: fixtureAudit(b, testhost.Path(b, "dgx-h100"))})
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if s := a.Cycle(context.Background()); s.Err != "" {
			b.Fatal(s.Err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCycleCPU: GPUNODE_LOAD=1 runs 3 warm-up and 21 measured audit cycles
// on the DGX fixture and requires the median CPU time (user + system of
// the whole process) per cycle within cycleCPUGate. The budget is 50 ms
// (issue 24, item 8; BenchmarkCycle's cpu-ms/op and scripts/bench.sh's
// "agent cycle CPU, DGX" row show it). Measured on the shared 2-core VM at
// load 24-27 (2026-12-02): medians 14.5-21 ms over ten runs, against
// 34-37 ms for the code before each per-CPU file and IRQ list was read
// once, in the same run. The gate, 32 ms, sits 1.5x above the worst
// loaded median, so CI's load (cache, frequency) does not trip it, and at
// about twice the typical 16-17 ms, so a 2x regression does.
func TestCycleCPU(t *testing.T) {
	if os.Getenv("GPUNODE_LOAD") == "" {
		t.Skip("GPUNODE_LOAD=1 runs the cycle CPU test")
	}
	const cycleCPUGate = 32 * time.Millisecond
	a := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, "dgx-h100"))})
	var per []time.Duration
	for i := range 24 {
		c0 := cpuTime()
		if s := a.Cycle(context.Background()); s.Err != "" {
			t.Fatal(s.Err)
		}
		if i >= 3 {
			per = append(per, cpuTime()-c0)
		}
	}
	slices.Sort(per)
	med := per[len(per)/2]
	t.Logf("cycle cpu: median %s, min %s, max %s over %d DGX audit cycles (budget 50ms, gate %s)", med, per[0], per[len(per)-1], len(per), cycleCPUGate)
	if med > cycleCPUGate {
		t.Errorf("median CPU per DGX audit cycle %s, want <= %s (budget 50ms)", med, cycleCPUGate)
	}
}

func maxRSSBytes() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}

// TestLoad: GPUNODE_LOAD=1 drives /metrics at 1,000 scrapes/s for 30 s
// (GPUNODE_LOAD_SECONDS, GPUNODE_LOAD_RATE) from a bounded Go client and
// requires p99 < 20 ms and a peak RSS of the whole process (agent and
// client) < 60 MB. Audits keep running meanwhile, every
// GPUNODE_LOAD_INTERVAL_S seconds (10: three audits in the 30 s; the
// default --interval is 60 s).
func TestLoad(t *testing.T) {
	if os.Getenv("GPUNODE_LOAD") == "" {
		t.Skip("GPUNODE_LOAD=1 runs the load test")
	}
	secs, rate := envInt("GPUNODE_LOAD_SECONDS", 30), envInt("GPUNODE_LOAD_RATE", 1000)
	every := time.Duration(envInt("GPUNODE_LOAD_INTERVAL_S", 10)) * time.Second
	a := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, "dgx-h100")), Interval: every})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx, ln); close(done) }()
	defer func() { cancel(); <-done }()
	u := "http://" + ln.Addr().String() + "/metrics"
	for i := 0; i < 200 && !a.Snapshot().Ready(); i++ {
		time.Sleep(50 * time.Millisecond)
	}

	total := secs * rate
	lat := make([]time.Duration, total)
	var errs, late int
	var mu sync.Mutex
	const workers = 64
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	jobs := make(chan int, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				t0 := time.Now()
				err := scrape(c, u)
				lat[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					errs++
					mu.Unlock()
				}
			}
		}()
	}
	var peakRSS int64
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := 0; i < total; i++ {
		next := start.Add(time.Duration(i) * interval)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		select {
		case jobs <- i:
		default:
			late++ // every worker busy: the client could not keep the rate
			jobs <- i
		}
		if i%rate == 0 {
			peakRSS = max(peakRSS, maxRSSBytes())
		}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	peakRSS = max(peakRSS, maxRSSBytes())
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	achieved := float64(total) / elapsed.Seconds()
	t.Logf("load: %d scrapes in %.1fs (%.0f/s), p50 %s p90 %s p99 %s max %s, errors %d, queued-late %d, peak RSS %.1f MB, audits %d, GOMAXPROCS %d",
		total, elapsed.Seconds(), achieved, p(0.5), p(0.9), p(0.99), lat[len(lat)-1], errs, late, float64(peakRSS)/1e6, a.Snapshot().Audits, runtime.GOMAXPROCS(0))
	if errs > 0 {
		t.Errorf("%d scrapes failed", errs)
	}
	if p(0.99) >= 20*time.Millisecond {
		t.Errorf("p99 %s, want < 20ms", p(0.99))
	}
	if peakRSS >= 60e6 {
		t.Errorf("peak RSS %.1f MB, want < 60 MB", float64(peakRSS)/1e6)
	}
	if achieved < 0.95*float64(rate) {
		t.Errorf("achieved %.0f scrapes/s, want %d", achieved, rate)
	}
}

// TestSoak: GPUNODE_SOAK=N runs N audit cycles (10,000 for the figure) on
// a fixture, scraping every 100, and requires the live heap after the
// last cycle within 1 MiB of the heap after the first tenth, and no
// goroutine growth.
func TestSoak(t *testing.T) {
	n := envInt("GPUNODE_SOAK", 0)
	if n == 0 {
		t.Skip("GPUNODE_SOAK=N runs N audit cycles")
	}
	host := os.Getenv("GPUNODE_SOAK_HOST")
	if host == "" {
		host = "downgraded"
	}
	nfd := t.TempDir()
	a := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, host)), NFDDir: nfd})
	h := a.Handler()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var base uint64
	var baseG int
	start := time.Now()
	samples := []uint64{}
	for i := 1; i <= n; i++ {
		if s := a.Cycle(context.Background()); s.Err != "" {
			t.Fatalf("cycle %d: %s", i, s.Err)
		}
		if i%100 == 0 {
			if code, _ := get(t, h, "GET", "/metrics"); code != 200 {
				t.Fatalf("scrape at cycle %d: %d", i, code)
			}
		}
		if i == max(n/10, 1) {
			base, baseG = heap(), runtime.NumGoroutine()
		}
		if i%max(n/10, 1) == 0 {
			samples = append(samples, heap())
		}
	}
	end := heap()
	t.Logf("soak: %d cycles on %s in %s (%.2f ms/cycle); heap after %d cycles %d B, at the end %d B (growth %d B); samples %v; goroutines %d -> %d",
		n, host, time.Since(start).Round(time.Millisecond), float64(time.Since(start).Microseconds())/1e3/float64(n), max(n/10, 1), base, end,
		int64(end)-int64(base), samples, baseG, runtime.NumGoroutine())
	if int64(end)-int64(base) > 1<<20 {
		t.Errorf("heap grew %d bytes over %d cycles", int64(end)-int64(base), n)
	}
	if g := runtime.NumGoroutine(); g > baseG+2 {
		t.Errorf("goroutines %d -> %d", baseG, g)
	}
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}
