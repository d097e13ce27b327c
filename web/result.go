//go:build !small

package web

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/udpstp/udpstp/report/plot"
	"github.com/udpstp/udpstp/store"
)

// validID says whether id is a UUID as the store writes them (RFC 9562's
// text form); anything else is not looked up.
func validID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// get reads the result the path names, answering 404 or 500 itself.
func (s *server) get(w http.ResponseWriter, r *http.Request) *store.Result {
	id := r.PathValue("id")
	if !validID(id) {
		http.NotFound(w, r)
		return nil
	}
	res, err := s.cfg.Store.Get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, "no result with this ID in the store", http.StatusNotFound)
		return nil
	}
	if err != nil {
		s.fail(w, r, "reading a result", err)
		return nil
	}
	return res
}

// resultData is a result page's template data.
type resultData struct {
	Title  string
	R      *store.Result
	Plot   bool   // the document has something to draw
	NoPlot string // why not
}

func (s *server) result(w http.ResponseWriter, r *http.Request) {
	res := s.get(w, r)
	if res == nil {
		return
	}
	d := resultData{Title: s.cfg.Title, R: res, Plot: true}
	if _, err := plot.ReadDoc(bytes.NewReader(res.Doc)); err != nil {
		d.Plot, d.NoPlot = false, err.Error()
	}
	s.page(w, r, "result.html", d)
}

// plotCSP lets report/plot's SVG, shown as an image (which runs no
// script), use its own inline styles.
const plotCSP = "default-src 'none'; style-src 'unsafe-inline'; font-src data:; img-src data:"

// plot draws the result's document as `udpstp plot` does.
func (s *server) plot(w http.ResponseWriter, r *http.Request) {
	res := s.get(w, r)
	if res == nil {
		return
	}
	doc, err := plot.ReadDoc(bytes.NewReader(res.Doc))
	if err != nil {
		http.Error(w, "nothing to draw: "+err.Error(), http.StatusNotFound)
		return
	}
	var buf bytes.Buffer
	if err := plot.RenderDoc(&buf, doc, plot.SVG); err != nil {
		s.log.Error("web: drawing a result", "id", res.ID, "err", err)
		http.Error(w, "the plot failed: see the log of the agent or collector serving this page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Security-Policy", plotCSP)
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "private, max-age=86400") // a result does not change
	w.Write(buf.Bytes())
}

// json is the result's document, to download.
func (s *server) json(w http.ResponseWriter, r *http.Request) {
	res := s.get(w, r)
	if res == nil {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="udpstp-`+res.ID+`.json"`)
	w.Write(res.Doc)
}
