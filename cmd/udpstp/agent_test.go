//go:build !small

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/agent"
)

// A test's options in the agent's file go through udpstp client's own
// parser: the same checks and words, placed on the option's line.
func TestAgentConfigClientOptions(t *testing.T) {
	head := "[[test]]\nname = \"a\"\nservers = [\"192.0.2.1\"]\ndirection = \"down\"\n[test.options]\n"
	for _, tc := range []struct{ options, want string }{
		{"test-time = 0\n", "agent.toml:6: test[1].options.test-time: "},
		{"test-time = 5\nsub-interval = 7000\n", "agent.toml:7: test[1].options.sub-interval: Sub-interval period is greater than test interval time"},
		{"colour = \"red\"\n", "agent.toml:6: test[1].options.colour: Unknown option --colour"},
		{"connections = \"3-2\"\n", "agent.toml:6: test[1].options.connections: "},
		{"dscp-ecn = 999\n", "agent.toml:6: test[1].options.dscp-ecn: "},
		{"no-gso = true\n", "agent.toml:6: test[1].options.no-gso: not an option of an agent's test"},
		{"format = \"json\"\n", "agent.toml:6: test[1].options.format: not an option of an agent's test"},
	} {
		_, err := agent.Parse("agent.toml", []byte(head+tc.options), agent.LoadOptions{Parse: parseClientArgs})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v\nwant %q...", tc.options, err, tc.want)
		}
	}
	c, err := agent.Parse("agent.toml", []byte(head+"test-time = 5\nconnections = \"2\"\nrate-index = \"@100\"\ntrial-interval = 50\none-way-delay = true\n"),
		agent.LoadOptions{Parse: parseClientArgs})
	if err != nil {
		t.Fatal(err)
	}
	cc := c.Tests[0].Client
	if cc.TestIntTime != 5 || cc.ConnMin != 2 || cc.SRIndex != 100 || !cc.StartIndex || !cc.UseOwDelVar || cc.Upstream {
		t.Errorf("options read as %+v", cc)
	}
	// A bad server is placed on servers.
	_, err = agent.Parse("agent.toml", []byte("[[test]]\nname = \"a\"\nservers = [\"[::1\"]\ndirection = \"up\"\n"), agent.LoadOptions{Parse: parseClientArgs})
	if err == nil || !strings.HasPrefix(err.Error(), "agent.toml:3: test[1].servers: ") {
		t.Errorf("bad server: %v", err)
	}
}

// TestAgentSpoolNeedsRemoteStore: --spool with a local store is refused
// (that store is local already), before anything is opened.
func TestAgentSpoolNeedsRemoteStore(t *testing.T) {
	dir := t.TempDir()
	mustFail(t, exitConfig, []string{"agent", "--store", "sqlite:" + filepath.Join(dir, "r.db"), "--spool", filepath.Join(dir, "s.db")},
		"--spool is for a remote --store")
}
