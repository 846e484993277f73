// Package redact removes secrets from an agent's configuration and from
// text, by one rule shared by the agent (its AgentInfo) and kvctl (its
// support bundle).
package redact

import (
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

// Redacted replaces what must not be shown.
const Redacted = "REDACTED"

// secretName matches the names of the configuration fields whose values
// are secrets, or name where secrets are (a token file, a TLS key, an
// etcd password): such a value is never copied, whatever it is.
var secretName = regexp.MustCompile(`(?i)token|passw|secret|key|credential|private|auth`)

// urlPassword matches the password of a URL's user information
// (http://user:password@host).
var urlPassword = regexp.MustCompile(`(://[^:/@\s]*):[^@\s/]*@`)

// Text removes the passwords of URLs from text.
func Text(b []byte) []byte {
	return urlPassword.ReplaceAll(b, []byte("$1:"+Redacted+"@"))
}

// Config returns a YAML (or JSON) configuration without its
// secrets: the value of every field whose name looks like a secret's
// (secretName), whatever its kind, is Redacted; the passwords of URLs
// are; comments are dropped (one may hold a secret commented out).
// Files that the configuration names are never read. A configuration
// that does not parse is refused, not copied.
func Config(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("does not parse as YAML (not included: it could not be redacted): %w", err)
	}
	redactNode(&doc)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func redactNode(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	switch n.Kind {
	case yaml.ScalarNode:
		n.Value = string(Text([]byte(n.Value)))
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			redactNode(k)
			if secretName.MatchString(k.Value) {
				// The node itself, so that an alias of it is redacted too.
				*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: Redacted, Anchor: v.Anchor}
				continue
			}
			redactNode(v)
		}
	default:
		for _, c := range n.Content {
			redactNode(c)
		}
	}
}
