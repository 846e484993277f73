package kv

import (
	"fmt"
	"strings"
)

// A key template compiles to a sequence of elements, each matching one byte
// (a literal byte, or one byte of a character class) or a run of zero or more
// bytes of a class. A placeholder of class C is "C C*"; an IP prefix is
// "ip ip* / digit digit*". Matching needs no regexp, and two templates
// overlap exactly when the product of their element automata accepts a key.

type byteClass [4]uint64

func (c *byteClass) has(b byte) bool { return c[b>>6]&(1<<(b&63)) != 0 }
func (c *byteClass) add(b byte)      { c[b>>6] |= 1 << (b & 63) }

func (c *byteClass) disjoint(d *byteClass) bool {
	for i := range c {
		if c[i]&d[i] != 0 {
			return false
		}
	}
	return true
}

func classOf(chars string) *byteClass {
	var c byteClass
	for i := 0; i < len(chars); i++ {
		c.add(chars[i])
	}
	return &c
}

var (
	classDigit = classOf("0123456789")
	classIP    = classOf("0123456789abcdef.:")
	classMAC   = classOf("0123456789abcdef:")
	// className is every byte but the segment separator and the control
	// characters, which names in keys never hold.
	className = func() *byteClass {
		var c byteClass
		for b := 0; b < 256; b++ {
			if b != '/' && !isControl(byte(b)) {
				c.add(byte(b))
			}
		}
		return &c
	}()
)

type elemKind uint8

const (
	elemByte elemKind = iota // exactly the byte b
	elemOne                  // one byte of class
	elemStar                 // zero or more bytes of class
)

type elem struct {
	kind  elemKind
	b     byte
	class *byteClass
}

func (e *elem) accepts(b byte) bool {
	if e.kind == elemByte {
		return e.b == b
	}
	return e.class.has(b)
}

// greedyOp is a step of greedy matching: a literal compared as a whole,
// or a run of one or more bytes of a class ("C C*"), taken whole.
type greedyOp struct {
	lit    string
	class  *byteClass // nil for a literal
	begins int        // the placeholder whose value starts here, or -1
	ends   int        // the placeholder whose value ends after this step, or -1
}

func (t *KeyTemplate) compile() {
	t.compileElems()
	for i, p := range t.parts {
		if p.holder < 0 {
			if i > 0 { // the first literal is the prefix
				t.greedy = append(t.greedy, greedyOp{lit: p.literal, begins: -1, ends: -1})
			}
			continue
		}
		first := len(t.greedy)
		run := func(c *byteClass) {
			t.greedy = append(t.greedy, greedyOp{class: c, begins: -1, ends: -1})
		}
		switch t.holders[p.holder].Format {
		case FormatUint:
			run(classDigit)
		case FormatIP:
			run(classIP)
		case FormatIPPrefix, FormatIPInterface:
			run(classIP)
			t.greedy = append(t.greedy, greedyOp{lit: "/", begins: -1, ends: -1})
			run(classDigit)
		case FormatMAC:
			run(classMAC)
		default:
			run(className)
		}
		t.greedy[first].begins = p.holder
		t.greedy[len(t.greedy)-1].ends = p.holder
	}
}

func (t *KeyTemplate) compileElems() {
	for _, p := range t.parts {
		if p.holder < 0 {
			for i := 0; i < len(p.literal); i++ {
				t.elems = append(t.elems, elem{kind: elemByte, b: p.literal[i]})
			}
			continue
		}
		first := len(t.elems)
		plus := func(c *byteClass) {
			t.elems = append(t.elems, elem{kind: elemOne, class: c}, elem{kind: elemStar, class: c})
		}
		switch t.holders[p.holder].Format {
		case FormatUint:
			plus(classDigit)
		case FormatIP:
			plus(classIP)
		case FormatIPPrefix, FormatIPInterface:
			plus(classIP)
			t.elems = append(t.elems, elem{kind: elemByte, b: '/'})
			plus(classDigit)
		case FormatMAC:
			plus(classMAC)
		default:
			plus(className)
		}
		t.holderElems = append(t.holderElems, [2]int{first, len(t.elems)})
	}
	t.endsHolder = make([]int, len(t.elems)+1)
	t.midHolder = make([]bool, len(t.elems)+1)
	for i := range t.endsHolder {
		t.endsHolder[i] = -1
	}
	for h, r := range t.holderElems {
		t.endsHolder[r[1]] = h
		for i := r[0] + 1; i < r[1]; i++ {
			t.midHolder[i] = true
		}
	}
	// Greedy matching is exact when no run can swallow the byte after it.
	t.simple = true
	for i, e := range t.elems {
		if e.kind != elemStar || i+1 == len(t.elems) {
			continue
		}
		next := &t.elems[i+1]
		switch next.kind {
		case elemByte:
			if e.class.has(next.b) {
				t.simple = false
			}
		default:
			if !e.class.disjoint(next.class) {
				t.simple = false
			}
		}
	}
}

// split matches key and writes the placeholder values into out
// (len(out) == len(t.holderElems)). The structure is matched by the
// element automaton (each value holds only bytes its format allows), and,
// with check, each value must be in the key form of its format
// (checkKeyValue), so that a key matches only if kv builds it. Without
// check, the caller checks the values (a generated parser converts each
// with the ParseKey function of its format). Backtracking always checks
// the values as each placeholder ends, so that a split whose values are
// not in key form gives way to the next. It allocates nothing for a
// template that greedy matching decides (t.simple).
func (t *KeyTemplate) split(key string, out []string, check bool) bool {
	if len(key) < len(t.prefix) || key[:len(t.prefix)] != t.prefix {
		return false
	}
	if !t.simple {
		pos := make([]int, len(t.elems)+1)
		if !t.backtrack(key, pos) {
			return false
		}
		for i, r := range t.holderElems {
			out[i] = key[pos[r[0]]:pos[r[1]]]
		}
		return true
	}
	if !t.matchGreedy(key, out) {
		return false
	}
	if check {
		for i, v := range out {
			if !checkKeyValue(t.holders[i].Format, v) {
				return false
			}
		}
	}
	return true
}

// matchGreedy matches the structure of a key of a simple template; out
// receives the placeholder values as they are passed. It runs the steps
// of t.greedy: the same elements as t.elems, with literals compared as a
// whole and each "C C*" taken as one run.
func (t *KeyTemplate) matchGreedy(key string, out []string) bool {
	if !strings.HasPrefix(key, t.prefix) {
		return false
	}
	p, start := len(t.prefix), 0
	for i := range t.greedy {
		op := &t.greedy[i]
		if op.begins >= 0 {
			start = p
		}
		if op.class == nil {
			if !strings.HasPrefix(key[p:], op.lit) {
				return false
			}
			p += len(op.lit)
		} else {
			q := p
			for q < len(key) && op.class.has(key[q]) {
				q++
			}
			if q == p {
				return false
			}
			p = q
		}
		if op.ends >= 0 {
			out[op.ends] = key[start:p]
		}
	}
	return p == len(key)
}

// backtrack matches a template that greedy matching cannot (its memo of
// failed states is allocated on the heap, so it is kept out of split).
//
//go:noinline
func (t *KeyTemplate) backtrack(key string, pos []int) bool {
	var failed map[[2]int]bool
	return t.matchBacktrack(key, 0, 0, pos, &failed)
}

// matchBacktrack matches the elements from i on against key from p on.
// Where a placeholder ends its value is checked; that check depends on
// where the placeholder started, so it is not part of the memo of failed
// states, and neither are states inside a placeholder.
func (t *KeyTemplate) matchBacktrack(key string, i, p int, pos []int, failed *map[[2]int]bool) bool {
	pos[i] = p
	if h := t.endsHolder[i]; h >= 0 && !checkKeyValue(t.holders[h].Format, key[pos[t.holderElems[h][0]]:p]) {
		return false
	}
	if i == len(t.elems) {
		return p == len(key)
	}
	memo := !t.midHolder[i]
	if memo && *failed != nil && (*failed)[[2]int{i, p}] {
		return false
	}
	e := &t.elems[i]
	ok := false
	if e.kind == elemStar {
		end := p
		for end < len(key) && e.class.has(key[end]) {
			end++
		}
		for q := end; q >= p && !ok; q-- {
			ok = t.matchBacktrack(key, i+1, q, pos, failed)
		}
	} else if p < len(key) && e.accepts(key[p]) {
		ok = t.matchBacktrack(key, i+1, p+1, pos, failed)
	}
	if !ok && memo {
		if *failed == nil {
			*failed = make(map[[2]int]bool)
		}
		(*failed)[[2]int{i, p}] = true
	}
	return ok
}

// closure adds state i and every state reachable from it by skipping runs.
func closure(elems []elem, i int, into []int) []int {
	for {
		into = append(into, i)
		if i == len(elems) || elems[i].kind != elemStar {
			return into
		}
		i++
	}
}

// step returns the states after consuming b in state i (at most two: a run
// may continue, or the element is done).
func step(elems []elem, i int, b byte, into []int) []int {
	if i == len(elems) || !elems[i].accepts(b) {
		return into
	}
	if elems[i].kind == elemStar {
		return closure(elems, i, into)
	}
	return closure(elems, i+1, into)
}

// exampleBytes orders the bytes tried when searching for an example key, so
// that examples read as text.
var exampleBytes = func() []byte {
	var out []byte
	seen := [256]bool{}
	for _, r := range "abcdefghijklmnopqrstuvwxyz0123456789/.:-_ABCDEFGHIJKLMNOPQRSTUVWXYZ" {
		out = append(out, byte(r))
		seen[byte(r)] = true
	}
	for b := 0; b < 256; b++ {
		if !seen[b] {
			out = append(out, byte(b))
		}
	}
	return out
}()

// intersect searches breadth-first for the shortest key accepted by both
// element sequences.
func intersect(a, b []elem) (string, bool) {
	type pair struct{ i, j int }
	type visit struct {
		from pair
		b    byte
		root bool
	}
	seen := map[pair]visit{}
	var queue []pair
	for _, i := range closure(a, 0, nil) {
		for _, j := range closure(b, 0, nil) {
			p := pair{i, j}
			if _, ok := seen[p]; !ok {
				seen[p] = visit{root: true}
				queue = append(queue, p)
			}
		}
	}
	var na, nb []int
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p.i == len(a) && p.j == len(b) {
			var rev []byte
			for v := seen[p]; !v.root; v = seen[v.from] {
				rev = append(rev, v.b)
			}
			for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
				rev[l], rev[r] = rev[r], rev[l]
			}
			return string(rev), true
		}
		for _, c := range exampleBytes {
			na = step(a, p.i, c, na[:0])
			if len(na) == 0 {
				continue
			}
			nb = step(b, p.j, c, nb[:0])
			for _, i := range na {
				for _, j := range nb {
					q := pair{i, j}
					if _, ok := seen[q]; !ok {
						seen[q] = visit{from: p, b: c}
						queue = append(queue, q)
					}
				}
			}
		}
	}
	return "", false
}

// classAll is every byte.
var classAll = func() *byteClass {
	var c byteClass
	for b := 0; b < 256; b++ {
		c.add(byte(b))
	}
	return &c
}()

// Ambiguity reports why keys of t could not be parsed back unambiguously,
// or "" when they can: two placeholders with no literal between them, or a
// placeholder (not the last) whose values, given its format, could contain
// the literal that follows it in a way that moves the split: a value that
// is another value followed by the literal (a name "a-b" before "-", an
// address "1.2" before "."). An IP prefix before "/" is fine: its values
// hold exactly one '/'.
func (t *KeyTemplate) Ambiguity() string {
	for i, p := range t.parts {
		if p.holder < 0 || i+1 == len(t.parts) {
			continue
		}
		h := t.holders[p.holder]
		next := t.parts[i+1]
		if next.holder >= 0 {
			return fmt.Sprintf("placeholders {%s} and {%s} have no literal text between them", h.Field, t.holders[next.holder].Field)
		}
		// Is there a value of the placeholder that is a value followed by
		// the literal and more? Then a key splits in two places.
		r := t.holderElems[p.holder]
		value := t.elems[r[0]:r[1]]
		longer := append([]elem(nil), value...)
		for j := 0; j < len(next.literal); j++ {
			longer = append(longer, elem{kind: elemByte, b: next.literal[j]})
		}
		longer = append(longer, elem{kind: elemStar, class: classAll})
		if example, ok := intersect(value, longer); ok {
			return fmt.Sprintf("placeholder {%s} (format %s) is followed by %q, and its values can contain that text (e.g. %q), so keys split in more than one place", h.Field, h.Format, next.literal, example)
		}
	}
	return ""
}
