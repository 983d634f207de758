package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/kubernix/kubernix/pkg/addons"
)

// EnvPrefix starts the name of every environment variable kubernix reads.
const EnvPrefix = "KUBERNIX_"

// ErrInvalid marks every configuration error: a malformed file, environment
// variable or flag, or a failed Validate. The CLI exits 2 on it.
var ErrInvalid = errors.New("invalid configuration")

// Invalid returns nil when errs is empty, else every error of errs joined,
// one a line, under ErrInvalid and their count: "invalid configuration (2
// problems<where>):\n…". where (e.g. " on this host", or "") qualifies
// the count.
func Invalid(where string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	noun := "problems"
	if len(errs) == 1 {
		noun = "problem"
	}
	return fmt.Errorf("%w (%d %s%s):\n%w", ErrInvalid, len(errs), noun, where, errors.Join(errs...))
}

// Flags binds command-line flags to Config settings. Create it once with
// NewFlags, Bind the settings each verb takes to that verb's flag set,
// then pass it to Load after parsing: a flag counts when it was set on
// any bound set (only the running verb's is parsed).
type Flags struct {
	sets   []*pflag.FlagSet
	values *Config
	// File is the --config file, read before the environment and flags.
	File string
}

// SelectorKeys are the settings that pick an existing cluster (the toml
// keys of Name and StateDir): the flags of the verbs that act on one.
var SelectorKeys = []string{"name", "state_dir"}

// NewFlags returns Flags holding the defaults, bound to no flag set yet.
func NewFlags() *Flags {
	f := &Flags{values: new(Config)}
	*f.values = Default()
	return f
}

// Keys lists the toml key of every Config setting, in field order.
func Keys() []string {
	var keys []string
	for _, field := range settings() {
		keys = append(keys, tomlKey(field))
	}
	return keys
}

// settings lists Config's fields that are settings of the file, in
// field order, with their index in Config: all but NodeSpecs, which the
// file's nodes key fills (see nodesDocument).
func settings() []reflect.StructField {
	var out []reflect.StructField
	for _, field := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		if tomlKey(field) != "-" {
			out = append(out, field)
		}
	}
	return out
}

// tomlKey is the toml key of field, without options such as omitempty.
func tomlKey(field reflect.StructField) string {
	key, _, _ := strings.Cut(field.Tag.Get("toml"), ",")
	return key
}

// mapValue returns the flag value that parses a map setting as its flag
// and environment variable take it, "k=v,k=v" (component-base's, as the
// Kubernetes components' own --feature-gates), or nil for another type.
func mapValue(ptr any) pflag.Value {
	switch m := ptr.(type) {
	case *map[string]bool:
		return cliflag.NewMapStringBool(m)
	case *map[string]string:
		return cliflag.NewMapStringString(m)
	}
	return nil
}

// Bind registers on fs --config and a flag per setting named by its toml
// key in keys (every setting when keys is empty), each named by its
// `flag` tag, and makes each `alias` tag (e.g. --root for --state-dir)
// another name of its flag on fs. It panics on a key Config does not have
// (a programming error).
func (f *Flags) Bind(fs *pflag.FlagSet, keys ...string) {
	if len(keys) == 0 {
		keys = Keys()
	}
	f.sets = append(f.sets, fs)
	fs.StringVar(&f.File, "config", "", "TOML file of settings, keys as 'kubernix config view' prints them; flags and KUBERNIX_* variables override it")
	aliases := map[string]string{}
	v := reflect.ValueOf(f.values).Elem()
	fields := settings()
	for _, key := range keys {
		i := slices.IndexFunc(fields, func(sf reflect.StructField) bool { return tomlKey(sf) == key })
		if i < 0 {
			panic(fmt.Sprintf("config: no setting %q", key))
		}
		field := fields[i]
		name, usage := field.Tag.Get("flag"), field.Tag.Get("usage")
		if name == "" {
			continue // a setting of the file only
		}
		usage = strings.ReplaceAll(usage, "{addons}", addons.Help())
		if alias := field.Tag.Get("alias"); alias != "" {
			usage += " (also --" + alias + ")"
		}
		usage += fmt.Sprintf(" [$%s%s]", EnvPrefix, strings.ToUpper(key))
		switch ptr := v.FieldByIndex(field.Index).Addr().Interface().(type) {
		case *string:
			fs.StringVar(ptr, name, *ptr, usage)
		case *int:
			fs.IntVar(ptr, name, *ptr, usage)
		case *bool:
			fs.BoolVar(ptr, name, *ptr, usage)
		case *[]string:
			fs.StringSliceVar(ptr, name, *ptr, usage)
		case *map[string]bool, *map[string]string:
			fs.Var(mapValue(ptr), name, usage)
		default:
			panic(fmt.Sprintf("config: field %s has unsupported type %s", field.Name, field.Type))
		}
		if alias := field.Tag.Get("alias"); alias != "" {
			aliases[alias] = name
		}
	}
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if target, ok := aliases[name]; ok {
			return pflag.NormalizedName(target)
		}
		return pflag.NormalizedName(name)
	})
}

// changed reports whether the flag name was set on a bound flag set.
func (f *Flags) changed(name string) bool {
	return slices.ContainsFunc(f.sets, func(fs *pflag.FlagSet) bool { return fs.Changed(name) })
}

// Load builds the effective config from, in rising precedence: Default(),
// the TOML file named by flags.File or $KUBERNIX_CONFIG, the KUBERNIX_*
// variables in environ (KEY=VALUE strings as from os.Environ), and the
// flags set on the command line; then it calls Resolve. flags may be nil.
// Errors wrap ErrInvalid and name the source (file path, variable or flag);
// Load does not call Validate.
func Load(flags *Flags, environ []string) (Config, error) {
	cfg, _, err := LoadExplicit(flags, environ)
	return cfg, err
}

// LoadExplicit is Load, and also returns the toml keys of the settings
// that one of the sources set explicitly (in field order): the others
// hold their default or the value Resolve derived.
func LoadExplicit(flags *Flags, environ []string) (Config, []string, error) {
	cfg := Default()
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, EnvPrefix) {
			env[k] = v
		}
	}
	file := env[EnvPrefix+"CONFIG"]
	if flags != nil && flags.File != "" {
		file = flags.File
	}
	var errs []error
	inFile := map[string]any{}
	if file != "" {
		var err error
		if inFile, err = readFile(&cfg, file); err != nil {
			errs = append(errs, err)
		}
	}
	var explicit []string
	v := reflect.ValueOf(&cfg).Elem()
	for _, field := range settings() {
		key, flag := tomlKey(field), field.Tag.Get("flag")
		_, set := inFile[key]
		envKey := EnvPrefix + strings.ToUpper(key)
		if raw, ok := env[envKey]; ok && flag != "" {
			set = true
			if err := setFromString(v.FieldByIndex(field.Index), raw); err != nil {
				errs = append(errs, fmt.Errorf("environment %s=%q: %w", envKey, raw, err))
			}
		}
		if flags != nil && flag != "" && flags.changed(flag) {
			set = true
			v.FieldByIndex(field.Index).Set(reflect.ValueOf(flags.values).Elem().FieldByIndex(field.Index))
		}
		if set {
			explicit = append(explicit, key)
		}
	}
	if len(errs) > 0 {
		return cfg, explicit, fmt.Errorf("%w:\n%w", ErrInvalid, errors.Join(errs...))
	}
	if cfg.Nodes >= 0 && len(cfg.NodeSpecs) > cfg.Nodes {
		// --nodes (or KUBERNIX_NODES) wins over the file: the nodes of
		// its [[nodes]] past the count are not started.
		cfg.NodeSpecs = cfg.NodeSpecs[:cfg.Nodes]
	}
	cfg.Resolve()
	return cfg, explicit, nil
}

// readFile decodes the TOML file at path into cfg as decodeFile does
// (versioned, strictly: every unknown key is an error), and returns its
// top-level keys and values as decoded into a map.
func readFile(cfg *Config, path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if err := decodeFile(cfg, path, data); err != nil {
		return nil, err
	}
	keys := map[string]any{}
	if err := toml.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return keys, nil
}

func setFromString(field reflect.Value, raw string) error {
	if value := mapValue(field.Addr().Interface()); value != nil {
		field.SetZero()
		return value.Set(raw)
	}
	switch field.Kind() {
	case reflect.String:
		field.SetString(raw)
	case reflect.Int:
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		field.SetInt(int64(n))
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("not a boolean (true/false/1/0)")
		}
		field.SetBool(b)
	case reflect.Slice:
		var items []string
		for _, item := range strings.Split(raw, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		field.Set(reflect.ValueOf(items))
	default:
		return fmt.Errorf("unsupported type %s", field.Type())
	}
	return nil
}

// Marshal renders c as TOML, keys as the --config file takes them, after
// the version keys (apiVersion = APIVersion, kind = Kind).
func Marshal(c Config) ([]byte, error) {
	var doc any = document{APIVersion: APIVersion, Kind: Kind, Config: c}
	if len(c.NodeSpecs) > 0 {
		// [[nodes]], one table a node: nodes past NodeSpecs get an empty one.
		specs := append(slices.Clone(c.NodeSpecs), make([]NodeSpec, max(c.Nodes-len(c.NodeSpecs), 0))...)
		doc = nodesDocument{APIVersion: APIVersion, Kind: Kind, Config: c, NodeSpecs: specs}
	}
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return buf.Bytes(), nil
}

// viewHeader opens MarshalExplicit's output.
const viewHeader = `# kubernix settings (kubernix up --config FILE reads this file).
# Lines starting with "# " hold a default or a value derived from other
# settings (the CIDR split from cidr, state_dir from name): they are shown,
# not set, so they follow the settings they come from. Remove "# " to fix one.
`

// MarshalExplicit renders c as TOML like Marshal, with the settings whose
// toml key is not in explicit commented out ("# key = value"), under a
// header saying so (the version keys stay set): read back with --config,
// it sets what explicit set and derives the rest again, so editing one
// setting (say cidr) moves the values derived from it.
func MarshalExplicit(c Config, explicit []string) ([]byte, error) {
	b, err := Marshal(c)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString(viewHeader)
	table := ""
	for line := range strings.Lines(string(b)) {
		key, _, _ := strings.Cut(line, " = ")
		if strings.HasPrefix(line, "[") {
			// A table's lines are the setting of its first key.
			table, _, _ = strings.Cut(strings.Trim(strings.TrimSpace(line), "[]"), ".")
		}
		if table != "" {
			key = table
		}
		if strings.TrimSpace(line) != "" && !slices.Contains(explicit, key) && key != APIVersionKey && key != KindKey {
			out.WriteString("# ")
		}
		out.WriteString(line)
	}
	return out.Bytes(), nil
}
