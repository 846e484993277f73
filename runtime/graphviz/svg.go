package graphviz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// ErrNoGraphviz is wrapped by the error of SVG and RenderSVG when
// graphviz's dot command is not in PATH.
var ErrNoGraphviz = errors.New("graphviz's dot command was not found in PATH: install graphviz " +
	"(apt-get install graphviz, dnf install graphviz, brew install graphviz) to render SVG, " +
	"or render the DOT output elsewhere")

// dotCommand is the graphviz program that SVG runs.
const dotCommand = "dot"

// SVG renders the snapshot as SVG with graphviz's dot command. The
// command ends with ctx.
func SVG(ctx context.Context, snap *scheduler.GraphSnapshot, opts Options) ([]byte, error) {
	src, err := DOT(snap, opts)
	if err != nil {
		return nil, err
	}
	return RenderSVG(ctx, src)
}

// RenderSVG runs graphviz's dot command on DOT text and returns the SVG it
// writes. Its error wraps ErrNoGraphviz when dot is not installed, and
// quotes dot's own messages when dot fails.
func RenderSVG(ctx context.Context, dot []byte) ([]byte, error) {
	path, err := exec.LookPath(dotCommand)
	if err != nil {
		return nil, fmt.Errorf("graphviz: %w (%v)", ErrNoGraphviz, err)
	}
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = bytes.NewReader(dot)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// dot writes nothing in the background: once ctx ends and it is
	// killed, there is no reason to wait long for its pipes.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("graphviz: dot -Tsvg: %w", ctxErr)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return nil, fmt.Errorf("graphviz: dot -Tsvg: %w", err)
		}
		return nil, fmt.Errorf("graphviz: dot -Tsvg: %w: %s", err, msg)
	}
	return stdout.Bytes(), nil
}
