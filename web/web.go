//go:build !small

package web

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/udpstp/udpstp/store"
)

// Agent is what the page needs of the agent that runs tests.
type Agent interface {
	// Tests are the names of the configured tests.
	Tests() []string
	// RunNow starts the test of that name and returns at once; an error
	// wrapping ErrBusy while a test runs.
	RunNow(name string) error
	// Running is the name of the test running, "" if none.
	Running() string
	// NextRuns are the scheduled tests' next slots, by name; a test
	// without one (its schedule not started yet) is absent or zero. The
	// page shows them (docs/web.md, "Overview").
	NextRuns() map[string]time.Time
	// Subscribe returns the live events of the tests that run while
	// subscribed: each a JSON line of the client's event stream
	// (docs/json-stream.md, client.Stream), the "end" event last of each
	// test, and a func that ends the subscription. The page tolerates a
	// channel that closes (the browser then reconnects) and an "end" sent
	// before the result is in the store (the page asks again, a bounded
	// number of times, until the row is there).
	Subscribe() (<-chan []byte, func())
}

// ErrBusy is what RunNow's error wraps when a test is running.
var ErrBusy = errors.New("a test is running")

// Config is what Handler serves.
type Config struct {
	Store store.Store
	// Agent runs tests; nil: no "run now" (a fleet's page).
	Agent Agent
	// Title heads every page; "" is "udpstp".
	Title string
	// Points is the charts' resolution: each series is reduced by the
	// store to at most this many points; 0 is DefaultPoints.
	Points int
	// Logger logs what fails on the server's side; nil is slog.Default().
	Logger *slog.Logger
	// Now is the clock of the ranges; nil is time.Now.
	Now func() time.Time
	// Pending, if set, is how many results wait in an agent's spool for
	// the remote store (store.Spool); the overview says so when non-zero.
	Pending func() int
	// StreamsPerClient bounds the live streams (/events) one client
	// address holds; 0 is DefaultStreamsPerClient.
	StreamsPerClient int
}

// DefaultPoints is the charts' resolution when Config.Points is 0: about
// the width in pixels a chart takes on a laptop's screen.
const DefaultPoints = 480

//go:embed assets
var assets embed.FS

//go:embed templates/*.html
var templateFiles embed.FS

// server is one Handler's state.
type server struct {
	cfg   Config
	csrf  *csrf
	tmpl  *template.Template
	log   *slog.Logger
	now   func() time.Time
	start time.Time
	// streams counts the pages following /events (maxEventStreams), and
	// perClient those of each client address (Config.StreamsPerClient).
	streamMu  sync.Mutex
	streams   int
	perClient map[string]int
}

// Handler serves the page for cfg.
func Handler(cfg Config) http.Handler {
	if cfg.Title == "" {
		cfg.Title = "udpstp"
	}
	if cfg.Points <= 0 {
		cfg.Points = DefaultPoints
	}
	if cfg.StreamsPerClient <= 0 {
		cfg.StreamsPerClient = DefaultStreamsPerClient
	}
	s := &server{cfg: cfg, csrf: newCSRF(), log: cfg.Logger, now: cfg.Now, start: time.Now(), perClient: map[string]int{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/*.html"))

	mux := http.NewServeMux()
	// A GET pattern also answers HEAD; any other method is 405 with Allow
	// (net/http's ServeMux).
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /live", s.live)
	mux.HandleFunc("GET /result/{id}", s.result)
	mux.HandleFunc("GET /result/{id}/plot.svg", s.plot)
	mux.HandleFunc("GET /result/{id}/json", s.json)
	mux.HandleFunc("GET /fleet", s.fleet)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("POST /run", s.run)
	sub, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", assetServer(sub, s.start)))
	// A browser asks for /favicon.ico on pages without a link to an icon
	// (an error's text): the icon, not a 404 in its console.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "icon.svg"
		assetServer(sub, s.start).ServeHTTP(w, r)
	})
	return headers(mux)
}

// page renders the template name with data, as a whole answer.
func (s *server) page(w http.ResponseWriter, r *http.Request, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.tmpl.ExecuteTemplate(w, name, data); err != nil {
		// The status line is gone; the log says what broke.
		s.log.Error("web: rendering a page", "page", name, "path", r.URL.Path, "err", err)
	}
}

// fail answers a failure of the store (500: logged, not shown in detail).
func (s *server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.log.Error("web: "+what, "path", r.URL.Path, "err", err)
	http.Error(w, "the result store failed: see the log of the agent or collector serving this page", http.StatusInternalServerError)
}
