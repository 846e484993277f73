package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
)

// TestLocalModelsComplete checks that kvctl knows every model (and
// derived model) generated under generated/linux and generated/vpp, read
// from the generated files' ModelName constants: a new model needs no
// change to kvctl, a new package one import line.
func TestLocalModelsComplete(t *testing.T) {
	m, err := newLocalModels()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, d := range m.ds {
		have[d.Name()] = true
	}
	modelName := regexp.MustCompile(`(?m)^\s*\w+ModelName\s*=\s*"([^"]+)"`)
	want := 0
	for _, dir := range []string{"../../generated/linux", "../../generated/vpp"} {
		err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil || !strings.HasSuffix(path, ".kv.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, sub := range modelName.FindAllStringSubmatch(string(src), -1) {
				want++
				if !have[sub[1]] {
					t.Errorf("%s: model %s is not known to kvctl (import its package in etcdmodels.go)", path, sub[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want < 15 || len(m.ds) != want {
		t.Errorf("kvctl knows %d models, the generated files declare %d", len(m.ds), want)
	}
}

// TestLocalModelsValidate checks values of models that a hand-written
// list had missed (nftables, policy rules): decoded and validated as the
// agent would, a bad one refused naming the field.
func TestLocalModelsValidate(t *testing.T) {
	m, err := newLocalModels()
	if err != nil {
		t.Fatal(err)
	}
	key := "linux/nftables/table/filter"
	mt, ok := m.MessageType(key)
	if !ok {
		t.Fatalf("%s: no model", key)
	}
	v := mt.New().Interface()
	if err := protojson.Unmarshal([]byte(`{"name":"filter","family":"FAMILY_INET"}`), v); err != nil {
		t.Fatal(err)
	}
	if err := m.validate(key, v); err != nil {
		t.Errorf("%s: %v", key, err)
	}
	v = mt.New().Interface()
	if err := protojson.Unmarshal([]byte(`{"name":"filter","family":"FAMILY_INET","namespace":"../x"}`), v); err != nil {
		t.Fatal(err)
	}
	if err := m.validate(key, v); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("%s with a namespace that is a path: %v, want an error naming the field", key, err)
	}
	var unknown *nb.UnknownKeyError
	if err := m.validate("linux/nosuch/x", v); !errors.As(err, &unknown) {
		t.Errorf("an unknown key: %v, want *nb.UnknownKeyError", err)
	}
}
