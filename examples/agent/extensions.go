package main

// The extensions linked into the agent. Each registers the descriptors of
// its models with package ext from its init function; the agent adds them
// to its plugins' at start. To add one, import its package here.
import (
	_ "github.com/kvdescriptor/kvdescriptor/examples/extension"
)
