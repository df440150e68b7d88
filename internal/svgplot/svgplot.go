// Package svgplot draws small line and bar charts as standalone SVG, with
// no dependency beyond the standard library, so that `make bench` can write
// the charts the docs embed without any external tool.
package svgplot

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
)

// Palette are the series colours, in order (colour-blind-safe, Okabe-Ito).
var Palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// Point is one data point.
type Point struct{ X, Y float64 }

// Series is one line of a LineChart.
type Series struct {
	// Name is the legend entry.
	Name string
	// Points are drawn in order.
	Points []Point
	// Dashed draws a reference line (a bound) rather than a measurement.
	Dashed bool
	// Markers draws a dot on each point, for sparse series.
	Markers bool
}

// LineChart is an x/y chart of one or more series.
type LineChart struct {
	// Title is drawn above the plot.
	Title string
	// XLabel and YLabel name the axes, with their units.
	XLabel, YLabel string
	// Series are the lines.
	Series []Series
}

// geometry of every chart, in SVG user units.
const (
	width       = 760
	plotLeft    = 70
	plotRight   = 730
	plotTop     = 40
	plotBottomL = 330
	legendRowH  = 18
)

// SVG renders the chart.
func (c LineChart) SVG() []byte {
	var maxX, maxY float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			maxX, maxY = math.Max(maxX, p.X), math.Max(maxY, p.Y)
		}
	}
	xStep, xMax := niceAxis(maxX)
	yStep, yMax := niceAxis(maxY)
	px := func(x float64) float64 { return plotLeft + x/xMax*(plotRight-plotLeft) }
	py := func(y float64) float64 { return plotBottomL - y/yMax*(plotBottomL-plotTop) }

	var b bytes.Buffer
	legendTop := plotBottomL + 58
	header(&b, legendTop+legendRowH*len(c.Series)+4, c.Title)
	for y := 0.0; y <= yMax+yStep/2; y += yStep {
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e3e6ea"/>`+"\n", plotLeft, f(py(y)), plotRight, f(py(y)))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", plotLeft-6, f(py(y)), num(y))
	}
	for x := 0.0; x <= xMax+xStep/2; x += xStep {
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#e3e6ea"/>`+"\n", f(px(x)), plotTop, f(px(x)), plotBottomL)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f(px(x)), plotBottomL+16, num(x))
	}
	axes(&b, plotBottomL)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (plotLeft+plotRight)/2, plotBottomL+36, esc(c.XLabel))
	fmt.Fprintf(&b, `<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">%s</text>`+"\n", (plotTop+plotBottomL)/2, (plotTop+plotBottomL)/2, esc(c.YLabel))
	for i, s := range c.Series {
		col := Palette[i%len(Palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts bytes.Buffer
		for j, p := range s.Points {
			if j > 0 {
				pts.WriteByte(' ')
			}
			pts.WriteString(f(px(p.X)) + "," + f(py(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", col, dash, pts.String())
		if s.Markers {
			for _, p := range s.Points {
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", f(px(p.X)), f(py(p.Y)), col)
			}
		}
		ly := legendTop + i*legendRowH
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", plotLeft, ly, plotLeft+22, ly, col, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", plotLeft+28, ly, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// Bar is one row of a BarChart.
type Bar struct {
	// Label names the row.
	Label string
	// Value is the bar's length.
	Value float64
	// Mark, when positive, draws a tick at that value (a limit); a mark far
	// beyond every bar is written as text instead, so it does not squash
	// the bars.
	Mark float64
}

// BarChart is a horizontal bar chart, one row per Bar.
type BarChart struct {
	// Title is drawn above the plot.
	Title string
	// XLabel names the value axis, with its unit.
	XLabel string
	// ValueName and MarkName are the legend entries of the bars and marks.
	ValueName, MarkName string
	// Bars are the rows, top to bottom.
	Bars []Bar
}

// bar chart geometry: labels left of the bars.
const (
	barLeft  = 290
	barRight = 620
	rowH     = 22
	// markSpan is how far beyond the longest bar a mark is still drawn.
	markSpan = 3
)

// SVG renders the chart.
func (c BarChart) SVG() []byte {
	var maxV float64
	for _, r := range c.Bars {
		maxV = math.Max(maxV, r.Value)
	}
	limit := markSpan * maxV
	for _, r := range c.Bars {
		if r.Mark <= limit {
			maxV = math.Max(maxV, r.Mark)
		}
	}
	step, vMax := niceAxis(maxV)
	px := func(v float64) float64 { return barLeft + v/vMax*(barRight-barLeft) }
	bottom := plotTop + 10 + rowH*len(c.Bars)
	height := bottom + 62

	var b bytes.Buffer
	header(&b, height, c.Title)
	for v := 0.0; v <= vMax+step/2; v += step {
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#e3e6ea"/>`+"\n", f(px(v)), plotTop, f(px(v)), bottom)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f(px(v)), bottom+16, num(v))
	}
	for i, r := range c.Bars {
		y := plotTop + 10 + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", barLeft-8, y+rowH/2, esc(r.Label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%s" height="%d" fill="%s"/>`+"\n", barLeft, y+4, f(px(r.Value)-barLeft), rowH-8, Palette[0])
		fmt.Fprintf(&b, `<text x="%s" y="%d" dominant-baseline="middle" font-size="11">%s</text>`+"\n", f(px(r.Value)+4), y+rowH/2, num(r.Value))
		switch {
		case r.Mark > limit:
			fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle" font-size="11" fill="%s">limit %s →</text>`+"\n", barRight+52, y+rowH/2, Palette[1], num(r.Mark))
		case r.Mark > 0:
			fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", f(px(r.Mark)), y+1, f(px(r.Mark)), y+rowH-1, Palette[1])
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", barLeft, plotTop, barLeft, bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (barLeft+barRight)/2, bottom+34, esc(c.XLabel))
	ly := bottom + 52
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="18" height="10" fill="%s"/><text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n",
		barLeft, ly-5, Palette[0], barLeft+24, ly, esc(c.ValueName))
	if c.MarkName != "" {
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n",
			barLeft+230, ly-6, barLeft+230, ly+6, Palette[1], barLeft+238, ly, esc(c.MarkName))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func header(b *bytes.Buffer, height int, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12" fill="#222">`+"\n",
		width, height, width, height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", plotLeft, esc(title))
}

func axes(b *bytes.Buffer, bottom int) {
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", plotLeft, plotTop, plotLeft, bottom)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", plotLeft, bottom, plotRight, bottom)
}

// niceAxis picks a tick step of 1, 2 or 5 times a power of ten giving at
// most about six ticks, and the axis maximum: the first tick at or above max.
func niceAxis(max float64) (step, top float64) {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		return 1, 1
	}
	raw := max / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * pow; step >= raw {
			break
		}
	}
	return step, math.Ceil(max/step-1e-9) * step
}

// f formats a coordinate with one decimal, enough for the screen.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// num formats a tick or value label: integers plainly, else up to three
// significant digits.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func esc(s string) string { return html.EscapeString(s) }
