package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/proto"

	mockv1 "github.com/kvdescriptor/kvdescriptor/generated/examples/mock/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/scheduler"
)

// env is what the steps of a scenario work with.
type env struct {
	ctx context.Context
	w   io.Writer
	s   *scheduler.Scheduler
	sb  *southbound
}

// keyOf returns the key of a value of the mock models, built by the
// generated code.
func keyOf(v proto.Message) string {
	switch v := v.(type) {
	case *mockv1.Interface:
		return mockv1.InterfaceKeyFor(v)
	case *mockv1.BridgeDomain:
		return mockv1.BridgeDomainKeyFor(v)
	case *mockv1.FIBEntry:
		return mockv1.FIBEntryKeyFor(v)
	}
	panic(fmt.Sprintf("no key for %T", v))
}

// resync commits a full resync of values: they become the whole intended
// state, and the southbound is read first.
func (e *env) resync(opts []scheduler.TxnOption, values ...proto.Message) (*scheduler.Result, error) {
	txn := e.s.Txn(append([]scheduler.TxnOption{scheduler.FullResync(), scheduler.Description("resync")}, opts...)...)
	for _, v := range values {
		txn.Set(keyOf(v), v)
	}
	return e.commit(txn)
}

// change commits a change: values set, and keys deleted.
func (e *env) change(opts []scheduler.TxnOption, set []proto.Message, del ...string) (*scheduler.Result, error) {
	txn := e.s.Txn(append([]scheduler.TxnOption{scheduler.Description("change")}, opts...)...)
	for _, v := range set {
		txn.Set(keyOf(v), v)
	}
	for _, k := range del {
		txn.Delete(k)
	}
	return e.commit(txn)
}

// commit commits txn and prints its error: a transaction whose values
// failed or were invalid is a result to show, not the end of the scenario.
func (e *env) commit(txn *scheduler.Txn) (*scheduler.Result, error) {
	res, err := txn.Commit(e.ctx)
	var txnErr *scheduler.TxnError
	if errors.As(err, &txnErr) {
		fmt.Fprintf(e.w, "commit: %v\n", err)
		return res, nil
	}
	return res, err
}

// expect checks the states of keys.
func (e *env) expect(want scheduler.State, keys ...string) error {
	for _, key := range keys {
		if st := e.s.Status(key); st.State != want {
			return fmt.Errorf("%s is %s (last error: %v), want %s", key, st.State, st.LastErr, want)
		}
	}
	return nil
}

// printStatuses prints the state of every value, with the unmet
// dependencies of the PENDING ones and the error of the others.
func (e *env) printStatuses() {
	fmt.Fprintln(e.w, "status:")
	tw := tabwriter.NewWriter(e.w, 0, 0, 2, ' ', 0)
	for _, st := range e.s.Statuses("") {
		var detail string
		switch {
		case len(st.Unmet) > 0:
			var unmet []string
			for _, u := range st.Unmet {
				unmet = append(unmet, u.String())
			}
			detail = "waits for " + strings.Join(unmet, ", ")
		case st.LastErr != nil:
			detail = st.LastErr.Error()
		}
		fmt.Fprintf(tw, "  %s\t%s\n", st.Key, strings.TrimRight(fmt.Sprintf("%-10s  %s", st.State, detail), " "))
	}
	_ = tw.Flush()
}
