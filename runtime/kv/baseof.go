package kv

import "fmt"

// BaseKeyOf returns a Spec.BaseOf for a model of derived values: given a key
// of template derived, it returns the key of the base value, of template
// base, that derives it, built from the values of the placeholders the two
// templates share (by field); "" for a key that is not one of derived. It
// fails when base has a placeholder that derived does not carry (its keys do
// not tell their base) or carries in another format.
//
// The values are copied in key form, so the base key is canonical when the
// derived key is: BaseKeyOf("linux/interface/{name}/address/{ip:ipiface}",
// "linux/interface/{name}") maps "linux/interface/eth0/address/10.0.0.1/24"
// to "linux/interface/eth0".
func BaseKeyOf(derived, base *KeyTemplate) (func(key string) string, error) {
	if derived == nil || base == nil {
		return nil, fmt.Errorf("kv.BaseKeyOf: nil template")
	}
	from := make([]int, len(base.holders)) // per base placeholder: the derived one
	for i, h := range base.holders {
		from[i] = -1
		for j, d := range derived.holders {
			if d.Field != h.Field {
				continue
			}
			if d.Format != h.Format {
				return nil, fmt.Errorf("kv.BaseKeyOf: %q carries {%s} as %s, the base key %q as %s",
					derived.text, h.Field, d.Format, base.text, h.Format)
			}
			from[i] = j
		}
		if from[i] < 0 {
			return nil, fmt.Errorf("kv.BaseKeyOf: %q does not carry {%s} of the base key %q", derived.text, h.Field, base.text)
		}
	}
	return func(key string) string {
		values, ok := derived.Split(key)
		if !ok {
			return ""
		}
		picked := make([]string, len(from))
		for i, j := range from {
			picked[i] = values[j]
		}
		return base.Build(picked...)
	}, nil
}
