package api

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/kvdescriptor/kvdescriptor/generated/kvdescriptor/api/v1"
)

// Info is what AgentInfo says of the agent beyond the scheduler.
type Info struct {
	// Name is the agent's name.
	Name string
	// Version is the agent's version (default: the main module's version
	// in the build information).
	Version string
	// Started is when the agent started.
	Started time.Time
	// Config is the agent's configuration in YAML, secrets already
	// removed (runtime/agent/redact): it is served as it is.
	Config string
}

// AgentInfo describes the agent: name, version, Go version, start time,
// the descriptors registered and its configuration without secrets.
func (svc *Service) AgentInfo(context.Context, *connect.Request[apiv1.AgentInfoRequest]) (*connect.Response[apiv1.AgentInfoResponse], error) {
	in := svc.d.Info
	out := &apiv1.AgentInfoResponse{
		Name:        in.Name,
		Version:     in.Version,
		GoVersion:   runtime.Version(),
		Descriptors: uint32(len(svc.s.Descriptors())),
		Config:      in.Config,
	}
	if out.Version == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			out.Version = bi.Main.Version
		}
	}
	if !in.Started.IsZero() {
		out.StartTime = timestamppb.New(in.Started)
	}
	return connect.NewResponse(out), nil
}
