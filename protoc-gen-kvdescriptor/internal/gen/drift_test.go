package gen_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestDriftPolicy: drift_policy sets the spec's DriftPolicy, of the model
// and of the values it derives; the default (repair) sets nothing; a
// number that is no policy is an error naming the option.
func TestDriftPolicy(t *testing.T) {
	t.Parallel()
	got, err := generateSrc(t, `
message A {
  option (kvdescriptor.v1.model) = {key: "a/{name}" drift_policy: DRIFT_REPORT};
  string name = 1;
  repeated string members = 2 [(kvdescriptor.v1.field).derive = {key: "a/{name}/m/{members}"}];
}
message B {
  option (kvdescriptor.v1.model) = {key: "b/{name}" drift_policy: DRIFT_ADOPT};
  string name = 1;
}
message C {
  option (kvdescriptor.v1.model) = {key: "c/{name}"};
  string name = 1;
}`)
	if err != nil {
		t.Fatal(err)
	}
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(got, -1)) }
	if n := count(`DriftPolicy: +kv\.DriftReport`); n != 2 {
		t.Errorf("DriftPolicy: kv.DriftReport %d times, want 2 (A and its members)", n)
	}
	if n := count(`DriftPolicy: +kv\.DriftAdopt`); n != 1 {
		t.Errorf("DriftPolicy: kv.DriftAdopt %d times, want 1", n)
	}
	if n := count(`DriftPolicy: `); n != 3 {
		t.Errorf("DriftPolicy set %d times, want 3 (C has the default)", n)
	}
	_, err = generateSrc(t, `
message D {
  option (kvdescriptor.v1.model) = {key: "d/{name}" drift_policy: 9};
  string name = 1;
}`)
	if err == nil || !strings.Contains(err.Error(), "drift_policy") || !strings.Contains(err.Error(), "9 is not a drift policy") {
		t.Errorf("err = %v", err)
	}
}
