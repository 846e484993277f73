package grpcapi

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
	"github.com/kvdescriptor/kvdescriptor/runtime/apilimits"
)

// The bounds of the requests' sizes, counts and durations
// (runtime/apilimits): a request beyond one is INVALID_ARGUMENT naming the
// field, before anything is decoded or allocated for it.

func bounded(errs ...error) error {
	if err := apilimits.First(errs...); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return nil
}

func keyLen(field, s string) error { return apilimits.Length(field, s, apilimits.MaxKeyLen) }

func checkCommit(req *apiv1.CommitRequest) error {
	errs := []error{
		apilimits.Count("values, deletes", int64(len(req.GetValues())+len(req.GetDeletes())), apilimits.MaxCommitKeys),
		apilimits.Length("description", req.GetDescription(), apilimits.MaxDescriptionLen),
	}
	if r := req.GetRetry(); r != nil {
		errs = append(errs, apilimits.Count("retry.max_attempts", int64(r.GetMaxAttempts()), apilimits.MaxRetryAttempts))
		if d := r.GetPeriod(); d != nil {
			errs = append(errs, apilimits.Duration("retry.period", d.AsDuration(), apilimits.MaxRetryPeriod))
		}
		if d := r.GetMaxPeriod(); d != nil {
			errs = append(errs, apilimits.Duration("retry.max_period", d.AsDuration(), apilimits.MaxRetryPeriod))
		}
	}
	if d := req.GetWaitTimeout(); d != nil {
		errs = append(errs, apilimits.Duration("wait_timeout", d.AsDuration(), apilimits.MaxWaitTimeout))
	}
	if d := req.GetConfirmWithin(); d != nil {
		errs = append(errs, apilimits.Duration("confirm_within", d.AsDuration(), apilimits.MaxConfirmWithin))
	}
	if err := bounded(errs...); err != nil {
		return err
	}
	for i, v := range req.GetValues() {
		if err := keyLen(fmt.Sprintf("values[%d].key", i), v.GetKey()); err != nil {
			return bounded(err)
		}
	}
	for i, k := range req.GetDeletes() {
		if err := keyLen(fmt.Sprintf("deletes[%d]", i), k); err != nil {
			return bounded(err)
		}
	}
	return nil
}
