package svgplot

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func TestNiceAxis(t *testing.T) {
	for _, c := range []struct{ max, step, top float64 }{
		{1000, 200, 1000}, {266.3, 100, 300}, {4.87, 1, 5}, {0.7, 0.2, 0.8}, {0, 1, 1}, {12, 5, 15},
	} {
		if step, top := niceAxis(c.max); step != c.step || top != c.top {
			t.Errorf("niceAxis(%v) = %v, %v; want %v, %v", c.max, step, top, c.step, c.top)
		}
	}
}

// elements parses svg as XML and counts its elements by name.
func elements(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	out := map[string]int{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not well-formed SVG: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			out[se.Name.Local]++
		}
	}
}

func TestLineChart(t *testing.T) {
	svg := LineChart{Title: `a <b> & "c"`, XLabel: "s", YLabel: "n", Series: []Series{
		{Name: "measured", Points: []Point{{0, 0}, {1, 5}, {2, 9}}, Markers: true},
		{Name: "bound", Points: []Point{{0, 0}, {2, 10}}, Dashed: true},
	}}.SVG()
	el := elements(t, svg)
	if el["polyline"] != 2 || el["circle"] != 3 {
		t.Errorf("elements %v, want 2 polylines and 3 markers", el)
	}
	if !strings.Contains(string(svg), "a &lt;b&gt; &amp; &#34;c&#34;") {
		t.Errorf("title not escaped")
	}
	if !strings.Contains(string(svg), `stroke-dasharray`) {
		t.Errorf("bound not dashed")
	}
}

func TestBarChartFarMarkIsText(t *testing.T) {
	svg := string(BarChart{Title: "calls", Bars: []Bar{{Label: "A", Value: 4, Mark: 5}, {Label: "B", Value: 2, Mark: 1000}}}.SVG())
	el := elements(t, []byte(svg))
	if el["rect"] != 1+2+1 { // background, two bars, legend swatch
		t.Errorf("rects %d", el["rect"])
	}
	if !strings.Contains(svg, "limit 1000 →") {
		t.Errorf("the far limit is not written")
	}
	// The axis ends at the near mark, not at 1000.
	if strings.Contains(svg, ">1000<") || !strings.Contains(svg, ">5<") {
		t.Errorf("axis not scaled to the bars and the near mark")
	}
}
