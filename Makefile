# udpstp: build, test, benchmark and demo targets. `make test` is what CI runs.

GO        ?= go
BIN       := bin/udpstp
PKGS      := ./...
FUZZTIME  ?= 3s
BENCHTIME ?= 1s
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all build test vet fmtcheck unit fuzz crossbuild systemd-check bench demo man completion clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/udpstp

# test: everything CI checks, in order of how fast it fails.
test: fmtcheck vet unit fuzz crossbuild systemd-check

fmtcheck:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

# fuzz: every fuzz target runs briefly beyond its committed seed corpus.
# -fuzz must match exactly one target in one package, hence the loop.
fuzz:
	@set -e; for pkg in ./dataphase ./control ./report/plot; do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg >/dev/null; \
		done; \
	done

# crossbuild: the client must build off Linux (one Engine Thread per Test
# Connection there), and so must the tests of every package (vet compiles
# them), so that a Linux-only call in a test is caught here.
crossbuild:
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/udpstp
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null ./cmd/udpstp
	GOOS=darwin GOARCH=arm64 $(GO) vet $(PKGS)
	GOOS=windows GOARCH=amd64 $(GO) vet $(PKGS)

# systemd-check: the units in contrib/systemd pass systemd's own checks and
# the service's exposure stays at most 2.0 (systemd-analyze's threshold is on
# its 0-100 scale: 20). verify insists that ExecStart's binary exists, so it
# checks a copy of the units that runs the binary just built instead of
# /usr/bin/udpstp; security scores the unit as shipped.
SYSTEMD_EXPOSURE_MAX ?= 20
systemd-check: build
	@command -v systemd-analyze >/dev/null 2>&1 || { \
		echo "systemd-check: systemd-analyze not found: apt-get install systemd (.ci/run does)"; exit 1; }
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	sed 's|^ExecStart=/usr/bin/udpstp|ExecStart=$(CURDIR)/$(BIN)|' contrib/systemd/udpstp.service >"$$d/udpstp.service"; \
	cp contrib/systemd/udpstp.socket "$$d/"; \
	systemd-analyze verify "$$d/udpstp.service" "$$d/udpstp.socket"; \
	echo "systemd-analyze verify: udpstp.service udpstp.socket OK"; \
	if ! systemd-analyze security --offline=yes --threshold=$(SYSTEMD_EXPOSURE_MAX) --no-pager \
		contrib/systemd/udpstp.service >"$$d/security.txt" 2>&1; then \
		cat "$$d/security.txt"; echo "systemd-check: exposure above $(SYSTEMD_EXPOSURE_MAX)/100"; exit 1; fi; \
	grep 'Overall exposure level' "$$d/security.txt"

# bench: the Go benchmarks of every package, then the whole-system ones in
# the network lab (internal/capacity: the server-capacity check and the
# single-connection throughput comparison), once each; they skip, saying
# why, where the lab cannot run. Set UDPST_BIN to compare with OB-UDPST;
# see internal/capacity's package doc for CAPACITY_* and THROUGHPUT_*.
bench: build
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) $$($(GO) list $(PKGS) | grep -v /internal/capacity)
	UDPSTP_BIN=$(CURDIR)/$(BIN) $(GO) test -run='^$$' -bench=. -benchtime=1x -timeout=0 ./internal/capacity

# demo: a real loopback test in each direction between our own server and
# client; the JSON results stay in demo-results/.
DEMO_PORT ?= 34601
demo: build
	@mkdir -p demo-results
	@$(BIN) server -p $(DEMO_PORT) 127.0.0.1 2>demo-results/server.log & echo $$! >demo-results/server.pid; \
	sleep 0.5; status=0; \
	for dir in downstream upstream; do \
		flag=-d; [ $$dir = upstream ] && flag=-u; \
		echo "== $$dir test (udpstp client $$flag -t 5 -p $(DEMO_PORT) 127.0.0.1)"; \
		$(BIN) client $$flag -t 5 -p $(DEMO_PORT) --output demo-results/$$dir.json 127.0.0.1 || status=$$?; \
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
