package ui

import (
	"regexp"
	"strings"
)

// The page shows why a value is PENDING as a tree with links, from the
// lines of the API's why_pending (ValueStatus.why_pending): the first says
// that the value waits, "KEY is STATE", each next one at two more spaces
// an unmet dependency, "LABEL -> TARGET: [STATE, ]intended|not intended,
// a descriptor handles it|no descriptor handles it", followed at four
// more spaces than its value's line by why that target is itself pending,
// in the same form. A line the page cannot read is shown as the API wrote
// it (why.Raw).

// why is why a value is PENDING, down to the roots of the chain.
type why struct {
	Key, State string
	// Cycle is the dependency cycle the value is in, as the API says it.
	Cycle string
	Unmet []whyDep
	// Raw holds the API's lines when they are not in the expected form.
	Raw string
}

// dep is one dependency: a key (linked) or the prefixes of an AnyOf.
type dep struct {
	Label string
	Key   string
	AnyOf []string
	Match string
}

type whyDep struct {
	dep
	// State is the target key's state (plain dependencies).
	State                string
	Intended, Providable bool
	Cause                *why
}

var (
	// whyFacts is the end of an unmet dependency's line.
	whyFacts = regexp.MustCompile(`: (?:([A-Z_]+), )?(intended|not intended), (a descriptor handles it|no descriptor handles it)$`)
	// whyState is the end of a value's line.
	whyState = regexp.MustCompile(` is ([A-Z_]+)(?: \(dependency cycle: (.*)\))?$`)
)

func parseWhy(key string, lines []string) *why {
	p := whyParser{lines: lines}
	w, ok := p.reason(0, key)
	if !ok || p.pos != len(lines) {
		return &why{Raw: strings.Join(lines, "\n")}
	}
	return w
}

type whyParser struct {
	lines []string
	pos   int
}

// indentOf is the count of leading spaces of line.
func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// reason reads the line of the value key at indent and its unmet
// dependencies.
func (p *whyParser) reason(indent int, key string) (*why, bool) {
	if p.pos >= len(p.lines) || indentOf(p.lines[p.pos]) != indent {
		return nil, false
	}
	line := p.lines[p.pos][indent:]
	var w why
	rest, ok := strings.CutPrefix(line, key)
	if !ok {
		return nil, false
	}
	m := whyState.FindStringSubmatch(rest)
	if m == nil || len(m[0]) != len(rest) {
		return nil, false
	}
	w.Key, w.State, w.Cycle = key, m[1], m[2]
	w.Cycle = strings.ReplaceAll(w.Cycle, " -> ", " → ")
	p.pos++
	for p.pos < len(p.lines) && indentOf(p.lines[p.pos]) == indent+2 {
		d, ok := parseDep(p.lines[p.pos][indent+2:])
		if !ok {
			return nil, false
		}
		p.pos++
		if d.Key != "" && p.pos < len(p.lines) && indentOf(p.lines[p.pos]) == indent+4 {
			if d.Cause, ok = p.reason(indent+4, d.Key); !ok {
				return nil, false
			}
		}
		w.Unmet = append(w.Unmet, d)
	}
	return &w, true
}

// parseDep reads an unmet dependency's line.
func parseDep(line string) (whyDep, bool) {
	loc := whyFacts.FindStringSubmatchIndex(line)
	if loc == nil {
		return whyDep{}, false
	}
	var d whyDep
	head := line[:loc[0]]
	if loc[2] >= 0 {
		d.State = line[loc[2]:loc[3]]
	}
	d.Intended = line[loc[4]:loc[5]] == "intended"
	d.Providable = line[loc[6]:loc[7]] == "a descriptor handles it"
	label, target, ok := strings.Cut(head, " -> ")
	if !ok {
		return whyDep{}, false
	}
	d.Label = label
	if d.State != "" {
		d.Key = target
		return d, true
	}
	// An AnyOf: "any of P1, P2 (match)".
	prefixes, ok := strings.CutPrefix(target, "any of ")
	if !ok {
		return whyDep{}, false
	}
	if strings.HasSuffix(prefixes, ")") {
		if i := strings.LastIndex(prefixes, " ("); i >= 0 {
			d.Match = prefixes[i+2 : len(prefixes)-1]
			prefixes = prefixes[:i]
		}
	}
	d.AnyOf = strings.Split(prefixes, ", ")
	return d, true
}
