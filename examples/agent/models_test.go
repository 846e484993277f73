package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// generatedModels reads the names of the models (and derived models)
// generated under generated/<dir> from the generated files' ModelName
// constants.
func generatedModels(t *testing.T, dirs ...string) []string {
	t.Helper()
	modelName := regexp.MustCompile(`(?m)^\s*\w+ModelName\s*=\s*"([^"]+)"`)
	var out []string
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join("../../generated", dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil || !strings.HasSuffix(path, ".kv.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, sub := range modelName.FindAllStringSubmatch(string(src), -1) {
				out = append(out, sub[1])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// TestAgentListsEveryModel: the agent with the Linux and VPP plugins
// registers every model the repository generates for them, and the API
// lists each with its key template: a new model needs no change to the
// agent, the API or kvctl. Both Linux southbounds are checked: the
// in-memory one and (as root) the kernel's.
func TestAgentListsEveryModel(t *testing.T) {
	want := generatedModels(t, "linux", "vpp")
	if len(want) < 15 {
		t.Fatalf("found %d models in generated/: the scan is broken", len(want))
	}
	modes := [][]string{{"-memory"}}
	if os.Geteuid() == 0 {
		ns, _ := newNetns(t)
		modes = append(modes, []string{"-netns", ns})
	}
	for _, mode := range modes {
		dir := t.TempDir()
		a := startAgent(t, append([]string{"-name", "models", "-vpp-socket", "mock", "-state-dir", filepath.Join(dir, "state")}, mode...)...)
		var resp struct {
			Models []struct {
				Descriptor  string `json:"descriptor"`
				KeyTemplate string `json:"keyTemplate"`
			} `json:"models"`
		}
		a.getJSON("/v1/models", &resp)
		var got []string
		for _, m := range resp.Models {
			got = append(got, m.Descriptor)
			if m.KeyTemplate == "" {
				t.Errorf("%v: model %s has no key template in the API", mode, m.Descriptor)
			}
		}
		slices.Sort(got)
		for _, w := range want {
			if _, ok := slices.BinarySearch(got, w); !ok {
				t.Errorf("%v: model %s is generated but the agent's API does not list it", mode, w)
			}
		}
		a.stop()
	}
}
