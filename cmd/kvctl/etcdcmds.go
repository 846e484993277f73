package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"gopkg.in/yaml.v3"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb"
	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
)

// etcdEntry is one key of the agent's configuration in etcd, as etcd get
// prints it.
type etcdEntry struct {
	Key         string `json:"key" yaml:"key"`
	ModRevision int64  `json:"mod_revision" yaml:"mod_revision"`
	Value       any    `json:"value,omitempty" yaml:"value,omitempty"`
	Error       string `json:"error,omitempty" yaml:"error,omitempty"`
}

func (c *cli) etcdGetCmd(f *etcdFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get [key|prefix]",
		Short: "The agent's configuration in etcd: every key, one key, or the keys under a prefix",
		Long: `get lists the keys of the agent's configuration in etcd (KEY REVISION
VALUE), each value decoded as the agent decodes it (a value it would skip
shows its error). An argument ending in "/" is a prefix; another is a
key, or a prefix when etcd has no such key.`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			models, err := newLocalModels()
			if err != nil {
				return failed("%v", err)
			}
			arg := ""
			if len(a) == 1 {
				arg = a[0]
			}
			return c.withEtcd(cmd, f, func(ctx context.Context, cl *clientv3.Client) error {
				kvs, err := etcdRead(ctx, cl, f.configPrefix(), arg)
				if err != nil {
					return err
				}
				return c.writeEtcdEntries(etcdEntries(models, f.configPrefix(), kvs))
			})
		},
	}
}

// etcdRead reads arg under prefix: a key, or the keys under a prefix.
func etcdRead(ctx context.Context, cl *clientv3.Client, prefix, arg string) ([]*etcdKV, error) {
	var out []*etcdKV
	read := func(opts ...clientv3.OpOption) error {
		resp, err := cl.Get(ctx, prefix+arg, opts...)
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			out = append(out, &etcdKV{key: string(kv.Key), value: kv.Value, rev: kv.ModRevision})
		}
		return nil
	}
	if arg != "" && !strings.HasSuffix(arg, "/") {
		if err := read(); err != nil || len(out) > 0 {
			return out, err
		}
	}
	return out, read(clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
}

// etcdKV is a key and value read from etcd.
type etcdKV struct {
	key   string
	value []byte
	rev   int64
}

// etcdEntries decodes values read from etcd as the agent's etcd source
// does (valid JSON text is protojson, anything else the wire form).
func etcdEntries(models *localModels, prefix string, kvs []*etcdKV) []etcdEntry {
	var out []etcdEntry
	for _, kv := range kvs {
		key := strings.TrimPrefix(kv.key, prefix)
		e := etcdEntry{Key: key, ModRevision: kv.rev}
		enc := nb.Binary
		if json.Valid(kv.value) {
			enc = nb.JSON
		}
		v, err := nb.Decode(models, key, kv.value, enc)
		if err == nil {
			err = models.validate(key, v)
		}
		if err != nil {
			e.Error = err.Error()
		}
		if v != nil {
			if b, err := protojson.Marshal(v); err == nil {
				_ = json.Unmarshal(b, &e.Value)
			}
		}
		out = append(out, e)
	}
	return out
}

// writeEtcdEntries writes what etcd get read.
func (c *cli) writeEtcdEntries(es []etcdEntry) error {
	switch c.output {
	case "json":
		b, err := json.MarshalIndent(es, "", "  ")
		if err != nil {
			return failed("%v", err)
		}
		_, err = c.stdout.Write(append(b, '\n'))
		return err
	case "yaml":
		b, err := yaml.Marshal(es)
		if err != nil {
			return failed("%v", err)
		}
		_, err = c.stdout.Write(b)
		return err
	}
	t := newTable(c.stdout)
	fmt.Fprintln(t, "KEY\tREVISION\tVALUE")
	for _, e := range es {
		v := ""
		if e.Value != nil {
			b, _ := json.Marshal(e.Value)
			v = string(b)
		}
		if e.Error != "" {
			v = c.paint("31", "error: "+e.Error)
		}
		fmt.Fprintf(t, "%s\t%d\t%s\n", e.Key, e.ModRevision, v)
	}
	return t.Flush()
}

func (c *cli) etcdPutCmd(f *etcdFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "put <key> <value>",
		Short: "Write one value of the agent's configuration in etcd, checked as the agent checks it",
		Long: `put writes the value of key, given as YAML or JSON in the form of the
agent's file source (e.g. '{name: eth1, type: TYPE_DUMMY, mtu: 1400}'),
as protojson at <prefix>key, after checking it as the agent does.`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			models, err := newLocalModels()
			if err != nil {
				return failed("%v", err)
			}
			v, err := parseValue(models, a[0], a[1])
			if err != nil {
				return err
			}
			b, err := protojson.Marshal(v)
			if err != nil {
				return failed("%s: %v", a[0], err)
			}
			return c.withEtcd(cmd, f, func(ctx context.Context, cl *clientv3.Client) error {
				resp, err := cl.Put(ctx, f.configPrefix()+a[0], string(b))
				if err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "put %s (revision %d)\n", a[0], resp.Header.Revision)
				return nil
			})
		},
	}
}

// parseValue decodes and checks the value of key given as text: read as
// the entry of a file of the file source, then validated.
func parseValue(models *localModels, key, text string) (proto.Message, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, failed("key %q: the value is not YAML or JSON: %v", key, err)
	}
	val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		val = doc.Content[0]
	}
	entry := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, val}}
	data, err := yaml.Marshal(entry)
	if err != nil {
		return nil, failed("key %q: %v", key, err)
	}
	changes, err := file.Parse("value", data, models)
	if err != nil {
		return nil, failed("%v", err)
	}
	if err := models.validate(key, changes[0].Value); err != nil {
		return nil, failed("%v", err)
	}
	return changes[0].Value, nil
}

func (c *cli) etcdDeleteCmd(f *etcdFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <key>...",
		Short: "Delete values of the agent's configuration in etcd, in one transaction",
		Long: `delete deletes the keys from the agent's configuration in etcd, in one
etcd transaction (one transaction of the agent): all of them, or none
when one is not there (exit code 1, naming it).`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.withEtcd(cmd, f, func(ctx context.Context, cl *clientv3.Client) error {
				p := f.configPrefix()
				var cmps []clientv3.Cmp
				var dels, gets []clientv3.Op
				for _, k := range a {
					cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(p+k), ">", 0))
					dels = append(dels, clientv3.OpDelete(p+k))
					gets = append(gets, clientv3.OpGet(p+k, clientv3.WithKeysOnly()))
				}
				resp, err := cl.Txn(ctx).If(cmps...).Then(dels...).Else(gets...).Commit()
				if err != nil {
					return err
				}
				if !resp.Succeeded {
					var missing []string
					for i, r := range resp.Responses {
						if len(r.GetResponseRange().GetKvs()) == 0 {
							missing = append(missing, a[i])
						}
					}
					return failed("not in etcd under %s: %s (nothing deleted)", p, strings.Join(missing, ", "))
				}
				fmt.Fprintf(c.stdout, "deleted %d keys (revision %d)\n", len(a), resp.Header.Revision)
				return nil
			})
		},
	}
}

func (c *cli) etcdImportCmd(f *etcdFlags) *cobra.Command {
	var path string
	var prune bool
	cmd := &cobra.Command{
		Use:   "import -f config.yaml",
		Short: "Write a configuration file (the file source's format) to etcd, in one transaction",
		Long: `import reads a configuration file in the format of the agent's file
source (YAML or JSON, key to value; at most as large as the file source
reads, 16 MiB), checks every value as the agent does, and writes them in
one etcd transaction: one transaction of the agent. One bad value and
nothing is written (exit code 1, every error naming its key and field).
With --prune the file is the whole configuration: the keys under the
prefix that it lacks are deleted in the same transaction, which fails
if the configuration changed since kvctl read it. etcd bounds one
transaction (--max-txn-ops, 128 operations by default): a larger file
is refused by etcd, and nothing is written.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return usage("etcd import: -f FILE is required")
			}
			ops, n, err := importOps(f.configPrefix(), path)
			if err != nil {
				return err
			}
			return c.withEtcd(cmd, f, func(ctx context.Context, cl *clientv3.Client) error {
				return c.etcdImport(ctx, cl, f.configPrefix(), ops, n, prune)
			})
		},
	}
	cmd.Flags().StringVarP(&path, "file", "f", "", "the configuration file")
	cmd.Flags().BoolVar(&prune, "prune", false, "the file is the whole configuration: delete the keys it lacks")
	return cmd
}

// importOps reads, decodes and checks a configuration file, and returns
// the puts that write it under prefix and its keys.
func importOps(prefix, path string) ([]clientv3.Op, map[string]bool, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, nil, err
	}
	models, err := newLocalModels()
	if err != nil {
		return nil, nil, failed("%v", err)
	}
	changes, err := file.Parse(path, data, models)
	if err != nil {
		return nil, nil, failed("%v", err)
	}
	var errs []error
	var ops []clientv3.Op
	keys := map[string]bool{}
	for _, ch := range changes {
		if err := models.validate(ch.Key, ch.Value); err != nil {
			errs = append(errs, err)
			continue
		}
		b, err := protojson.Marshal(ch.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", ch.Key, err))
			continue
		}
		ops = append(ops, clientv3.OpPut(prefix+ch.Key, string(b)))
		keys[prefix+ch.Key] = true
	}
	if len(errs) > 0 {
		return nil, nil, failed("%s: nothing written: %v", path, errors.Join(errs...))
	}
	return ops, keys, nil
}

// etcdImport writes ops in one transaction; with prune it deletes the
// other keys under prefix too, if none changed since they were read.
func (c *cli) etcdImport(ctx context.Context, cl *clientv3.Client, prefix string, ops []clientv3.Op, keys map[string]bool, prune bool) error {
	var cmps []clientv3.Cmp
	deleted := 0
	if prune {
		resp, err := cl.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			if !keys[string(kv.Key)] {
				ops = append(ops, clientv3.OpDelete(string(kv.Key)))
				deleted++
			}
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(prefix).WithPrefix(), "<", resp.Header.Revision+1))
	}
	resp, err := cl.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return failed("the configuration under %s changed while kvctl read it: nothing written (run it again)", prefix)
	}
	fmt.Fprintf(c.stdout, "imported %d values, deleted %d keys, in one etcd transaction (revision %d)\n", len(keys), deleted, resp.Header.Revision)
	return nil
}
