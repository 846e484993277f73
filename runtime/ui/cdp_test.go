package ui_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// livePage is a page kept open in headless Chromium, driven over the
// DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages
// ended by a NUL byte, the browser reading fd 3 and writing fd 4), so that
// a test changes the agent while the page is open and waits for the DOM to
// show it.
type livePage struct {
	t       *testing.T
	b       *browser
	cmd     *exec.Cmd
	in      io.WriteCloser
	session string

	mu      sync.Mutex
	next    int
	waiting map[int]chan cdpReply
	closed  chan struct{}
	stderr  bytes.Buffer
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// browserBound bounds one step of the browser: for a browser that hangs,
// not a speed target (a loaded 2-core machine is slow).
const browserBound = 2 * time.Minute

// open starts Chromium on url and returns the open page.
func (b *browser) open(url string) *livePage {
	b.t.Helper()
	toBrowser, fromTest, err := os.Pipe()
	if err != nil {
		b.t.Fatal(err)
	}
	toTest, fromBrowser, err := os.Pipe()
	if err != nil {
		b.t.Fatal(err)
	}
	p := &livePage{t: b.t, b: b, in: fromTest, waiting: map[int]chan cdpReply{}, closed: make(chan struct{})}
	p.cmd = exec.Command(b.path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--disable-quic",
		"--disable-component-update", "--disable-sync", "--user-data-dir="+b.profile,
		"--window-size=1280,900", "--hide-scrollbars", "--remote-debugging-pipe", "about:blank")
	p.cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser}
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = time.Second
	if err := p.cmd.Start(); err != nil {
		b.t.Fatalf("%s: %v", chromiumCommand, err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	go p.read(toTest)
	b.t.Cleanup(p.close)

	var target struct {
		TargetID string `json:"targetId"`
	}
	p.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	p.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	p.session = att.SessionID
	p.call(p.session, "Page.enable", nil, nil)
	p.call(p.session, "Page.navigate", map[string]any{"url": url}, nil)
	p.waitFor("the page loaded", `document.readyState === "complete"`)
	return p
}

// read dispatches the browser's answers to their calls (events are
// dropped).
func (p *livePage) read(r io.ReadCloser) {
	defer close(p.closed)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m struct {
			ID int `json:"id"`
			cdpReply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue
		}
		p.mu.Lock()
		ch := p.waiting[m.ID]
		delete(p.waiting, m.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one command and decodes its result into out.
func (p *livePage) call(session, method string, params any, out any) {
	p.t.Helper()
	if err := p.try(session, method, params, out); err != nil {
		p.t.Fatalf("%s: %v\n%s", method, err, p.stderr.String())
	}
}

func (p *livePage) try(session, method string, params any, out any) error {
	p.mu.Lock()
	p.next++
	id := p.next
	ch := make(chan cdpReply, 1)
	p.waiting[id] = ch
	p.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := p.in.Write(append(b, 0)); err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return errors.New(r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-p.closed:
		return errors.New("the browser is gone")
	case <-time.After(browserBound):
		return fmt.Errorf("no answer in %v", browserBound)
	}
}

// eval evaluates a JavaScript expression in the page and decodes its
// value into out.
func (p *livePage) eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := p.try(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%s: %s", expr, r.ExceptionDetails.Text)
	}
	return json.Unmarshal(r.Result.Value, out)
}

// waitFor waits until the expression is true in the page: it asks the
// page again as soon as it answered, for a generous bound, and fails the
// test with the page's DOM when the bound passes.
func (p *livePage) waitFor(what, expr string) time.Duration {
	p.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), browserBound)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var ok bool
		err := p.eval("!!("+expr+")", &ok)
		if err == nil && ok {
			return time.Since(start)
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("%s: not so after %v (%s: %v)\nthe page:\n%s", what, browserBound, expr, err, p.dom())
		case <-tick.C:
		}
	}
}

// dom is the page's DOM as the browser serialises it now.
func (p *livePage) dom() string {
	var s string
	if err := p.eval("document.documentElement.outerHTML", &s); err != nil {
		return "(no DOM: " + err.Error() + ")"
	}
	return s
}

// screenshot saves the page as it is now as name.png.
func (p *livePage) screenshot(name string) {
	p.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	p.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil || len(b) == 0 {
		p.t.Fatalf("screenshot %s: %v (%d bytes)", name, err, len(b))
	}
	if err := os.WriteFile(filepath.Join(p.b.shots, name+".png"), b, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// close ends the browser.
func (p *livePage) close() {
	_ = p.try("", "Browser.close", nil, nil)
	p.in.Close()
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(browserBound):
		_ = p.cmd.Process.Kill()
		<-done
	}
}
