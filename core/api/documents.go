package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Splitting the input into documents: YAML separated by "---", a JSON
// stream, each parsed into a generic JSON value.

// document is one parsed input document: a generic JSON value (maps,
// slices, strings, json.Number, bools, nil).
type document struct {
	num   int
	value any
}

// splitDocuments turns the input into generic JSON values, one per
// non-empty document. Parse errors are reported per document.
func splitDocuments(data []byte) ([]document, FieldErrors) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if docs, ok := jsonStream(trimmed); ok {
			return docs, nil
		}
		// Not a JSON stream: it may still be flow-style YAML.
	}
	var docs []document
	var errs FieldErrors
	n := 0
	for _, chunk := range yamlChunks(data) {
		if len(bytes.TrimSpace(chunk.text)) == 0 {
			continue
		}
		if t := bytes.TrimSpace(chunk.text); t[0] == '{' || t[0] == '[' {
			vals, trailing, ok := jsonValues(chunk.text)
			if ok && trailing < 0 {
				for _, v := range vals {
					if v != nil {
						n++
						docs = append(docs, document{num: n, value: v})
					}
				}
				continue
			}
			if ok {
				// A whole JSON document followed by something that is not
				// one: YAML would silently drop the rest, so refuse it.
				n++
				line, col := lineCol(chunk.text, trailing)
				errs = append(errs, FieldError{Doc: n, Rule: fmt.Sprintf(
					"invalid JSON: unexpected %s after the JSON document, at line %d, column %d",
					snippet(chunk.text[trailing:]), chunk.line+line-1, col)})
				continue
			}
			// The first value is not JSON: it may be flow-style YAML.
		}
		j, err := yaml.YAMLToJSONStrict(chunk.text)
		if err != nil {
			n++
			errs = append(errs, FieldError{Doc: n, Rule: fmt.Sprintf("invalid YAML (document starts at line %d): %v", chunk.line, err)})
			continue
		}
		v, err := decodeJSONValue(j)
		if err != nil { // cannot happen for YAMLToJSON output; kept for safety
			n++
			errs = append(errs, FieldError{Doc: n, Rule: "invalid document: " + err.Error()})
			continue
		}
		if v == nil {
			continue // empty or comment-only document
		}
		n++
		docs = append(docs, document{num: n, value: v})
	}
	return docs, errs
}

// jsonStream decodes a sequence of JSON values; ok is false when the input
// is not entirely JSON.
func jsonStream(data []byte) ([]document, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var docs []document
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs, true
		}
		if err != nil {
			return nil, false
		}
		if v == nil {
			continue
		}
		docs = append(docs, document{num: len(docs) + 1, value: v})
	}
}

// jsonValues decodes the JSON values in data. ok is false when the first
// value does not decode (the text is not JSON). When a later value does
// not decode, trailing is the byte offset where it starts; otherwise -1.
func jsonValues(data []byte) (vals []any, trailing int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		end := int(dec.InputOffset())
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return vals, -1, true
		}
		if err != nil {
			if len(vals) == 0 {
				return nil, -1, false
			}
			for end < len(data) && (data[end] == ' ' || data[end] == '\t' || data[end] == '\r' || data[end] == '\n') {
				end++
			}
			return vals, end, true
		}
		vals = append(vals, v)
	}
}

// lineCol turns a byte offset in data into a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// snippet quotes the start of b (at most 20 bytes) for an error message.
func snippet(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 20 {
		return fmt.Sprintf("%q…", b[:20])
	}
	return fmt.Sprintf("%q", b)
}

func decodeJSONValue(j []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

type yamlChunk struct {
	text []byte
	line int // 1-based line of the chunk's first line
}

// yamlChunks splits YAML text at document separators: a line that is "---",
// optionally followed by spaces and a comment (as Kubernetes' YAML reader).
func yamlChunks(data []byte) []yamlChunk {
	var chunks []yamlChunk
	var cur bytes.Buffer
	start, line := 1, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxManifestSize+1)
	for sc.Scan() {
		line++
		l := sc.Bytes()
		if isSeparator(l) {
			chunks = append(chunks, yamlChunk{text: append([]byte(nil), cur.Bytes()...), line: start})
			cur.Reset()
			start = line + 1
			continue
		}
		cur.Write(l)
		cur.WriteByte('\n')
	}
	chunks = append(chunks, yamlChunk{text: append([]byte(nil), cur.Bytes()...), line: start})
	return chunks
}

func isSeparator(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(l[3:])
	if len(rest) > 0 && rest[0] != '#' {
		return false
	}
	// "---" must be followed by whitespace or nothing ("----" is not a separator).
	return len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r'
}
