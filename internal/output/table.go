package output

import (
	"io"
	"strings"
	"unicode/utf8"
)

// DefaultWidth is the terminal width the default table fits: cells of
// wrappable columns are wrapped at word boundaries until every line of the
// table is at most this many columns.
const DefaultWidth = 160

// minWrapWidth is the narrowest a wrappable column is made.
const minWrapWidth = 12

// Column is one column of a table a model gives the shared printer.
type Column struct {
	// Name is the header, in upper case as kubectl prints them.
	Name string
	// Wide columns appear only with -o wide.
	Wide bool
	// Wrap lets the printer wrap this column's cells over several lines
	// to fit the width; other columns keep their cells on one line.
	Wrap bool
	// Color, when set, names the colour of a cell (see Options.Paint).
	Color func(cell string) string
}

// Grid is a model's table: its columns and rows. The printer (Print) does widths,
// wrapping, -o wide and --no-headers; models only fill it.
type Grid struct {
	Columns []Column
	Rows    [][]string
	// Indent starts every line (a table nested in a report); the width
	// the table fits counts it.
	Indent string
}

// AddRow appends a row; a row with fewer cells than columns is padded
// with empty cells.
func (t *Grid) AddRow(cells ...string) {
	t.Rows = append(t.Rows, cells)
}

// Print writes t as an aligned table: the header (unless o.NoHeaders),
// then one line per row, or several where a wrappable cell is wrapped to
// fit o.Width (DefaultWidth when zero). Wide columns are printed only with
// o.Wide, and the width limit does not apply then (-o wide is for wide
// terminals and files, as in kubectl).
func Print(w io.Writer, t Grid, o Options) error {
	var cols []int
	for i, c := range t.Columns {
		if !c.Wide || o.Wide {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	cell := func(row []string, i int) string {
		if i < len(row) {
			return oneLine(row[i])
		}
		return ""
	}
	widths := make([]int, len(cols))
	for k, i := range cols {
		if !o.NoHeaders {
			widths[k] = textWidth(t.Columns[i].Name)
		}
		for _, r := range t.Rows {
			widths[k] = max(widths[k], textWidth(cell(r, i)))
		}
	}
	if !o.Wide {
		fit(widths, cols, t.Columns, o.width()-textWidth(t.Indent))
	}
	ew := &ErrWriter{W: w}
	line := func(parts []string, paint []func(string) string) {
		var b strings.Builder
		b.WriteString(t.Indent)
		for k, p := range parts {
			last := k == len(parts)-1
			pad := ""
			if !last {
				pad = strings.Repeat(" ", widths[k]-textWidth(p)+2)
			}
			if paint != nil && paint[k] != nil && p != "" {
				p = paint[k](p)
			}
			b.WriteString(p)
			b.WriteString(pad)
		}
		ew.Printf("%s\n", strings.TrimRight(b.String(), " "))
	}
	if !o.NoHeaders {
		hdr := make([]string, len(cols))
		for k, i := range cols {
			hdr[k] = t.Columns[i].Name
		}
		line(hdr, nil)
	}
	paint := make([]func(string) string, len(cols))
	for k, i := range cols {
		if c := t.Columns[i].Color; c != nil {
			paint[k] = func(s string) string { return o.Paint(c(strings.TrimSpace(s)), s) }
		}
	}
	for _, r := range t.Rows {
		wrapped := make([][]string, len(cols))
		height := 1
		for k, i := range cols {
			wrapped[k] = wrapText(cell(r, i), widths[k])
			height = max(height, len(wrapped[k]))
		}
		for l := 0; l < height; l++ {
			parts := make([]string, len(cols))
			for k := range cols {
				if l < len(wrapped[k]) {
					parts[k] = wrapped[k][l]
				}
			}
			line(parts, paint)
		}
	}
	return ew.Err
}

func (o Options) width() int {
	if o.Width > 0 {
		return o.Width
	}
	return DefaultWidth
}

// TableWidth is the width text under a table is wrapped to: o.Width, or
// DefaultWidth; with -o wide, no limit (a very large width).
func (o Options) TableWidth() int {
	if o.Wide {
		return 1 << 20
	}
	return o.width()
}

// fit narrows the wrappable columns until the table's lines fit limit
// (the columns plus two spaces between each): every wrappable column is
// capped at one width, the largest that fits, so that the widest columns
// share the cut and narrower ones keep their width. No column is made
// narrower than minWrapWidth (or its own width, when that is less).
func fit(widths, cols []int, defs []Column, limit int) {
	fixed := 2 * (len(widths) - 1)
	var wrap []int
	widest := 0
	for k, i := range cols {
		if defs[i].Wrap {
			wrap = append(wrap, k)
			widest = max(widest, widths[k])
		} else {
			fixed += widths[k]
		}
	}
	total := func(limitTo int) int {
		n := fixed
		for _, k := range wrap {
			n += min(widths[k], limitTo)
		}
		return n
	}
	if len(wrap) == 0 || total(widest) <= limit {
		return
	}
	lo, hi := minWrapWidth, widest // the answer is in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if total(mid) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for _, k := range wrap {
		widths[k] = min(widths[k], lo)
	}
}

// Wrap breaks s into lines of at most width columns, at spaces where it
// can and inside a word longer than a line where it must.
func Wrap(s string, width int) []string { return wrapText(oneLine(s), width) }

func wrapText(s string, width int) []string {
	if width <= 0 || textWidth(s) <= width {
		return []string{s}
	}
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		wr := []rune(word)
		for len(wr) > 0 {
			switch {
			case len(cur) == 0 && len(wr) <= width:
				cur, wr = append(cur, wr...), nil
			case len(cur) > 0 && len(cur)+1+len(wr) <= width:
				cur = append(append(cur, ' '), wr...)
				wr = nil
			case len(cur) > 0:
				lines, cur = append(lines, string(cur)), nil
			default: // a word longer than a line
				lines = append(lines, string(wr[:width]))
				wr = wr[width:]
			}
		}
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

// oneLine keeps a cell on one logical line: newlines and tabs become
// spaces.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\t\r") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\t", " ", "\r", " ").Replace(s)
}

func textWidth(s string) int { return utf8.RuneCountInString(s) }

// Dash renders an empty value as "-".
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Section writes a titled list under a table: the title on its own line,
// then each entry's first line indented two spaces and its following
// lines four, every line wrapped at spaces to fit o's width (with -o wide,
// not wrapped: a long command stays one line to copy).
func Section(w io.Writer, title string, entries [][]string, o Options) error {
	return section(w, title, entries, o, false)
}

// CodeSection is Section for entries whose first line is a label and whose
// other lines are commands: the label wraps like Section's, the commands
// are printed whole on their own lines, so that they work when pasted
// (a line broken inside a quoted string would change what it writes).
func CodeSection(w io.Writer, title string, entries [][]string, o Options) error {
	return section(w, title, entries, o, true)
}

func section(w io.Writer, title string, entries [][]string, o Options, code bool) error {
	if len(entries) == 0 {
		return nil
	}
	ew := &ErrWriter{W: w}
	ew.Printf("\n%s\n", title)
	for _, e := range entries {
		for n, text := range e {
			indent := "    "
			if n == 0 {
				indent = "  "
			}
			lines := []string{text}
			if !o.Wide && !(code && n > 0) {
				lines = Wrap(text, o.width()-len(indent))
			}
			for _, l := range lines {
				ew.Printf("%s%s\n", indent, l)
			}
		}
	}
	return ew.Err
}

// NewGrid returns a grid of plain columns with these headers; set a
// column's Wide, Wrap or Color after, where it needs one.
func NewGrid(headers ...string) Grid {
	g := Grid{Columns: make([]Column, len(headers))}
	for i, h := range headers {
		g.Columns[i] = Column{Name: h}
	}
	return g
}

// KeyValues returns a two-column grid for a describe-style form: one
// line per field, its name then its value (wrapped to fit the width).
func KeyValues() Grid {
	return Grid{Columns: []Column{{Name: "FIELD"}, {Name: "VALUE", Wrap: true}}}
}

// PrintKeyValues prints a KeyValues grid: it has no header line, so
// --no-headers changes nothing in it.
func PrintKeyValues(w io.Writer, g Grid, o Options) error {
	o.NoHeaders = true
	return Print(w, g, o)
}

// Para writes one line of text under a table, starting with indent and
// wrapped at spaces to fit o's width, its following lines indented two
// more spaces (with -o wide, one line).
func Para(w io.Writer, indent, text string, o Options) error {
	ew := &ErrWriter{W: w}
	for i, l := range Wrap(text, o.TableWidth()-textWidth(indent)-2) {
		if i > 0 {
			l = "  " + l
		}
		ew.Printf("%s%s\n", indent, l)
	}
	return ew.Err
}
