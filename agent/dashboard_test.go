package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/udpstp/udpstp/store"
)

const dashboardFile = "../contrib/grafana/udpstp-agent.json"

// TestGrafanaDashboardPromtool: every PromQL expression of the shipped dashboard
// parses (promtool check rules, on a rules file made of them) and names
// only metrics the agent exposes.
func TestGrafanaDashboardPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not found (apt-get install prometheus; .ci/run does): %v", err)
		}
		t.Skipf("promtool not found (apt-get install prometheus): %v", err)
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exprs, vars := dashboardQueries(doc)
	if len(exprs) < 10 || len(vars) < 2 {
		t.Fatalf("%d expressions, %d variable queries: the walk missed them", len(exprs), len(vars))
	}
	exposed := exposedNames(t)
	for _, q := range vars {
		m := labelValuesRe.FindStringSubmatch(q)
		if m == nil || !exposed[m[1]] {
			t.Errorf("variable query %q: not label_values of a metric the agent exposes", q)
		}
	}
	if err := checkExprs(promtool, t.TempDir(), exprs, exposed); err != nil {
		t.Error(err)
	}
	// The check can fail: a syntax error, and a name the agent lacks.
	for _, bad := range []string{`sum(udpstp_agent_loss_ratio`, `udpstp_agent_capacity_bits_per_second * 8`, `rate(node_cpu_seconds_total[5m])`} {
		if err := checkExprs(promtool, t.TempDir(), []string{bad}, exposed); err == nil {
			t.Errorf("%q passed the check", bad)
		}
	}
}

var labelValuesRe = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*), *[a-z_]+\)$`)

// dashboardQueries walks a dashboard for its targets' expressions and its
// variables' queries.
func dashboardQueries(v any) (exprs, vars []string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok {
				switch {
				case k == "expr":
					exprs = append(exprs, s)
				case (k == "definition" || k == "query") && strings.HasPrefix(s, "label_values("):
					vars = append(vars, s)
				}
				continue
			}
			e, q := dashboardQueries(x)
			exprs, vars = append(exprs, e...), append(vars, q...)
		}
	case []any:
		for _, x := range v {
			e, q := dashboardQueries(x)
			exprs, vars = append(exprs, e...), append(vars, q...)
		}
	}
	return exprs, vars
}

var (
	grafanaVarRe = regexp.MustCompile(`\$\{?([A-Za-z_]+)\}?`)
	stringRe     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchersRe   = regexp.MustCompile(`\{[^}]*\}`)
	rangeRe      = regexp.MustCompile(`\[[^\]]*\]`)
	groupingRe   = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identRe      = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	promqlWords  = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless", "inf", "nan"}
)

// checkExprs has promtool parse exprs (Grafana's variables replaced by
// values they may take) as recording rules, and checks that every metric
// name in them is in exposed.
func checkExprs(promtool, dir string, exprs []string, exposed map[string]bool) error {
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	var errs []string
	for i, e := range exprs {
		e = grafanaVarRe.ReplaceAllStringFunc(e, func(m string) string {
			if strings.Contains(m, "__") { // $__range, $__rate_interval
				return "5m"
			}
			return ".*"
		})
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:expr_%d", i), Expr: e})
		bare := rangeRe.ReplaceAllString(matchersRe.ReplaceAllString(stringRe.ReplaceAllString(e, `""`), ""), "")
		bare = groupingRe.ReplaceAllString(bare, "")
		for _, id := range identRe.FindAllString(bare, -1) {
			if strings.HasSuffix(id, "(") || slices.Contains(promqlWords, strings.ToLower(id)) {
				continue // a function or a keyword
			}
			if !exposed[id] {
				errs = append(errs, fmt.Sprintf("%q names %s, which the agent does not expose", e, id))
			}
		}
	}
	// YAML takes JSON as it is.
	b, _ := json.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	path := filepath.Join(dir, "dashboard.rules.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, promtool, "check", "rules", path).CombinedOutput(); err != nil {
		errs = append(errs, fmt.Sprintf("promtool check rules: %v\n%s", err, out))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// exposedNames are the metric names of the agent's /metrics once it has
// a result with every figure (a histogram's as its series).
func exposedNames(t *testing.T) map[string]bool {
	t.Helper()
	m := newMetrics()
	f := 1.0
	now := time.Now()
	m.observe(&store.Result{Test: "t", Server: "s:1", Direction: "bidirectional", Status: store.StatusOK, Start: now, End: now.Add(time.Second),
		MaxMbps: &f, SummaryMbps: &f, LossRatio: &f, RTTMinMs: &f, RTTRangeMs: &f, DelayVarMs: &f, LoadedMs: &f, RPM: &f})
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[mf.GetName()+s] = true
			}
		}
	}
	if len(figures) > 0 && !names["udpstp_agent_"+figures[0].name] {
		t.Fatalf("the figures are not exposed: %v", names)
	}
	return names
}
