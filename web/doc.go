//go:build !small

// Package web is the agent's web page and the fleet's: an overview of a
// result store (the last result of every test, time charts of capacity, RTT, latency under load and loss over a chosen
// range, the latest results), a page per result (its figures, its plot,
// its JSON document to download), a "run now" button per test whose
// progress appears live, and /fleet, a store's sums per server and per
// probe. docs/web.md says what each page shows.
//
// Handler serves it all from one http.Handler; the agent mounts it on its
// --http listener, and gives it an Agent to run tests (nil: a page without
// "run now", e.g. a fleet's page over a shared store).
//
// Charts are SVG drawn on the server by html/template (chart.go), not a
// charting library run in the browser: the store already reduces each
// series to the chart's resolution (store.Series), so the page carries at
// most a few hundred points per line; an SVG polyline needs no script, no
// vendored library and no licence to ship, prints and scales at phone width,
// and lets the page's Content-Security-Policy forbid inline script and
// style. A result's own plot is report/plot's, the one `udpstp plot`
// draws, served as an SVG image.
//
// Everything the page loads is embedded (embed.FS): no asset comes from
// the internet, and the assets stay under 300 KB (a test checks). The one
// script, assets/app.js, only improves the page: without it "run now" is
// a plain form POST and the page a plain page.
//
// Security (docs/security.md): pages answer GET and HEAD only; the one
// POST, /run, needs the per-process CSRF token its form carries and a
// same-origin request (Origin, Sec-Fetch-Site), else 403; every answer has
// a Content-Security-Policy without 'unsafe-inline', nosniff, no framing
// and no referrer. Names from the store are text to html/template, which
// escapes them for where they appear.
//
// The package is left out of the small build (-tags small,
// cmd/udpstp/commands_small.go): a router running tests has no page.
package web
