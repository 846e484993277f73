//go:build linux

package linux

import "github.com/google/nftables"

// WithNftListing has every listing of a chain's rules pass through f
// (tests: a listing that fails, or that an interrupted dump cut short).
func WithNftListing(f func([]*nftables.Rule, error) ([]*nftables.Rule, error)) Option {
	return func(o *options) { o.nftList = f }
}

// WithNftEvents has the watcher tell f of every nftables event it
// receives that names a table, and whether it touched the nftables
// descriptors.
func WithNftEvents(f func(family nftables.TableFamily, table string, touched bool)) Option {
	return func(o *options) { o.nftEvent = f }
}
