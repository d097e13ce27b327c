# udpstp: build, test, benchmark and demo targets. `make test` is what CI runs.

GO        ?= go
BIN       := bin/udpstp
PKGS      := ./...
FUZZTIME  ?= 3s
BENCHTIME ?= 1s

.PHONY: all build test vet fmtcheck unit fuzz crossbuild bench demo clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/udpstp

# test: everything CI checks, in order of how fast it fails.
test: fmtcheck vet unit fuzz crossbuild

fmtcheck:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

# fuzz: every fuzz target runs briefly beyond its committed seed corpus.
# -fuzz must match exactly one target in one package, hence the loop.
fuzz:
	@set -e; for pkg in ./dataphase ./control; do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg >/dev/null; \
		done; \
	done

# crossbuild: the client must build off Linux (one Engine Thread per Test
# Connection there).
crossbuild:
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/udpstp
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null ./cmd/udpstp

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) $(PKGS)

demo: build
	@echo "make demo: the loopback test needs 'udpstp server' and 'udpstp client', which are not built yet." >&2
	@echo "Until then:  $(BIN) rates   prints the sending rate table." >&2
	@exit 1

clean:
	rm -rf bin demo-results
