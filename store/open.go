package store

import (
	"context"
	"fmt"
	"strings"
)

// An engine opens a store from the part of the --store argument after its
// scheme ("sqlite:PATH": PATH; "postgres://...": the whole URL). Each
// engine's file registers itself, so a build without one (-tags small)
// says so instead of failing to link.
type engine func(ctx context.Context, arg string, o openOptions) (Store, error)

// openOptions are how a store is opened.
type openOptions struct {
	// reader: read only, without migrating (docs/store.md, "Readers").
	reader bool
}

var engines = map[string]engine{}

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

func open(ctx context.Context, spec string, o openOptions) (Store, error) {
	scheme, arg, ok := strings.Cut(spec, ":")
	if !ok || arg == "" {
		return nil, fmt.Errorf("store %q: want sqlite:PATH or postgres://HOST/DB", spec)
	}
	switch scheme {
	case "postgresql", "postgres":
		scheme, arg = "postgres", spec
	}
	open, ok := engines[scheme]
	if !ok {
		return nil, fmt.Errorf("store %q: no %s engine in this build (want sqlite:PATH or postgres://HOST/DB)", spec, scheme)
	}
	s, err := open(ctx, arg, o)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", redact(spec), err)
	}
	return s, nil
}

// redact hides a password in a URL for messages.
func redact(spec string) string {
	at := strings.LastIndex(spec, "@")
	pre, _, found := strings.Cut(spec, "://")
	if at < 0 || !found {
		return spec
	}
	auth := spec[len(pre)+3 : at]
	if user, _, ok := strings.Cut(auth, ":"); ok {
		return pre + "://" + user + ":xxxxx" + spec[at:]
	}
	return spec
}
