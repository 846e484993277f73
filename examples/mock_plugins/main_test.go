package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite testdata/<scenario>.golden with the output of each scenario")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestScenarios plays each scenario and compares its output with its
// golden file. Each scenario also checks the states it expects: play
// fails when one is not reached, golden file or not.
func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := play(&out, sc.name); err != nil {
				t.Fatalf("%v\noutput:\n%s", err, out.String())
			}
			golden := filepath.Join("testdata", sc.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestScenarios -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("the output differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestScenarioDeterministic plays one scenario that involves a retry
// timer twice: the outputs must be the same.
func TestScenarioDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := play(&a, "retry"); err != nil {
		t.Fatal(err)
	}
	if err := play(&b, "retry"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.String(), b.String()); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
}

// TestPlayAllAndList: "all" plays every scenario in order, "list" names
// them, and an unknown name is an error.
func TestPlayAllAndList(t *testing.T) {
	var all bytes.Buffer
	if err := play(&all, "all"); err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, sc := range scenarios {
		i := strings.Index(all.String(), "=== "+sc.name+": ")
		if i <= last {
			t.Errorf("scenario %s is missing or out of order in -scenario all", sc.name)
		}
		last = i
		if !strings.Contains(all.String(), sc.name+": every expected state reached") {
			t.Errorf("scenario %s did not finish in -scenario all", sc.name)
		}
	}
	var list bytes.Buffer
	if err := play(&list, "list"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(list.String(), "\n"); got != len(scenarios) {
		t.Errorf("list has %d lines, want %d:\n%s", got, len(scenarios), list.String())
	}
	if err := play(&list, "nope"); err == nil || !strings.Contains(err.Error(), `no scenario "nope"`) {
		t.Errorf("an unknown scenario: error %v", err)
	}
}

// TestScenarioFailsOnUnexpectedState: a southbound that fails where a
// scenario expects success makes the scenario fail, naming the key.
func TestScenarioFailsOnUnexpectedState(t *testing.T) {
	sc := scenarios[0]
	broken := sc
	broken.steps = append([]step{{
		title: "the southbound refuses tap1 for good",
		run: func(e *env) error {
			e.sb.FailOnce("create tap interface tap1", errTest)
			return nil
		},
	}}, sc.steps...)
	var out bytes.Buffer
	err := run(&out, broken)
	if err == nil || !strings.Contains(err.Error(), tap1Key+" is FAILED") {
		t.Errorf("error %v, want one saying that %s is FAILED\n%s", err, tap1Key, out.String())
	}
}

var errTest = errString("injected by the test")

type errString string

func (e errString) Error() string { return string(e) }
