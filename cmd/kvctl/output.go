package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"gopkg.in/yaml.v3"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// jsonText returns m as indented JSON, with a final newline.
func (c *cli) jsonText(m proto.Message) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true, Resolver: c.types}.Marshal(m)
	if err != nil {
		return nil, err
	}
	// Indented by encoding/json: protojson's own spacing varies from
	// build to build on purpose, and scripts may diff it.
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// structured writes m as JSON or YAML.
func (c *cli) structured(m proto.Message) error {
	b, err := c.jsonText(m)
	if err != nil {
		return failed("%v", err)
	}
	if c.output == "json" {
		_, err = c.stdout.Write(b)
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return failed("%v", err)
	}
	y, err := yaml.Marshal(v)
	if err != nil {
		return failed("%v", err)
	}
	_, err = c.stdout.Write(y)
	return err
}

func (c *cli) paint(colour, s string) string {
	if !c.color || s == "" {
		return s
	}
	return "\x1b[" + colour + "m" + s + "\x1b[0m"
}

func (c *cli) stateColour(state string) string {
	switch state {
	case "CONFIGURED":
		return c.paint("32", state)
	case "PENDING":
		return c.paint("33", state)
	case "FAILED", "INVALID", "RETRYING", "UNIMPLEMENTED":
		return c.paint("31", state)
	}
	return state
}

// newTable aligns columns separated by tabs (an empty last column leaves
// no trailing spaces).
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(&trimWriter{w: w}, 0, 4, 2, ' ', 0)
}

// trimWriter drops the spaces that end lines.
type trimWriter struct {
	w      io.Writer
	spaces int
}

func (t *trimWriter) Write(p []byte) (int, error) {
	var out []byte
	for _, b := range p {
		switch b {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		default:
			for ; t.spaces > 0; t.spaces-- {
				out = append(out, ' ')
			}
		}
		out = append(out, b)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// valueText renders a value as one line of compact JSON.
func (c *cli) valueText(a *anypb.Any) string {
	if a == nil {
		return ""
	}
	m, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{Resolver: c.types})
	if err != nil {
		return "(" + a.GetTypeUrl() + ")"
	}
	b, err := protojson.MarshalOptions{Resolver: c.types}.Marshal(m)
	if err != nil {
		return "(" + a.GetTypeUrl() + ")"
	}
	var v any
	if json.Unmarshal(b, &v) == nil {
		if b2, err := json.Marshal(v); err == nil {
			return string(b2)
		}
	}
	return string(b)
}

// pendingDetail is the first unmet dependency of a why-pending chain.
func pendingDetail(lines []string) string {
	if len(lines) > 1 {
		return strings.TrimSpace(lines[1])
	}
	return "pending"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) opLine(op *apiv1.Op) string {
	s := fmt.Sprintf("%s %s %s", op.GetKind(), op.GetKey(), op.GetState())
	if len(op.GetFlags()) > 0 {
		s += " [" + strings.Join(op.GetFlags(), ",") + "]"
	}
	if op.GetError() != "" {
		s += ": " + c.paint("31", op.GetError())
	}
	return s
}

// marshalOutput renders v as JSON or YAML, by -o.
func marshalOutput(format string, v any) ([]byte, error) {
	if format == "yaml" {
		return yaml.Marshal(v)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
