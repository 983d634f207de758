package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"

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

// Flags binds the command-line flags of every Config setting. Create it with
// NewFlags before parsing, then pass it to Load.
type Flags struct {
	set    *pflag.FlagSet
	values *Config
	// File is the --config file, read before the environment and flags.
	File string
}

// NewFlags registers a flag per Config setting (named by its `flag` tag, with
// an alias from its `alias` tag, e.g. --root for --state-dir) and --config on fs.
func NewFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{set: fs, values: new(Config)}
	*f.values = Default()
	fs.StringVar(&f.File, "config", "", "TOML file of settings (keys as in `kubernix config view`); flags and KUBERNIX_* variables override it")
	aliases := map[string]string{}
	v := reflect.ValueOf(f.values).Elem()
	for i, field := range reflect.VisibleFields(v.Type()) {
		name, usage := field.Tag.Get("flag"), field.Tag.Get("usage")
		usage = strings.ReplaceAll(usage, "{addons}", addons.Help())
		usage += fmt.Sprintf(" [$%s%s]", EnvPrefix, strings.ToUpper(field.Tag.Get("toml")))
		switch ptr := v.Field(i).Addr().Interface().(type) {
		case *string:
			fs.StringVar(ptr, name, *ptr, usage)
		case *int:
			fs.IntVar(ptr, name, *ptr, usage)
		case *bool:
			fs.BoolVar(ptr, name, *ptr, usage)
		case *[]string:
			fs.StringSliceVar(ptr, name, *ptr, usage)
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
	return f
}

// Load builds the effective config from, in rising precedence: Default(),
// the TOML file named by flags.File or $KUBERNIX_CONFIG, the KUBERNIX_*
// variables in environ (KEY=VALUE strings as from os.Environ), and the
// flags set on the command line; then it calls Resolve. flags may be nil.
// Errors wrap ErrInvalid and name the source (file path, variable or flag);
// Load does not call Validate.
func Load(flags *Flags, environ []string) (Config, error) {
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
	if file != "" {
		if err := readFile(&cfg, file); err != nil {
			errs = append(errs, err)
		}
	}
	v := reflect.ValueOf(&cfg).Elem()
	for i, field := range reflect.VisibleFields(v.Type()) {
		key := EnvPrefix + strings.ToUpper(field.Tag.Get("toml"))
		if raw, ok := env[key]; ok {
			if err := setFromString(v.Field(i), raw); err != nil {
				errs = append(errs, fmt.Errorf("environment %s=%q: %w", key, raw, err))
			}
		}
		if flags != nil && flags.set.Changed(field.Tag.Get("flag")) {
			v.Field(i).Set(reflect.ValueOf(flags.values).Elem().Field(i))
		}
	}
	if len(errs) > 0 {
		return cfg, fmt.Errorf("%w:\n%w", ErrInvalid, errors.Join(errs...))
	}
	cfg.Resolve()
	return cfg, nil
}

func readFile(cfg *Config, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		var strict *toml.StrictMissingError
		var decodeErr *toml.DecodeError
		switch {
		case errors.As(err, &strict):
			return fmt.Errorf("config file %s: %s", path, strict.String())
		case errors.As(err, &decodeErr):
			row, col := decodeErr.Position()
			return fmt.Errorf("config file %s:%d:%d: %s", path, row, col, decodeErr.Error())
		}
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

func setFromString(field reflect.Value, raw string) error {
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

// Marshal renders c as TOML, keys as the --config file takes them.
func Marshal(c Config) ([]byte, error) {
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return buf.Bytes(), nil
}
