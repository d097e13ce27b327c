//go:build !small

package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
)

// csrf guards the page's one POST (/run) against other sites. First
// net/http's CrossOriginProtection: a browser's Sec-Fetch-Site other than
// same-origin (or none), else an Origin whose host is not the request's
// Host, is refused. The form's token stays behind it: 256 random bits made
// when the process starts (a restart makes a new one; a page loaded before
// it then gets 403 and a reload fixes it), which no other site can read.
// It is what stops a forged POST from a client that sends neither header
// (an older browser, a plugin), which CrossOriginProtection lets through
// as a non-browser request.
type csrf struct {
	token  string
	origin *http.CrossOriginProtection
}

func newCSRF() *csrf {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("web: no randomness for the CSRF token: " + err.Error()) // crypto/rand does not fail on Linux
	}
	return &csrf{token: hex.EncodeToString(b[:]), origin: http.NewCrossOriginProtection()}
}

// maxForm bounds a POST's body: a test's name and the token.
const maxForm = 4 << 10

// check says why r is not a request of this page's own form, or nil.
func (c *csrf) check(w http.ResponseWriter, r *http.Request) error {
	if err := c.origin.Check(r); err != nil {
		return fmt.Errorf("the request came from another site or origin (%w)", err)
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return errors.New("the form cannot be read")
	}
	got := r.PostForm.Get("csrf")
	if subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) != 1 {
		return errors.New("the form's token is missing or stale: reload the page")
	}
	return nil
}
