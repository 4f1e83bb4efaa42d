package objects

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// MaxLineBytes bounds one line of YAML input: the API server refuses a
// request body over 3 MiB, so no object it stores has a longer line
// (a kubectl export has one object per list item, and a one-line JSON
// export is decoded as JSON, without this bound).
const MaxLineBytes = 8 << 20

// sniff refuses, before any conversion, input that cannot be a stream of
// Kubernetes objects: binary data (a NUL byte, invalid UTF-8), a YAML line
// longer than MaxLineBytes, and a YAML document whose first content line
// does not start a mapping (a bare scalar, a list, a line of junk). It
// reads each byte at most a few times and allocates nothing, so a
// 256 MiB file is judged in a fraction of a second.
func sniff(file string, data []byte, json bool) error {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return &Error{File: file, Line: 1 + bytes.Count(data[:i], []byte("\n")), Item: -1,
			Reason: fmt.Sprintf("binary data (a NUL byte at offset %d): want YAML or JSON Kubernetes objects", i)}
	}
	if !utf8.Valid(data) {
		return &Error{File: file, Item: -1, Reason: "not UTF-8 text: want YAML or JSON Kubernetes objects"}
	}
	if json {
		return nil
	}
	doc, expect := 0, true // expect: the next content line is a document's first
	// A block scalar ("key: |", "- >-") open since line blockLine: its
	// lines are those indented more than blockIndent (and blank ones).
	blockLine, blockIndent, blockBytes := 0, 0, 0
	var run scalarRun
	for off, line := 0, 1; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		l := data[off:next]
		off = next
		if len(l) > MaxLineBytes {
			return &Error{File: file, Line: line, Item: -1,
				Reason: fmt.Sprintf("line of %d bytes, more than %d: no Kubernetes object has one (the API server refuses objects over 3 MiB)", len(l), MaxLineBytes)}
		}
		if blockLine > 0 {
			ind := 0
			for ind < len(l) && l[ind] == ' ' {
				ind++
			}
			if ind > blockIndent || len(bytes.TrimLeft(l[ind:], " \t\r\n")) == 0 {
				if blockBytes += len(l); blockBytes > MaxLineBytes {
					return &Error{File: file, Line: blockLine, Item: -1,
						Reason: fmt.Sprintf("block scalar of more than %d bytes: no Kubernetes object has one (the API server refuses objects over 3 MiB)", MaxLineBytes)}
				}
				continue
			}
			blockLine = 0
		}
		t := bytes.TrimRight(l, " \t\r\n")
		isDoc := bytes.HasPrefix(t, []byte("---")) && (len(t) == 3 || t[3] == ' ' || t[3] == '\t' || t[3] == '#')
		switch {
		case isDoc:
			run.end()
		case run.quote != 0:
			if err := run.quoted(file, l, t); err != nil {
				return err
			}
			continue
		default:
			if err := run.next(file, l, t, line); err != nil {
				return err
			}
		}
		if ind, ok := blockStart(t); ok {
			blockLine, blockIndent, blockBytes = line, ind, 0
			run.end()
		}
		if isDoc {
			expect = true
			rest := bytes.TrimLeft(t[3:], " \t")
			if len(rest) == 0 || rest[0] == '#' {
				continue
			}
			t = rest
		}
		if !expect {
			continue
		}
		c := bytes.TrimLeft(t, " \t")
		if len(c) == 0 || c[0] == '#' || c[0] == '%' && len(c) == len(t) {
			continue
		}
		expect = false
		doc++
		if !startsMapping(c) {
			show := c
			if len(show) > 40 {
				show = append(show[:40:40], "..."...)
			}
			return &Error{File: file, Line: line, Doc: doc, Item: -1,
				Reason: fmt.Sprintf("%q does not start a mapping: not an object (want a Kubernetes object with apiVersion and kind)", show)}
		}
	}
	return nil
}

// scalarRun is a flow scalar (plain or quoted) that goes on over lines,
// with no indicator: open since line line (0: none), quoted with quote
// (0: plain), of bytes bytes so far.
type scalarRun struct {
	line, bytes int
	quote       byte
}

func (r *scalarRun) end() { r.line, r.quote = 0, 0 }

func (r *scalarRun) tooBig(file, what string) error {
	return &Error{File: file, Line: r.line, Item: -1,
		Reason: fmt.Sprintf("%s scalar of more than %d bytes over several lines: no Kubernetes object has one (the API server refuses objects over 3 MiB)", what, MaxLineBytes)}
}

// quoted counts line l (t: right-trimmed) inside a quoted scalar: every
// line counts up to the closing quote.
func (r *scalarRun) quoted(file string, l, t []byte) error {
	if r.bytes += len(l); r.bytes > MaxLineBytes {
		return r.tooBig(file, "quoted")
	}
	if closesQuote(t, r.quote) {
		r.end()
	}
	return nil
}

// next judges line l (t: right-trimmed; n: its number) outside a quoted
// scalar: a line that is neither an item nor a key goes on with the
// scalar above (or starts one under an empty "key:"); a structural line
// ends it, and starts one when its value is a scalar.
func (r *scalarRun) next(file string, l, t []byte, n int) error {
	c := bytes.TrimLeft(t, " \t")
	if len(c) == 0 {
		if r.line > 0 {
			r.bytes += len(l)
		}
		return nil
	}
	val, structural := flowValue(c)
	if !structural {
		if c[0] == '#' {
			r.line = 0
			return nil
		}
		if r.line == 0 {
			r.line, r.bytes = n, 0
		}
		if r.bytes += len(l); r.bytes > MaxLineBytes {
			return r.tooBig(file, "plain")
		}
		return nil
	}
	r.line = 0
	if len(val) > 0 && val[0] != '#' && val[0] != '|' && val[0] != '>' && val[0] != '{' && val[0] != '[' {
		r.line, r.bytes = n, len(l)
		if (val[0] == '"' || val[0] == '\'') && !closesQuote(val[1:], val[0]) {
			r.quote = val[0]
		}
	}
	return nil
}

// blockStart reports whether line t (right-trimmed) ends with a block
// scalar indicator ("key: |", "- >-", "key: |2 # c"), and the indentation
// its content must exceed: that of the key, or of the "-" before the
// indicator. A false start costs nothing: only a block of more than
// MaxLineBytes is refused, and no object has one.
func blockStart(t []byte) (int, bool) {
	if i := bytes.Index(t, []byte(" #")); i >= 0 {
		t = bytes.TrimRight(t[:i], " \t")
	}
	j := len(t)
	for j > 0 && (t[j-1] == '-' || t[j-1] == '+' || t[j-1] >= '0' && t[j-1] <= '9') {
		j--
	}
	if j == 0 || t[j-1] != '|' && t[j-1] != '>' {
		return 0, false
	}
	pre := t[:j-1]
	if len(pre) > 0 && pre[len(pre)-1] != ' ' && pre[len(pre)-1] != '\t' {
		return 0, false // "a|", "x>": part of a plain scalar
	}
	pre = bytes.TrimRight(pre, " \t")
	ind := 0
	for ind < len(pre) && pre[ind] == ' ' {
		ind++
	}
	if ind == len(pre) {
		return ind, true // "|" alone on its line
	}
	switch pre[len(pre)-1] {
	case ':':
		// The key's column: after any "- " sequence indicators.
		for ind+1 < len(pre) && pre[ind] == '-' && (pre[ind+1] == ' ' || pre[ind+1] == '\t') {
			ind++
			for ind < len(pre) && (pre[ind] == ' ' || pre[ind] == '\t') {
				ind++
			}
		}
		return ind, true
	case '-':
		return len(pre) - 1, true // "- |": the dash's column
	}
	return 0, false
}

// flowValue splits a content line (left-trimmed, no line end) into its
// structure ("- " items, a "key:") and the value after it: structural is
// false for a line that is neither an item nor a key (the rest of a
// scalar that goes on over lines, or a comment).
func flowValue(c []byte) (val []byte, structural bool) {
	for len(c) > 0 && c[0] == '-' && (len(c) == 1 || c[1] == ' ' || c[1] == '\t') {
		structural = true
		c = bytes.TrimLeft(c[1:], " \t")
	}
	if len(c) == 0 {
		return nil, structural
	}
	if k := keyEnd(c); k >= 0 {
		return bytes.TrimLeft(c[k+1:], " \t"), true
	}
	if c[0] == '{' || c[0] == '[' || c[0] == '?' {
		return nil, true
	}
	if structural {
		return c, true
	}
	return nil, false
}

// keyEnd is the index of the ':' that ends c's mapping key, -1 when c does
// not start with one (a plain or quoted key, as startsMapping judges).
func keyEnd(c []byte) int {
	switch c[0] {
	case '"', '\'':
		return quotedKeyEnd(c)
	case '#', '-', '[', '{', '|', '>', '*', '&', '!', '@', '`', '%':
		return -1
	}
	return plainKeyEnd(c)
}

// quotedKeyEnd is keyEnd of a line that starts with a quote: the ':' after
// the closing quote (escapes and doubled single quotes skipped), or -1.
func quotedKeyEnd(c []byte) int {
	q := c[0]
	for i := 1; i < len(c); i++ {
		if c[i] == '\\' && q == '"' {
			i++
			continue
		}
		if c[i] == q {
			if q == '\'' && i+1 < len(c) && c[i+1] == '\'' {
				i++
				continue
			}
			r := bytes.TrimLeft(c[i+1:], " \t")
			if len(r) > 0 && r[0] == ':' {
				return len(c) - len(r)
			}
			return -1
		}
	}
	return -1
}

// plainKeyEnd is keyEnd of a plain key: the first ':' followed by a blank
// or the line's end, before any comment; -1 without one.
func plainKeyEnd(c []byte) int {
	for i := 0; i < len(c); i++ {
		if c[i] == ':' && (i+1 == len(c) || c[i+1] == ' ' || c[i+1] == '\t') {
			return i
		}
		if c[i] == '#' && i > 0 && (c[i-1] == ' ' || c[i-1] == '\t') {
			return -1
		}
	}
	return -1
}

// closesQuote reports whether t (the part of a quoted scalar after its
// opening quote q, or a line inside it) holds the closing quote.
func closesQuote(t []byte, q byte) bool {
	for i := 0; i < len(t); i++ {
		switch {
		case q == '"' && t[i] == '\\':
			i++
		case t[i] == q:
			if q == '\'' && i+1 < len(t) && t[i+1] == '\'' {
				i++
				continue
			}
			return true
		}
	}
	return false
}

// startsMapping reports whether a document's first content line starts a
// YAML mapping: a flow mapping, an explicit key, a tag or anchor (judged by
// the parser), or "key:" with a plain or quoted key.
func startsMapping(c []byte) bool {
	switch c[0] {
	case '{', '?', '!', '&':
		return true
	case '-', '[', '|', '>', '*', '@', '`':
		if c[0] == '-' && len(c) > 1 && c[1] != ' ' && c[1] != '\t' {
			break // "-x: 1" is a plain key
		}
		return false
	case '"', '\'':
		return quotedKeyEnd(c) >= 0
	}
	return plainKeyEnd(c) >= 0
}

// sniffHead is sniff on the start of a file: only its complete lines (and
// whole UTF-8 sequences) are judged, and a start without a line end longer
// than MaxLineBytes is an over-long line.
func sniffHead(file string, head []byte) error {
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	isJSON := len(trimmed) > 0 && trimmed[0] == '{'
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return sniff(file, head[:i+1], true)
	}
	end := bytes.LastIndexByte(head, '\n')
	if !isJSON && end >= 0 && len(head)-end-1 > MaxLineBytes {
		return &Error{File: file, Line: 2 + bytes.Count(head[:end], []byte("\n")), Item: -1,
			Reason: fmt.Sprintf("line of more than %d bytes: no Kubernetes object has one (the API server refuses objects over 3 MiB)", MaxLineBytes)}
	}
	if end < 0 {
		if !isJSON && len(head) > MaxLineBytes {
			return &Error{File: file, Line: 1, Item: -1,
				Reason: fmt.Sprintf("line of more than %d bytes: no Kubernetes object has one (the API server refuses objects over 3 MiB)", MaxLineBytes)}
		}
		end = len(head)
		for k := 0; k < 3 && end > 0 && !utf8.RuneStart(head[end-1]); k++ {
			end--
		}
		if end > 0 && !utf8.RuneStart(head[end-1]) {
			end--
		} else if end > 0 && head[end-1] >= utf8.RuneSelf {
			end-- // a lead byte whose sequence may be cut
		}
		if i := bytes.IndexByte(head[:end], 0); i >= 0 || !utf8.Valid(head[:end]) {
			return sniff(file, head[:end], true)
		}
		return nil
	}
	return sniff(file, head[:end+1], isJSON)
}
