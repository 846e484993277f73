//go:build linux

package linux

import "github.com/google/nftables"

// WithNftListing has every listing of a chain's rules pass through f
// (tests: a listing that fails, or that an interrupted dump cut short).
func WithNftListing(f func([]*nftables.Rule, error) ([]*nftables.Rule, error)) Option {
	return func(o *options) { o.nftList = f }
}
