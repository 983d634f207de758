package main

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/kubernix/kubernix/pkg/boot"
)

// Layout of the timeline chart, in SVG user units (pixels).
const (
	ganttLabelWidth = 220 // component names, left of the plot
	ganttPlotWidth  = 660 // the seconds axis
	ganttRight      = 20  // margin right of the plot
	ganttRow        = 18  // one component kind
	ganttBar        = 12  // bar height within a row
	ganttTitle      = 28  // a panel's title line
	ganttAxis       = 24  // the axis and its labels below a panel
	ganttLegend     = 30  // the phase legend at the top
)

// ganttColors are the bars' fill colours by boot phase (boot.Phases
// order); a phase not listed is grey.
var ganttColors = map[string]string{
	boot.Infrastructure.String(): "#8c6bb1",
	boot.ControlPlane.String():   "#2b8cbe",
	boot.Controller.String():     "#41ae76",
	boot.NodeAgent.String():      "#fe9929",
	boot.Addons.String():         "#e34a33",
}

// TimelineSVG draws the boot timelines of sums as a Gantt chart: a panel
// per summary (size and mode, as the Markdown's timeline table has a
// column each), in it a row per component kind with a bar from its
// median start to its median ready (Summary.Phases: seconds from the
// first component start), coloured by phase, and a seconds axis the
// panels share so that they compare at a glance. The output depends only
// on sums; nil when no summary has a timeline.
func TimelineSVG(sums []Summary) []byte {
	kinds := summaryKinds(sums)
	var panels []Summary
	end := 0.0
	for _, s := range sums {
		if len(s.Phases) == 0 {
			continue
		}
		panels = append(panels, s)
		for _, k := range s.Phases {
			end = max(end, k.Ready.Median, k.Started.Median)
		}
	}
	if len(panels) == 0 {
		return nil
	}
	end = max(1, math.Ceil(end))
	step := 1.0
	for end/step > 20 {
		step *= 2
	}
	x := func(sec float64) float64 { return ganttLabelWidth + sec/end*ganttPlotWidth }
	panelHeight := ganttTitle + len(kinds)*ganttRow + ganttAxis
	width := ganttLabelWidth + ganttPlotWidth + ganttRight
	height := ganttLegend + len(panels)*panelHeight

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	ganttLegendRow(p)
	for i, s := range panels {
		top := ganttLegend + i*panelHeight
		p(`<text x="4" y="%d" font-weight="bold" font-size="13">%s</text>`+"\n", top+18,
			html.EscapeString(fmt.Sprintf("%d node(s), %s: boot timeline (s from the first component start; medians of %d run(s))",
				s.Nodes, s.modeLabel(), s.Runs)))
		rows := top + ganttTitle
		for j, k := range kinds {
			y := rows + j*ganttRow
			p(`<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", ganttLabelWidth-6, y+ganttBar, html.EscapeString(k[0]))
			for _, ks := range s.Phases {
				if ks.Kind != k[0] {
					continue
				}
				color, ok := ganttColors[ks.Phase]
				if !ok {
					color = "#999999"
				}
				w := max(1, x(ks.Ready.Median)-x(ks.Started.Median))
				p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
					x(ks.Started.Median), y+2, w, ganttBar, color,
					html.EscapeString(fmt.Sprintf("%s (%s): %.2f → %.2f s", ks.Kind, ks.Phase, ks.Started.Median, ks.Ready.Median)))
			}
		}
		ganttAxisRow(p, rows+len(kinds)*ganttRow, rows, end, step, x)
	}
	p("</svg>\n")
	return []byte(b.String())
}

// ganttLegendRow writes the phases' colours, in boot order.
func ganttLegendRow(p func(format string, args ...any)) {
	lx := 4
	for _, ph := range boot.Phases {
		p(`<rect x="%d" y="10" width="12" height="12" fill="%s"/>`+"\n", lx, ganttColors[ph.String()])
		p(`<text x="%d" y="20">%s</text>`+"\n", lx+16, html.EscapeString(ph.String()))
		lx += 16 + 8*len(ph.String()) + 16
	}
}

// ganttAxisRow writes a panel's seconds axis at y: a tick and a label
// every step seconds up to end, and a faint grid line up to top.
func ganttAxisRow(p func(format string, args ...any), y, top int, end, step float64, x func(float64) float64) {
	p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333333"/>`+"\n", x(0), y, x(end), y)
	for sec := 0.0; sec <= end+1e-9; sec += step {
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`+"\n", x(sec), top, x(sec), y)
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333333"/>`+"\n", x(sec), y, x(sec), y+4)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n", x(sec), y+16, sec)
	}
}
