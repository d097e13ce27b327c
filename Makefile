# udpstp: build, test, benchmark and demo targets. `make test` is what CI runs.

GO        ?= go
BIN       := bin/udpstp
PKGS      := ./...
FUZZTIME  ?= 3s
BENCHTIME ?= 1s
# The release from CHANGELOG.md, plus the commit where this is a checkout
# (contrib/release/version): a fresh clone has no tag to describe.
VERSION   ?= $(shell contrib/release/version)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# staticcheck, pinned: go run fetches exactly this version (and caches it).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# The test runs save their go test -json streams here for skipreport.
REPORTDIR ?= bin/testreport
TESTREPORT = $(GO) run ./internal/testkit/testreport
# The lab's timing-bound checks: the tests that call netlab.LabOnly, which
# skips them unless UDPSTP_LAB=1: those named TestLab*, and the impairment
# lab's.
LABRUN    ?= ^(TestLab|TestImpairLab|TestRelayBaseline)
# The lab's CI subset (make lab-ci): one case of each kind the lab checks
# (capacity under tbf both ways, loss, delay, several connections, each
# impairment, a step, both directions at once, the fixed rows, the relay and
# tbf themselves), sized to what CI's 15 minutes leave after make test and
# make release-check. The rest, and the comparisons with OB-UDPST, are
# make lab's, by hand.
LABCITESTS := TestLab|TestImpairLab|TestLabBidirectional|TestLabLoopbackRates|TestRelayBaseline|TestLabTBFRateIsMet
LABCICASES := tbf-200M-down|tbf-200M-up|loss-1pct-down|delay-100M-down|multi-C4-200M-up|burst-loss-down|reorder-up|dup-down|cap-50M-rtt20-down|step-200-to-50-down|tbf-200M-down-50M-up|down-fixed-50|up-dual-phase|up-fixed-100|gso1|gso16

# The go test | testreport pipelines fail when go test does, not only when
# testreport does. Only theirs: with pipefail everywhere, a `... | grep -q`
# fails whenever grep's early exit gives its writer SIGPIPE.
unit race portable lab lab-ci: SHELL := /bin/bash
unit race portable lab lab-ci: .SHELLFLAGS := -o pipefail -c

.PHONY: all build test prereq vet tracked fmtcheck lint unit race portable lab lab-ci skipreport fuzz crossbuild systemd-check systemd-check-test-units bench demo man completion clean

all: build

# build: a static binary (no cgo, so no libc: it runs on any Linux of its
# architecture, in a scratch container too), without the build machine's
# paths in it (-trimpath); static-check checks both.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/udpstp

# test: everything CI checks, in order of how fast it fails. It must pass
# on a slow, busy 2-core machine: nothing in it measures the machine (that
# is `make lab` and `make bench`). prereq runs first, alone (also under
# -j): a missing tool stops the run at its start, not in its last step.
test: prereq
	@$(MAKE) --no-print-directory fmtcheck tracked vet lint unit race portable fuzz crossbuild systemd-check

# prereq: the tools make test needs (.ci/prereq: the required ones stop it
# with the apt-get line; the optional ones, whose tests skip, are listed).
prereq:
	@STATICCHECK=$(STATICCHECK) .ci/prereq

# tracked: no compiled program is tracked (a clone would carry it for
# ever): every tracked file's first four bytes are checked for ELF's magic.
# And no comment or doc cites "issue N" of a tracker that is not in the
# repository: it says what was found instead.
tracked:
	@out=$$(git grep -n -I -i -E '\bissues? #?[0-9]+' -- ':!Makefile' || true); \
	if [ -n "$$out" ]; then echo "cites an issue tracker that is not in the repository:"; echo "$$out"; exit 1; fi
	@out=$$(git ls-files -z | perl -0ne 'chomp; open(my $$f, "<", $$_) or next; read($$f, my $$b, 4); print "$$_\n" if $$b eq "\x7fELF"'); \
	if [ -n "$$out" ]; then echo "compiled programs are tracked (git rm --cached them):"; echo "$$out"; exit 1; fi

fmtcheck:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# lint: staticcheck for each of LINTOS (GOOS set: the non-Linux files are
# checked too, and what only Linux uses must sit in a _linux.go file); a
# finding is fixed or justified inline with //lint:ignore CHECK reason.
# staticcheck is built once for this machine (go run would build it for
# GOOS), into bin/tools.
LINTOS ?= linux darwin windows
lint:
	@mkdir -p bin/tools
	GOBIN=$(CURDIR)/bin/tools GOOS= GOARCH= $(GO) install $(STATICCHECK)
	@set -e; for os in $(LINTOS); do \
		echo "staticcheck GOOS=$$os"; \
		GOOS=$$os bin/tools/staticcheck $(PKGS); \
	done

# unit: every test, printed as a plain go test prints them (testreport
# reads the -json stream), then the skipped tests per package. It fails if
# a golden or contract test skipped, or a skip did not say why.
unit:
	$(GO) test -count=1 -timeout 25m -json $(PKGS) | $(TESTREPORT) -save $(REPORTDIR)/unit.json

# race: the race detector over the tests -short keeps (the end-to-end
# tests run real processes, which it does not instrument). Allocation
# counts are not judged there (internal/testkit/race).
race:
	$(GO) test -race -short -count=1 -timeout 25m -json $(PKGS) | $(TESTREPORT) -save $(REPORTDIR)/race.json

# portable: the socket and executor of macOS, Windows and the BSDs
# (engine/*_other.go: net.UDPConn, one Engine Thread per Test Connection)
# run here, on Linux, built with -tags portable: vet, the engine's tests
# (the contract suite among them; the pool's, GSO's and recvmmsg's are
# Linux's, in !portable files), and one end-to-end test each way against
# our server (TestLoopback) and, with UDPST_BIN, against OB-UDPST's and
# OB-UDPST's client against ours (TestInterop; skipped, saying so, without
# it). TestPortableBinary checks that the processes run the portable code.
PORTABLERUN := ^(TestPortableBinary|TestLoopback|TestInterop)$$/^(down-v4|up-v4|-d|-u)$$/^auth=false$$
portable:
	$(GO) vet -tags portable $(PKGS)
	$(GO) test -tags portable -count=1 -timeout 10m -json ./engine | $(TESTREPORT) -save $(REPORTDIR)/portable-engine.json
	$(GO) test -tags portable -count=1 -timeout 10m -run '$(PORTABLERUN)' -json ./e2e | $(TESTREPORT) -save $(REPORTDIR)/portable-e2e.json

# lab: the timing-bound checks: the network lab's accuracy and throughput
# (e2e TestLab), the impairment lab (TestImpairLab, and the relay's
# baseline), fixed rows on loopback, tbf's own rate, and, with UDPST_BIN,
# the maxima against OB-UDPST's. Root, ip, tc and nft; one
# package at a time, so that no lab shares the CPUs with another. Each
# case is allowed one retry, inside the test.
lab:
	UDPSTP_LAB=1 $(GO) test -count=1 -p 1 -timeout 30m -run '$(LABRUN)' -json $(PKGS) | $(TESTREPORT) -save $(REPORTDIR)/lab.json

# lab-ci: the subset above, as make lab runs it (CI runs it after make test).
lab-ci:
	UDPSTP_LAB=1 $(GO) test -count=1 -p 1 -timeout 10m -run '^($(LABCITESTS))$$/^($(LABCICASES))$$' -json ./e2e ./internal/testkit/netlab | $(TESTREPORT) -save $(REPORTDIR)/lab.json

# skipreport: the skipped tests per package of every run saved so far
# (unit, race, lab), and the rule above applied to all of them.
skipreport:
	$(TESTREPORT) -summary $(wildcard $(REPORTDIR)/*.json)

# fuzz: every fuzz target runs briefly beyond its committed seed corpus.
# -fuzz must match exactly one target in one package, hence the loop. A
# failure prints go test's output; a target that fails is run once more,
# and fails the run only if it fails again: an input that crashes it was
# written to testdata/fuzz and is replayed first, so it fails again.
# -fuzzminimizetime=0: Go minimizes every new interesting input, which can
# take longer than the whole FUZZTIME on a large one and then fails the
# run with "context deadline exceeded" although nothing crashed.
fuzz:
	@set -e; for pkg in ./dataphase ./control ./report/plot; do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
			out=$$($(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=0 $$pkg 2>&1) || { \
				echo "$$out"; echo "fuzz $$pkg $$f failed: once more"; \
				$(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=0 $$pkg; }; \
		done; \
	done

# crossbuild: the client must build off Linux (one Engine Thread per Test
# Connection there), and so must the tests of every package (vet compiles
# them), so that a Linux-only call in a test is caught here. -trimpath and
# no cgo, as make dist builds them: the compiled packages are then the
# same, and dist's builds of these two take seconds, not a minute each.
crossbuild:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build -trimpath -o /dev/null ./cmd/udpstp
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build -trimpath -o /dev/null ./cmd/udpstp
	GOOS=darwin GOARCH=arm64 $(GO) vet $(PKGS)
	GOOS=windows GOARCH=amd64 $(GO) vet $(PKGS)

# systemd-check: the units in contrib/systemd pass systemd's own checks and
# the service's exposure stays at most 2.0 (systemd-analyze's threshold is on
# its 0-100 scale: 20). verify insists that ExecStart's binary exists, so it
# checks a copy of the units that runs the binary just built instead of
# /usr/bin/udpstp; security scores the unit as shipped. --man=no: the
# units name man:udpstp(1), which is installed only with the package
# (make deb-install-check verifies the installed units with it).
SYSTEMD_EXPOSURE_MAX ?= 20
systemd-check: build systemd-check-test-units
	@command -v systemd-analyze >/dev/null 2>&1 || { \
		echo "systemd-check: systemd-analyze not found: apt-get install systemd (.ci/run does)"; exit 1; }
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	sed 's|^ExecStart=/usr/bin/udpstp|ExecStart=$(CURDIR)/$(BIN)|' contrib/systemd/udpstp.service >"$$d/udpstp.service"; \
	cp contrib/systemd/udpstp.socket "$$d/"; \
	systemd-analyze verify --man=no "$$d/udpstp.service" "$$d/udpstp.socket"; \
	echo "systemd-analyze verify: udpstp.service udpstp.socket OK"; \
	if ! systemd-analyze security --offline=yes --threshold=$(SYSTEMD_EXPOSURE_MAX) --no-pager \
		contrib/systemd/udpstp.service >"$$d/security.txt" 2>&1; then \
		cat "$$d/security.txt"; echo "systemd-check: exposure above $(SYSTEMD_EXPOSURE_MAX)/100"; exit 1; fi; \
	grep 'Overall exposure level' "$$d/security.txt"
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	sed 's|^ExecStart=/usr/bin/udpstp|ExecStart=$(CURDIR)/$(BIN)|' contrib/systemd/udpstp-agent.service >"$$d/udpstp-agent.service"; \
	systemd-analyze verify --man=no "$$d/udpstp-agent.service"; \
	echo "systemd-analyze verify: udpstp-agent.service OK"; \
	if ! systemd-analyze security --offline=yes --threshold=$(SYSTEMD_EXPOSURE_MAX) --no-pager \
		contrib/systemd/udpstp-agent.service >"$$d/security.txt" 2>&1; then \
		cat "$$d/security.txt"; echo "systemd-check: exposure of udpstp-agent.service above $(SYSTEMD_EXPOSURE_MAX)/100"; exit 1; fi; \
	grep 'Overall exposure level' "$$d/security.txt"

# systemd-check-test-units: the client's hourly test (udpstp-test.service,
# udpstp-test.timer, writing node_exporter's textfile) passes the same
# checks as the server's unit.
systemd-check-test-units: build
	@command -v systemd-analyze >/dev/null 2>&1 || { \
		echo "systemd-check: systemd-analyze not found: apt-get install systemd (.ci/run does)"; exit 1; }
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	sed 's|^ExecStart=/usr/bin/udpstp|ExecStart=$(CURDIR)/$(BIN)|' contrib/systemd/udpstp-test.service >"$$d/udpstp-test.service"; \
	cp contrib/systemd/udpstp-test.timer "$$d/"; \
	systemd-analyze verify "$$d/udpstp-test.service" "$$d/udpstp-test.timer"; \
	echo "systemd-analyze verify: udpstp-test.service udpstp-test.timer OK"; \
	if ! systemd-analyze security --offline=yes --threshold=$(SYSTEMD_EXPOSURE_MAX) --no-pager \
		contrib/systemd/udpstp-test.service >"$$d/security.txt" 2>&1; then \
		cat "$$d/security.txt"; echo "systemd-check: exposure of udpstp-test.service above $(SYSTEMD_EXPOSURE_MAX)/100"; exit 1; fi; \
	grep 'Overall exposure level' "$$d/security.txt"

# bench: the Go benchmarks of every package, then the whole-system ones in
# the network lab (internal/testkit/capacity: the server-capacity check and the
# single-connection throughput comparison), once each; they skip, saying
# why, where the lab cannot run. No time limit: e2e's benchmarks run
# processes for minutes (an agent's 100 tests, 1,000 probes' uploads).
# Set UDPST_BIN to compare with OB-UDPST; see internal/testkit/capacity's
# package doc for CAPACITY_* and THROUGHPUT_*.
# BenchmarkPostgresFleet10M is left to bench-store: seeding its ten million
# results takes minutes.
bench: build
	UDPSTP_BIN=$(CURDIR)/$(BIN) $(GO) test -run='^$$' -bench=. -skip='^BenchmarkPostgresFleet10M$$' -benchmem -benchtime=$(BENCHTIME) -timeout=0 $$($(GO) list $(PKGS) | grep -v /internal/testkit/capacity)
	UDPSTP_BIN=$(CURDIR)/$(BIN) $(GO) test -run='^$$' -bench=. -benchtime=1x -timeout=0 ./internal/testkit/capacity

# bench-store: the result store's benchmarks alone, three runs each (the
# medians are docs/store.md's figures): SQLite with 100,000 results, and
# PostgreSQL (a throw-away cluster of internal/testkit/pgtest: postgresql needed)
# with 1,000 concurrent writers and the fleet summary over one and ten
# million rows (seeding the ten million takes about 4 minutes and 6 GB;
# UDPSTP_BENCH_PG=postgres://... seeds a database of yours once and reuses
# it). make bench runs them once, but the ten million.
bench-store:
	$(GO) test -run='^$$' -bench=. -benchtime=$(BENCHTIME) -count=3 -timeout=0 ./store

# demo: a real loopback test in each direction between our own server and
# client; the JSON results stay in demo-results/, with --extensions: a
# loopback's delays are a fraction of OB-UDPST's whole ms, which read 0, and
# udpstp plot draws ours to the µs from the "udpstp" key.
DEMO_PORT ?= 34601
demo: build
	@mkdir -p demo-results
	@$(BIN) server -p $(DEMO_PORT) 127.0.0.1 2>demo-results/server.log & echo $$! >demo-results/server.pid; \
	sleep 0.5; status=0; \
	for dir in downstream upstream; do \
		flag=-d; [ $$dir = upstream ] && flag=-u; \
		echo "== $$dir test (udpstp client $$flag -t 5 -p $(DEMO_PORT) --extensions 127.0.0.1)"; \
		$(BIN) client $$flag -t 5 -p $(DEMO_PORT) --extensions --output demo-results/$$dir.json 127.0.0.1 || status=$$?; \
	done; \
	kill -INT $$(cat demo-results/server.pid) 2>/dev/null; wait; rm -f demo-results/server.pid; \
	echo; echo "JSON results: $(CURDIR)/demo-results/downstream.json and $(CURDIR)/demo-results/upstream.json"; \
	echo "server log:   $(CURDIR)/demo-results/server.log"; \
	exit $$status

# man: udpstp(1), generated from the command definitions (udpstp man), in
# build/man. Generated, not committed: it cannot go stale that way; the
# release archive and the packages take it from here.
man: build
	@mkdir -p build/man
	$(BIN) man >build/man/udpstp.1
	@echo "man page: $(CURDIR)/build/man/udpstp.1 (man -l build/man/udpstp.1)"

# completion: the bash, zsh and fish completion scripts in build/completion,
# under the names each shell's completion directory expects.
completion: build
	@mkdir -p build/completion
	$(BIN) completion bash >build/completion/udpstp
	$(BIN) completion zsh >build/completion/_udpstp
	$(BIN) completion fish >build/completion/udpstp.fish
	@echo "completion scripts: $(CURDIR)/build/completion/{udpstp,_udpstp,udpstp.fish}"

clean:
	rm -rf bin build demo-results

# ---- Packaging, release and deployment checks -------------------
# Everything below writes under build/ and is checked by `make release-check`,
# which .ci/run runs after `make test`. The scripts are in contrib/release
# (archives, versions) and contrib/debian (the package); both ship the man
# page and completions that `make man` and `make completion` write to
# build/man and build/completion. contrib/validate checks contrib/docker,
# contrib/kubernetes and contrib/prometheus (see docs/deploy.md).

.PHONY: static-check dist deb deb-check deb-install-check test-arm64 deploy-check release-lint release-check small-check test-router

RELEASE_DIR    := build
# Router builds: home gateways and CPE, full and small (-tags
# small: cmd/udpstp/commands_small.go says what it leaves out), the small
# ones as udpstp_VERSION_linux_ARCH_small.tar.gz. Soft-float MIPS (most
# router SoCs have no FPU) and ARMv7 (GOARM=7), as asked.
ROUTER_PLATFORMS := linux/arm linux/mips linux/mipsle linux/riscv64
ROUTER_GOARM     := 7
ROUTER_GOMIPS    := softfloat
DIST_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 $(ROUTER_PLATFORMS)
DEB_ARCHES     := amd64 arm64
DEB_VERSION     = $(shell contrib/release/debversion $(VERSION))
# Every file in an archive or package is dated HEAD's commit time, so that a
# tree builds the same bytes again (https://reproducible-builds.org).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# Release binaries are stripped (-s -w: no symbol table or DWARF; panics
# still print full stack traces from Go's own tables).
RELEASE_LDFLAGS = -s -w $(LDFLAGS)

# $(call release-build,OS/ARCH ...[,TAGS,SUFFIX]): the static release
# binaries, as $(RELEASE_DIR)/bin/OS_ARCHSUFFIX/udpstp (udpstp.exe on
# windows), built with the build tags TAGS. 32-bit ARM is ARMv7 and MIPS
# is soft-float (GOARM, GOMIPS: the router builds below).
release-build = set -e; for p in $(1); do \
	os=$${p%/*}; arch=$${p\#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	echo "go build $(if $(2),-tags $(2) )$$os/$$arch"; \
	CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOARM=$(ROUTER_GOARM) GOMIPS=$(ROUTER_GOMIPS) \
		$(GO) build -trimpath -tags '$(2)' -ldflags "$(RELEASE_LDFLAGS)" \
		-o $(RELEASE_DIR)/bin/$${os}_$${arch}$(3)/udpstp$$ext ./cmd/udpstp; \
	done

# static-check: `make build` gave a statically linked binary (file(1) says
# so: no ELF interpreter, no shared libraries), built without cgo and with
# -trimpath (as its build info records), that reports the version it was
# given.
static-check: build
	@set -e; info=$$(file -b $(BIN)); echo "file $(BIN): $$info"; \
	case "$$info" in *"statically linked"*) ;; *) echo "static-check: $(BIN) is not statically linked"; exit 1;; esac; \
	bi=$$($(GO) version -m $(BIN)); \
	echo "$$bi" | grep -q 'CGO_ENABLED=0' || { echo "static-check: $(BIN) was built with cgo"; exit 1; }; \
	echo "$$bi" | grep -q -- '-trimpath=true' || { echo "static-check: $(BIN) was built without -trimpath"; exit 1; }; \
	$(BIN) version | grep -qF -- '$(VERSION)' || { echo "static-check: $(BIN) version does not say $(VERSION)"; exit 1; }; \
	echo "static-check: static, CGO_ENABLED=0, -trimpath, version $(VERSION): OK"

# dist: release archives for $(DIST_PLATFORMS) in $(RELEASE_DIR)/dist, named
# udpstp_VERSION_OS_ARCH.tar.gz (zip for windows), and their SHA256SUMS
# (check with `sha256sum -c SHA256SUMS` in that directory).
dist: man completion
	@$(call release-build,$(DIST_PLATFORMS))
	@$(call release-build,$(ROUTER_PLATFORMS),small,_small)
	@set -e; rm -rf $(RELEASE_DIR)/dist; for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) contrib/release/mkdist $$os $$arch \
			$(RELEASE_DIR)/bin/$${os}_$$arch/udpstp$$ext $(RELEASE_DIR) $(VERSION) $(RELEASE_DIR)/dist; \
	done; \
	for p in $(ROUTER_PLATFORMS); do \
		SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) contrib/release/mkdist linux $${p#*/}_small \
			$(RELEASE_DIR)/bin/linux_$${p#*/}_small/udpstp $(RELEASE_DIR) $(VERSION) $(RELEASE_DIR)/dist; \
	done; \
	cd $(RELEASE_DIR)/dist && sha256sum udpstp_* >SHA256SUMS && cat SHA256SUMS

# deb: Debian packages for $(DEB_ARCHES) in $(RELEASE_DIR)/deb (see
# contrib/debian/mkdeb).
deb: man completion
	@$(call release-build,$(addprefix linux/,$(DEB_ARCHES)))
	@set -e; rm -rf $(RELEASE_DIR)/deb; for a in $(DEB_ARCHES); do \
		SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) GO="$(GO)" contrib/debian/mkdeb $$a \
			$(RELEASE_DIR)/bin/linux_$$a/udpstp $(RELEASE_DIR) $(VERSION) $(RELEASE_DIR)/deb; \
	done

# deb-check: each package has the files it must (contrib/debian/check), and
# lintian finds no error in it (warnings are shown; the ones we accept are
# overridden in contrib/debian/lintian-overrides, each with its reason).
deb-check: deb
	@set -e; for a in $(DEB_ARCHES); do \
		contrib/debian/check $(RELEASE_DIR)/deb/udpstp_$(DEB_VERSION)_$$a.deb $$a; \
	done

# deb-install-check: installs the amd64 package on this machine, checks the
# installed units with systemd-analyze (verify; security at most
# SYSTEMD_EXPOSURE_MAX), runs the installed binary, then removes the package
# again (dpkg --purge). Needs root, and changes the machine: for CI and
# scratch machines only. It refuses to replace an udpstp that is already
# there.
deb-install-check: deb
	@contrib/debian/install-check $(RELEASE_DIR)/deb/udpstp_$(DEB_VERSION)_amd64.deb $(SYSTEMD_EXPOSURE_MAX)

# test-arm64: the unit tests of the packages below, cross-compiled for
# linux/arm64 and run under qemu-user (qemu-aarch64; apt-get install
# qemu-user). Only packages whose tests need neither root nor network
# namespaces nor real-time pacing, which emulation slows ten times or more:
# the pure ones (clock, control, dataphase, report, report/plot,
# internal/buildinfo, and engine/sim, whose time is virtual). The
# loopback-socket tests of control run too: qemu-user passes the system
# calls through. engine stays out: qemu-user 7.2 (Debian 12) refuses its
# sockets' SO_TIMESTAMPNS (setsockopt: protocol not available), so none of
# them opens under emulation. client stays out too: its multi-connection
# tests run real-time control timers (3 s setup timeouts) that emulated
# Test Connections miss. -short, as everywhere
# under emulation. About 1 min on 2 busy cores. -trimpath, as make dist
# builds: the packages the tests import are compiled once. Skips, saying why, where
# qemu-aarch64 is missing.
ARM64_TEST_PKGS := ./clock ./control ./dataphase ./report ./report/plot ./internal/buildinfo ./engine/sim
QEMU_AARCH64    ?= qemu-aarch64
test-arm64:
	@set -e; if ! command -v $(QEMU_AARCH64) >/dev/null 2>&1; then \
		echo "test-arm64: SKIP: $(QEMU_AARCH64) not found (apt-get install qemu-user)"; exit 0; fi; \
	d=$(CURDIR)/$(RELEASE_DIR)/test-arm64; mkdir -p $$d; \
	for pkg in $(ARM64_TEST_PKGS); do \
		t=$$d/$$(echo $$pkg | tr -c 'A-Za-z0-9\n' _).test; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) test -c -trimpath -o $$t $$pkg; \
		echo "qemu-aarch64 $$pkg"; \
		(cd $$pkg && $(QEMU_AARCH64) $$t -test.short -test.count=1) || { echo "test-arm64: FAIL $$pkg"; exit 1; }; \
	done; echo "test-arm64: OK ($(ARM64_TEST_PKGS))"

# small-check: the small router binaries (built by make dist) stay under
# SMALL_MAX_BYTES (the issue's 10 MB for small flash; docs/install.md has the
# sizes), and hold none of what the small build leaves out (the plots' font and
# rasterizer, Prometheus's client). The byte counts are the build's, not the machine's.
SMALL_MAX_BYTES ?= 10000000
small-check: dist
	@set -e; for p in $(ROUTER_PLATFORMS); do \
		b=$(RELEASE_DIR)/bin/linux_$${p#*/}_small/udpstp; n=$$(stat -c %s $$b); \
		echo "small-check: $$p -tags small: $$n bytes ($$(( n / 1000 )) kB)"; \
		[ $$n -le $(SMALL_MAX_BYTES) ] || { echo "small-check: $$b is above $(SMALL_MAX_BYTES) bytes"; exit 1; }; \
		if $(GO) version -m $$b | grep -E 'go-fonts|golang.org/x/image|prometheus'; then echo "small-check: $$b holds the above"; exit 1; fi; \
	done

# test-router: the protocol's unit tests (ROUTER_TEST_PKGS) under qemu-user for
# 32-bit ARMv7 (qemu-arm) and soft-float little-endian MIPS (qemu-mipsel),
# the router builds' CPUs, as test-arm64 runs them: 32-bit words and
# alignment, and MIPS's soft-float, tested where routers run them. Skips,
# saying why, where qemu-user is missing.
ROUTER_QEMU := arm:qemu-arm mipsle:qemu-mipsel
# ROUTER_TEST_PKGS: the protocol's unit tests (its PDUs, the Control and
# Data Phases, the clock), the part of test-arm64's list that a router's
# 32-bit and soft-float CPUs must get right; report and its plots stay on
# arm64, which keeps make release-check's time within CI's budget.
ROUTER_TEST_PKGS := ./clock ./control ./dataphase
test-router:
	@set -e; for aq in $(ROUTER_QEMU); do \
		arch=$${aq%%:*}; qemu=$${aq#*:}; \
		if ! command -v $$qemu >/dev/null 2>&1; then \
			echo "test-router: SKIP $$arch: $$qemu not found (apt-get install qemu-user)"; continue; fi; \
		d=$(CURDIR)/$(RELEASE_DIR)/test-$$arch; mkdir -p $$d; \
		for pkg in $(ROUTER_TEST_PKGS); do \
			t=$$d/$$(echo $$pkg | tr -c 'A-Za-z0-9\n' _).test; \
			CGO_ENABLED=0 GOOS=linux GOARCH=$$arch GOARM=$(ROUTER_GOARM) GOMIPS=$(ROUTER_GOMIPS) $(GO) test -c -trimpath -o $$t $$pkg; \
			echo "$$qemu $$pkg"; \
			(cd $$pkg && $$qemu $$t -test.short -test.count=1) || { echo "test-router: FAIL $$arch $$pkg"; exit 1; }; \
		done; echo "test-router: $$arch OK ($(ROUTER_TEST_PKGS))"; \
	done

# deploy-check: the Dockerfile, Kubernetes manifest and Prometheus scrape
# config under contrib/ are what docs/deploy.md says (contrib/validate, a
# module of its own so that its Kubernetes and BuildKit dependencies stay out
# of udpstp's), and promtool accepts the scrape config.
deploy-check:
	cd contrib/validate && $(GO) vet ./... && $(GO) test -count=1 ./...
	@command -v promtool >/dev/null 2>&1 || { \
		echo "deploy-check: promtool not found: apt-get install prometheus (.ci/run does)"; exit 1; }
	promtool check config contrib/prometheus/scrape.yml

# release-lint: shellcheck on the packaging scripts and the maintainer
# scripts (POSIX sh: dash runs them).
RELEASE_SCRIPTS := contrib/release/debversion contrib/release/mkdist contrib/release/version .ci/prereq \
	contrib/debian/mkdeb contrib/debian/mkcopyright contrib/debian/check contrib/debian/install-check \
	contrib/debian/postinst contrib/debian/prerm contrib/debian/postrm
release-lint:
	@command -v shellcheck >/dev/null 2>&1 || { \
		echo "release-lint: shellcheck not found: apt-get install shellcheck (.ci/run does)"; exit 1; }
	shellcheck -s sh $(RELEASE_SCRIPTS)

# release-check: every packaging and deployment check, for CI (which also
# runs deb-install-check).
release-check: release-lint static-check dist small-check deb-check test-arm64 test-router deploy-check
