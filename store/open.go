package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// An engine opens a store from the part of the --store argument after its
// scheme ("sqlite:PATH": PATH; "postgres://...": the whole URL). Open
// picks it by the scheme (engineFor); a build without one (-tags small:
// nosqlite.go, nopostgres.go) says so instead of failing to link.
type engine func(ctx context.Context, arg string, o openOptions) (Store, error)

// openOptions are how a store is opened.
type openOptions struct {
	// reader: read only, without migrating (docs/store.md, "Readers").
	reader bool
}

// engineFor is the engine of a scheme, nil when this build has none.
func engineFor(scheme string) engine {
	switch scheme {
	case "sqlite":
		return sqliteEngine()
	case "postgres":
		return postgresEngine()
	}
	return nil
}

// Open opens the store an argument of --store names: "sqlite:PATH" or
// "postgres://user@host/db" ("postgresql://" too), for reading and
// writing, creating it or bringing its schema up to date.
func Open(ctx context.Context, spec string) (Store, error) {
	return open(ctx, spec, openOptions{})
}

// OpenReader opens an existing store for reading only: it writes nothing
// (no migration, no journal mode), needs no write permission on an SQLite
// file, and refuses a store whose schema is not this binary's
// (docs/store.md, "Readers").
func OpenReader(ctx context.Context, spec string) (Store, error) {
	return open(ctx, spec, openOptions{reader: true})
}

// HasEngine says whether this build has the engine name ("sqlite",
// "postgres"): a spool needs SQLite, which the 32-bit MIPS builds lack.
func HasEngine(name string) bool { return engineFor(name) != nil }

func open(ctx context.Context, spec string, o openOptions) (Store, error) {
	scheme, arg, ok := strings.Cut(spec, ":")
	if !ok || arg == "" {
		return nil, fmt.Errorf("store %q: want sqlite:PATH or postgres://HOST/DB", spec)
	}
	switch scheme {
	case "postgresql", "postgres":
		scheme, arg = "postgres", spec
	}
	open := engineFor(scheme)
	if open == nil {
		return nil, fmt.Errorf("store %q: no %s engine in this build (want sqlite:PATH or postgres://HOST/DB)", spec, scheme)
	}
	s, err := open(ctx, arg, o)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", Redact(spec), err)
	}
	return s, nil
}

// Redact hides a password in a store's spec (the URL's user
// information, or a password= parameter) for messages and logs: the one
// function of the store, the agent, history and the collector
// (docs/store.md: the password never appears).
func Redact(spec string) string {
	if !strings.Contains(spec, "://") {
		return spec // sqlite:PATH: no password, and a path is not re-escaped
	}
	if u, err := url.Parse(spec); err == nil && u.Scheme != "" {
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	// Not a URL that parses: cut what lies between "scheme://user:" and
	// the last "@", whatever it holds.
	at := strings.LastIndex(spec, "@")
	pre, _, found := strings.Cut(spec, "://")
	if at < 0 || !found || at < len(pre)+3 {
		return spec
	}
	auth := spec[len(pre)+3 : at]
	if user, _, ok := strings.Cut(auth, ":"); ok {
		return pre + "://" + user + ":xxxxx" + spec[at:]
	}
	return spec
}

// Schemes are the prefixes of the --store specs Open takes.
func Schemes() []string { return []string{"sqlite:", "postgres://", "postgresql://"} }

// CheckScheme refuses a spec that starts with none of schemes (Schemes,
// and what a command adds: the agent's https:// collector), naming the
// scheme it has, and suggesting sqlite: for what looks like a path: a
// forgotten prefix must not be taken for a PostgreSQL URL.
func CheckScheme(spec string, schemes []string) error {
	for _, s := range schemes {
		if strings.HasPrefix(spec, s) && len(spec) > len(s) {
			return nil
		}
	}
	want := strings.Join(schemes, "..., ") + "..."
	scheme, _, ok := strings.Cut(spec, ":")
	switch {
	case spec == "":
		return fmt.Errorf("--store: empty (want %s)", want)
	case strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, ".") || !ok || strings.ContainsAny(scheme, "/\\."):
		return fmt.Errorf("--store %q: no scheme; for an SQLite file write sqlite:%s (want %s)", Redact(spec), spec, want)
	}
	// Not the spec itself: what follows an unknown scheme may hold a
	// password.
	return fmt.Errorf("--store: scheme %q is not one of %s", scheme+":", want)
}
