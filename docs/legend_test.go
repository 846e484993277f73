package docs

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvdescriptor/kvdescriptor/runtime/kv"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// printedNames returns, per section of legend.md, the names the scheduler
// can print, from their String methods.
func printedNames() map[string][]string {
	var states []string
	for s := scheduler.State(0); !strings.HasPrefix(s.String(), "State("); s++ {
		states = append(states, s.String())
	}
	var ops []string
	for _, k := range []scheduler.OpKind{scheduler.OpNone, scheduler.OpCreate, scheduler.OpUpdate, scheduler.OpDelete, scheduler.OpRetrieve} {
		ops = append(ops, k.String())
	}
	var kinds []string
	for _, k := range []scheduler.TxnKind{scheduler.NBTxn, scheduler.SBNotification, scheduler.RetryTxn,
		scheduler.RegistrationTxn, scheduler.FullResyncTxn, scheduler.UpstreamResyncTxn, scheduler.DownstreamResyncTxn, scheduler.DriftCheckTxn} {
		kinds = append(kinds, k.String())
	}
	var origins []string
	for _, o := range []kv.Origin{kv.OriginUnknown, kv.OriginNB, kv.OriginSB} {
		origins = append(origins, o.String())
	}
	return map[string][]string{
		"## States":            states,
		"## Operations":        ops,
		"## Flags":             scheduler.FlagNames(),
		"## Transaction kinds": kinds,
		"## Origins":           origins,
	}
}

// tableName matches the names in the first column of the tables of a
// section: "| `NAME` | ...".
var tableName = regexp.MustCompile(`(?m)^\| \x60([^\x60]+)\x60 \|`)

// TestLegend fails when the scheduler can print a state, an operation, a
// flag, a transaction kind or an origin that docs/legend.md does not
// explain, or when the legend explains one that does not exist.
func TestLegend(t *testing.T) {
	t.Parallel()
	md := readRepoFile(t, "docs/legend.md")
	for heading, want := range printedNames() {
		if len(want) == 0 {
			t.Fatalf("no names for %s", heading)
		}
		var got []string
		for _, m := range tableName.FindAllStringSubmatch(section(t, md, heading), -1) {
			got = append(got, m[1])
		}
		for _, name := range want {
			if !slices.Contains(got, name) {
				t.Errorf("legend.md %s does not explain %q", heading, name)
			}
		}
		for _, name := range got {
			if !slices.Contains(want, name) {
				t.Errorf("legend.md %s explains %q, which the scheduler does not print", heading, name)
			}
		}
	}
}

// TestLegendFlagsCoverFormatting checks the test's premise: Flags.String
// writes every flag by a name of FlagNames, so a flag without a name in
// FlagNames could not escape the legend.
func TestLegendFlagsCoverFormatting(t *testing.T) {
	names := scheduler.FlagNames()
	all := scheduler.Flags(1<<len(names) - 1)
	if got := strings.Fields(all.String()); !slices.Equal(got, names) {
		t.Errorf("Flags.String of every flag: %q, FlagNames: %q", got, names)
	}
	if next := scheduler.Flags(1 << len(names)).String(); next != "" {
		t.Errorf("a flag beyond FlagNames prints %q: FlagNames is incomplete", next)
	}
}
