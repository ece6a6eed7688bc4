package testkit

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// ReportPage is what the tests read of a drill's HTML report (drill
// --report), parsed from its DOM: the machine-readable data attributes of
// its figures and the text of its tables, as a browser or an HTML5 parser
// sees them, to compare with the JSON report of the same run.
type ReportPage struct {
	// Bars are the timeline's rects (data-phase), in document order.
	Bars []ReportBar
	// Marks are the timeline's moments (data-mark: "lost",
	// "rto_data_restored", ...) in milliseconds from the drill's start.
	Marks map[string]int64
	// Figures are the RTO and RPO figures (data-figure): "" when not
	// reached, else the seconds as written (3 decimals).
	Figures map[string]string
	// Tables are the rows of each table's body by the table's id, each
	// row the text of its cells (th and td), trimmed.
	Tables map[string][][]string
	// Points are the throughput chart's samples (data-at-ms).
	Points []ReportPoint
	// Outcome is the page's data-outcome: passed, failed or interrupted.
	Outcome string
	// Scripts counts the script elements; External lists every src,
	// href or xlink:href attribute (a self-contained page has none).
	Scripts  int
	External []string
	// IDs are the ids of every element, to tell which sections exist.
	IDs map[string]bool
	// Text is the page's text, its elements' text joined by spaces.
	Text string
}

// ReportBar is one phase's rect on the timeline.
type ReportBar struct {
	Phase, Status       string
	StartMs, DurationMs int64
	X, W                float64 // in the SVG's user units
}

// ReportPoint is one sample of the throughput chart.
type ReportPoint struct {
	AtMs, Records, Bytes int64
}

// ParseReportPage parses dom, the HTML of a drill report (its file, or
// the DOM a browser dumped after load), failing the test when it does not
// parse or a data attribute is not a number.
func ParseReportPage(t testing.TB, dom string) *ReportPage {
	t.Helper()
	root, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatalf("the report does not parse as HTML: %v", err)
	}
	p := &ReportPage{Marks: map[string]int64{}, Figures: map[string]string{}, Tables: map[string][][]string{}, IDs: map[string]bool{}}
	num := func(n *html.Node, key string) int64 {
		v, err := strconv.ParseInt(attr(n, key), 10, 64)
		if err != nil {
			t.Fatalf("<%s %s=%q>: not an integer: %v", n.Data, key, attr(n, key), err)
		}
		return v
	}
	flt := func(n *html.Node, key string) float64 {
		v, err := strconv.ParseFloat(attr(n, key), 64)
		if err != nil {
			t.Fatalf("<%s %s=%q>: not a number: %v", n.Data, key, attr(n, key), err)
		}
		return v
	}
	var text []string
	var walk func(n *html.Node, table string)
	walk = func(n *html.Node, table string) {
		switch n.Type {
		case html.TextNode:
			if s := strings.TrimSpace(n.Data); s != "" && (n.Parent == nil || n.Parent.Data != "style") {
				text = append(text, s)
			}
		case html.ElementNode:
			if id := attr(n, "id"); id != "" {
				p.IDs[id] = true
			}
			for _, a := range n.Attr {
				if a.Key == "src" || a.Key == "href" || (a.Namespace == "xlink" && a.Key == "href") {
					p.External = append(p.External, n.Data+" "+a.Key+"="+a.Val)
				}
			}
			switch {
			case n.Data == "script":
				p.Scripts++
			case n.Data == "rect" && hasAttr(n, "data-phase"):
				p.Bars = append(p.Bars, ReportBar{Phase: attr(n, "data-phase"), Status: attr(n, "data-status"),
					StartMs: num(n, "data-start-ms"), DurationMs: num(n, "data-duration-ms"), X: flt(n, "x"), W: flt(n, "width")})
			case n.Data == "line" && hasAttr(n, "data-mark"):
				p.Marks[attr(n, "data-mark")] = num(n, "data-at-ms")
			case n.Data == "circle" && hasAttr(n, "data-at-ms"):
				p.Points = append(p.Points, ReportPoint{AtMs: num(n, "data-at-ms"), Records: num(n, "data-records"), Bytes: num(n, "data-bytes")})
			case hasAttr(n, "data-figure"):
				if attr(n, "data-reached") == "true" {
					p.Figures[attr(n, "data-figure")] = attr(n, "data-seconds")
				} else {
					p.Figures[attr(n, "data-figure")] = ""
				}
			case hasAttr(n, "data-outcome"):
				p.Outcome = attr(n, "data-outcome")
			case n.Data == "table":
				table = attr(n, "id")
			case n.Data == "tr" && table != "" && n.Parent != nil && n.Parent.Data == "tbody":
				var row []string
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
						row = append(row, strings.Join(strings.Fields(nodeText(c)), " "))
					}
				}
				p.Tables[table] = append(p.Tables[table], row)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, table)
		}
	}
	walk(root, "")
	p.Text = strings.Join(text, " ")
	return p
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}
