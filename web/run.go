//go:build !small

package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"
)

// run starts a test now: the form's POST of "run now". A browser without
// the page's script gets a redirect back to the overview; the script asks
// for text (Accept: text/plain) and shows it.
func (s *server) run(w http.ResponseWriter, r *http.Request) {
	if err := s.csrf.check(w, r); err != nil {
		http.Error(w, "refused: "+err.Error(), http.StatusForbidden)
		return
	}
	a := s.cfg.Agent
	if a == nil {
		http.Error(w, "this page runs no tests (it has no agent)", http.StatusNotFound)
		return
	}
	name := r.PostForm.Get("test")
	if !slices.Contains(a.Tests(), name) {
		http.Error(w, "no test of this name is configured", http.StatusNotFound)
		return
	}
	if err := a.RunNow(name); err != nil {
		if errors.Is(err, ErrBusy) {
			msg := "a test is running"
			if running := a.Running(); running != "" {
				msg = "the test " + running + " is running"
			}
			http.Error(w, msg+": try again when it has ended", http.StatusConflict)
			return
		}
		s.log.Error("web: run now", "test", name, "err", err)
		http.Error(w, "the test did not start: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if strings.HasPrefix(r.Header.Get("Accept"), "text/plain") {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte("started " + name))
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
