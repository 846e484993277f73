package main

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// changedFields names the top-level fields that differ between two values.
func (c *cli) changedFields(prev, next *anypb.Any) []string {
	opts := proto.UnmarshalOptions{Resolver: c.types}
	a, err1 := anypb.UnmarshalNew(prev, opts)
	b, err2 := anypb.UnmarshalNew(next, opts)
	if err1 != nil || err2 != nil || a.ProtoReflect().Descriptor() != b.ProtoReflect().Descriptor() {
		return nil
	}
	ra, rb := a.ProtoReflect(), b.ProtoReflect()
	var out []string
	fields := ra.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if ra.Has(fd) != rb.Has(fd) || !ra.Get(fd).Equal(rb.Get(fd)) {
			out = append(out, fmt.Sprintf("%s: %s -> %s", fd.JSONName(), c.fieldText(ra, fd), c.fieldText(rb, fd)))
		}
	}
	return out
}

func (c *cli) fieldText(m protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if !m.Has(fd) {
		return "(unset)"
	}
	v := m.Get(fd)
	switch {
	case fd.IsList():
		l := v.List()
		var parts []string
		for i := 0; i < l.Len(); i++ {
			parts = append(parts, fmt.Sprint(l.Get(i).Interface()))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case fd.Kind() == protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
	case fd.Kind() == protoreflect.StringKind:
		return fmt.Sprintf("%q", v.String())
	case fd.Message() != nil && !fd.IsMap():
		b, _ := protojson.MarshalOptions{Resolver: c.types}.Marshal(v.Message().Interface())
		return string(b)
	}
	return fmt.Sprint(v.Interface())
}

// writePlan writes planned operations like a diff, then a warning line
// per value of the file that would not take effect (another source sets
// the key and wins: the plan's outcomes say so).
func (c *cli) writePlan(ops []*apiv1.Op, outcomes []*apiv1.Outcome) {
	defer func() {
		for _, o := range outcomes {
			if o.GetWarning() != "" {
				fmt.Fprintln(c.stdout, c.paint("33", fmt.Sprintf("warning: %s: %s", o.GetKey(), o.GetWarning())))
			}
		}
	}()
	if len(ops) == 0 {
		fmt.Fprintln(c.stdout, "no changes")
		return
	}
	recreated := recreations(ops)
	shown := map[string]bool{}
	for _, op := range ops {
		if slices.Contains(op.GetFlags(), "NOOP") {
			continue
		}
		r, recreate := recreated[op.GetKey()]
		if recreate {
			if shown[op.GetKey()] {
				continue
			}
			shown[op.GetKey()] = true
		}
		fmt.Fprintln(c.stdout, c.planLine(op, recreate))
		var fields []string
		switch {
		case recreate && r[0] != nil && r[1] != nil:
			fields = c.changedFields(r[0], r[1])
		case op.GetKind() == "UPDATE" && op.GetPrevValue() != nil && op.GetValue() != nil:
			fields = c.changedFields(op.GetPrevValue(), op.GetValue())
		}
		for _, f := range fields {
			fmt.Fprintln(c.stdout, "    "+f)
		}
	}
}

// recreations returns the keys that ops re-create, with the value before
// and after: a re-creation is planned as a delete and a create of one
// key, shown as one "!" line with the fields that changed.
func recreations(ops []*apiv1.Op) map[string][2]*anypb.Any {
	recreated := map[string][2]*anypb.Any{}
	for _, op := range ops {
		if !slices.Contains(op.GetFlags(), "RECREATE") {
			continue
		}
		r := recreated[op.GetKey()]
		switch op.GetKind() {
		case "DELETE":
			r[0] = op.GetValue()
			if op.GetPrevValue() != nil {
				r[0] = op.GetPrevValue()
			}
		case "CREATE":
			r[1] = op.GetValue()
		}
		recreated[op.GetKey()] = r
	}
	return recreated
}

// planLine is the diff line of one planned operation.
func (c *cli) planLine(op *apiv1.Op, recreate bool) string {
	var sign, colour string
	switch {
	case recreate:
		sign, colour = "!", "35"
	case op.GetKind() == "CREATE":
		sign, colour = "+", "32"
	case op.GetKind() == "UPDATE":
		sign, colour = "~", "33"
	case op.GetKind() == "DELETE":
		sign, colour = "-", "31"
	case op.GetState() == "PENDING":
		// Nothing to do yet: the value waits for its dependencies.
		sign, colour = "+", "33"
	default:
		sign, colour = " ", "0"
	}
	line := fmt.Sprintf("%s %s", sign, op.GetKey())
	var extra []string
	for _, f := range op.GetFlags() {
		if f != "RECREATE" && (f != "IS-PENDING" || op.GetState() != "PENDING") {
			extra = append(extra, f)
		}
	}
	if op.GetState() == "PENDING" && !recreate {
		line += " (pending)"
	}
	if len(extra) > 0 && !recreate {
		line += " [" + strings.Join(extra, ",") + "]"
	}
	return c.paint(colour, line)
}
