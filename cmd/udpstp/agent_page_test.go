//go:build !small

package main

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/udpstp/udpstp/internal/chromiumtest"
)

// overview loads the agent's overview at url and returns its tests table
// (each row's test, last result's link, direction) and its chart lines'
// point counts by series.
func overview(t *testing.T, b *chromiumtest.Browser, url string) ([][]string, map[string]int) {
	t.Helper()
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#chart-capacity"))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	tests, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("table.tests tbody tr")].map(r => [
		r.cells[0].textContent.trim(), r.cells[1].querySelector("a") ? r.cells[1].querySelector("a").getAttribute("href") : "", r.cells[3] ? r.cells[3].textContent.trim() : ""])`))
	if err != nil {
		t.Fatalf("the tests table: %v", err)
	}
	lines, err := chromedp.Run(b.Ctx, chromedp.Evaluate[map[string]int](`Object.fromEntries([...document.querySelectorAll("polyline.line")].map(
		l => [l.dataset.series, l.points.numberOfItems]))`))
	if err != nil {
		t.Fatalf("the charts: %v", err)
	}
	return tests, lines
}
