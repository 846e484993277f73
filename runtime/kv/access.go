package kv

import "github.com/kvdescriptor/kvdescriptor/runtime/internal/kvaccess"

func init() {
	kvaccess.SetMetadata = func(d any, label string, metadata any) {
		d.(Descriptor).metadataWriter().setMetadata(label, metadata)
	}
	kvaccess.DeleteMetadata = func(d any, label string) {
		d.(Descriptor).metadataWriter().deleteMetadata(label)
	}
}
