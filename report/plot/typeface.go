package plot

import (
	"fmt"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// typeface measures and draws text in Liberation Sans, whose widths are
// Arial's and Helvetica's, so that an SVG shown with either of those
// keeps its layout (svgFontFallback). It is parsed for each figure, not at
// start-up: a process that draws nothing pays nothing for it.
type typeface struct {
	font  *opentype.Font
	faces map[faceKey]font.Face
}

type faceKey struct{ size, dpi float64 }

func newTypeface() (*typeface, error) {
	f, err := opentype.Parse(liberationsansregular.TTF)
	if err != nil {
		return nil, fmt.Errorf("plot: parsing the font: %w", err)
	}
	return &typeface{font: f, faces: make(map[faceKey]font.Face)}, nil
}

// face is the font at size pt drawn at dpi dots an inch (72: in pt).
func (tf *typeface) face(size, dpi float64) font.Face {
	k := faceKey{size, dpi}
	if f, ok := tf.faces[k]; ok {
		return f
	}
	// NewFace returns no error (x/image v0.30.0): it only scales.
	f, _ := opentype.NewFace(tf.font, &opentype.FaceOptions{Size: size, DPI: dpi, Hinting: font.HintingNone})
	tf.faces[k] = f
	return f
}

// width is how wide s is at size, in pt.
func (tf *typeface) width(s string, size float64) float64 {
	return fromFixed(font.MeasureString(tf.face(size, 72), s))
}

// extent is the font's ascent and descent at size, in pt.
func (tf *typeface) extent(size float64) (ascent, descent float64) {
	m := tf.face(size, 72).Metrics()
	return fromFixed(m.Ascent), fromFixed(m.Descent)
}

// lineHeight is the height of a line of text at size, in pt.
func (tf *typeface) lineHeight(size float64) float64 {
	a, d := tf.extent(size)
	return a + d
}

// baseline is where the baseline of s starts (along the text, then across
// it, from the point st aligns to at): -xalign of its width along, and
// from the aligned height down to the baseline across.
func (tf *typeface) baseline(s string, st textStyle) (along, across float64) {
	a, d := tf.extent(st.size)
	return -st.xalign * tf.width(s, st.size), a - st.yalign*(a+d)
}

func fromFixed(v fixed.Int26_6) float64 { return float64(v) / 64 }
