package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeRow is one row of docs/options.md's option table.
type readmeRow struct {
	line                                    int
	udpst, udpstp, role, def, limits, notes string
}

// readmeOptions reads the option table of docs/options.md (the one headed
// "| `udpst` | udpstp | role | default | limits | notes |").
func readmeOptions(t *testing.T) []readmeRow {
	t.Helper()
	b, err := os.ReadFile("../../docs/options.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "| `udpst` | udpstp | role | default | limits | notes |" {
			start = i + 2 // after the |---| line
			break
		}
	}
	if start < 0 {
		t.Fatal("docs/options.md has no option table")
	}
	var rows []readmeRow
	for i := start; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		// Cells are split at every | that is not escaped as \|.
		var cells []string
		var cell strings.Builder
		l := strings.TrimSpace(lines[i])
		for j := 1; j < len(l); j++ {
			switch {
			case l[j] == '\\' && j+1 < len(l) && l[j+1] == '|':
				cell.WriteByte('|')
				j++
			case l[j] == '|':
				cells = append(cells, strings.TrimSpace(cell.String()))
				cell.Reset()
			default:
				cell.WriteByte(l[j])
			}
		}
		if len(cells) != 6 {
			t.Fatalf("docs/options.md:%d: %d cells, want 6", i+1, len(cells))
		}
		rows = append(rows, readmeRow{i + 1, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]})
	}
	return rows
}

// TestReadmeOptionTable holds docs/options.md's option table against the option
// table of flags.go: every option is in it with its long name, its letter
// as udpst's and ours, its role, the limits of its value, the first word
// of its default, and "not supported yet" exactly when it is unsupported;
// and every option docs/options.md lists exists. The two rows that are not
// options (-? and the server's bind addresses) are known by name.
func TestReadmeOptionTable(t *testing.T) {
	long := regexp.MustCompile("--([a-z][a-z0-9-]*)(?:, -([^`\\s,]))?")
	notOptions := map[string]bool{"`-?`": true, "`bind-address[:port]...`": true}
	roleName := map[role]string{forClient: "client", forServer: "server", forBoth: "both"}
	documented := map[string]bool{}
	for _, r := range readmeOptions(t) {
		ms := long.FindAllStringSubmatch(r.udpstp, -1)
		if len(ms) == 0 {
			if !notOptions[r.udpstp] {
				t.Errorf("docs/options.md:%d: %s names no option", r.line, r.udpstp)
			}
			continue
		}
		for _, m := range ms {
			name, letter := m[1], m[2]
			o, ok := optionByName[name]
			if !ok {
				t.Errorf("docs/options.md:%d: --%s is not an option", r.line, name)
				continue
			}
			if documented[name] {
				t.Errorf("docs/options.md:%d: --%s listed twice", r.line, name)
			}
			documented[name] = true
			checkReadmeRow(t, r, o, letter, roleName[o.role])
		}
	}
	for _, o := range options {
		if !documented[o.name] {
			t.Errorf("--%s is missing from docs/options.md's option table", o.name)
		}
	}
}

func checkReadmeRow(t *testing.T, r readmeRow, o *option, letter, role string) {
	t.Helper()
	if letter != o.letter {
		t.Errorf("docs/options.md:%d: --%s has the letter %q, the code %q", r.line, o.name, letter, o.letter)
	}
	if o.letter != "" && !strings.Contains(r.udpst, "`-"+o.letter) {
		t.Errorf("docs/options.md:%d: udpst's column %q lacks -%s", r.line, r.udpst, o.letter)
	}
	if o.letter == "" && r.udpst != "" && r.udpst != "address" {
		t.Errorf("docs/options.md:%d: --%s is ours, but udpst's column says %q", r.line, o.name, r.udpst)
	}
	if r.role != role {
		t.Errorf("docs/options.md:%d: --%s is for %q, the code says %s", r.line, o.name, r.role, role)
	}
	if o.kind != switchOpt && o.hi > 0 {
		for _, hi := range []int{o.hi, o.srvHi} {
			if lim := fmt.Sprintf("%d-%d", o.lo, hi); hi > 0 && !strings.Contains(r.limits, lim) {
				t.Errorf("docs/options.md:%d: --%s limits %q lack %s", r.line, o.name, r.limits, lim)
			}
		}
	}
	for _, d := range []string{o.def, o.srvDef} {
		if first, _, _ := strings.Cut(strings.TrimSpace(d), " "); strings.TrimRight(first, ";") != "" &&
			!strings.Contains(r.def, strings.TrimRight(first, ";")) {
			t.Errorf("docs/options.md:%d: --%s default %q lacks the code's %q", r.line, o.name, r.def, d)
		}
	}
	if said := strings.Contains(r.notes, "not supported yet"); said != (o.unsupported != 0) {
		t.Errorf("docs/options.md:%d: --%s notes %q, but the option is unsupported=%v", r.line, o.name, r.notes, o.unsupported)
	}
}
