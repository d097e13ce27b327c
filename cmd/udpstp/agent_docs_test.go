//go:build !small

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/agent"
)

// agentDoc is the agent's guide, from this package's directory.
const agentDoc = "../../docs/agent.md"

// TestAgentDocConfigs: every ```toml block in docs/agent.md loads through
// the agent's own parser (with udpstp client's options parser, as the agent
// runs it), and every key of the guide's table of keys is in one of them,
// so that a documented key the parser refuses, or one no example shows,
// fails here.
func TestAgentDocConfigs(t *testing.T) {
	b, err := os.ReadFile(agentDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) < 3 {
		t.Fatalf("%d toml blocks in %s, want one per kind of schedule and the full example", len(blocks), agentDoc)
	}
	var all strings.Builder
	for i, m := range blocks {
		if _, err := agent.Parse(agentDoc, []byte(m[1]), agent.LoadOptions{Parse: parseClientArgs}); err != nil {
			t.Errorf("toml block %d: %v\n%s", i+1, err, m[1])
		}
		all.WriteString(m[1])
	}
	// The table's rows: | `key` | or | `[section] key` |.
	rows := regexp.MustCompile("(?m)^\\| `(?:\\[\\[?(\\w+)\\]\\]? )?(\\w+)` \\|").FindAllStringSubmatch(doc, -1)
	keys := 0
	for _, r := range rows {
		section, key := r[1], r[2]
		if section == "" && strings.HasPrefix(key, "udpstp_") {
			continue // a metric's row
		}
		keys++
		if !regexp.MustCompile(`(?m)^\s*`+key+`\s*=`).MatchString(all.String()) && !strings.Contains(all.String(), " "+key+" =") {
			t.Errorf("the key %s (section %q) of the table is in no toml example", key, section)
		}
		if section != "" && section != "test" && !strings.Contains(all.String(), "["+section+"]") {
			t.Errorf("the section [%s] of the table is in no toml example", section)
		}
	}
	if keys < 11 {
		t.Errorf("%d keys in the table of %s, want 11", keys, agentDoc)
	}
}

// TestAgentDocInstall: the guide's install steps name what the .deb ships
// (contrib/debian/check's list of its files) and the unit's own ExecStart.
func TestAgentDocInstall(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	doc, debFiles, unit := read(agentDoc), read("../../contrib/debian/check"), read("../../contrib/systemd/udpstp-agent.service")
	start := strings.Index(doc, "## Installing a probe from the .deb")
	end := strings.Index(doc, "## The configuration file")
	if start < 0 || end < start {
		t.Fatalf("%s has no install section before the configuration's", agentDoc)
	}
	install := doc[start:end]
	for _, f := range []string{"/usr/bin/udpstp", "udpstp-agent.service"} {
		if !strings.Contains(install, f) || !strings.Contains(debFiles, f) {
			t.Errorf("%s: in the install steps %v, in the .deb %v", f, strings.Contains(install, f), strings.Contains(debFiles, f))
		}
	}
	m := regexp.MustCompile(`(?m)^ExecStart=(\S.*)$`).FindStringSubmatch(unit)
	if m == nil || !strings.Contains(install, "ExecStart="+m[1]+" --config ") {
		t.Errorf("the drop-in in the install steps does not extend the unit's ExecStart (%v)", m)
	}
	if !strings.Contains(unit, "StateDirectory=udpstp") || !strings.Contains(install, "/var/lib/udpstp/results.db") {
		t.Error("the store's path in the install steps is not the unit's StateDirectory")
	}
}
