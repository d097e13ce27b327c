//go:build !small

package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
)

// csrf guards the page's one POST (/run) against other sites: a form from
// elsewhere cannot read the token, which is 256 random bits made when the
// process starts (a restart makes a new one; a page loaded before it then
// gets 403 and a reload fixes it), and a browser's own Origin and
// Sec-Fetch-Site headers must say the request came from this page.
type csrf struct{ token string }

func newCSRF() *csrf {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("web: no randomness for the CSRF token: " + err.Error()) // crypto/rand does not fail on Linux
	}
	return &csrf{token: hex.EncodeToString(b[:])}
}

// maxForm bounds a POST's body: a test's name and the token.
const maxForm = 4 << 10

// check says why r is not a request of this page's own form, or nil.
func (c *csrf) check(w http.ResponseWriter, r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return errors.New("the request came from another site (Sec-Fetch-Site: " + site + ")")
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if o == "null" || err != nil || u.Host != r.Host {
			return errors.New("the request came from another origin")
		}
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
