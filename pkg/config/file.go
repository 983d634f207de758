package config

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/pelletier/go-toml/v2"
)

// The version keys of a --config file. A file names its format with
// apiVersion and kind, as Kubernetes objects and kind's and k3d's cluster
// files do; a file without them (the files written before the format was
// versioned) is read as the current version.
const (
	// APIVersion is the current format of the config file, the value of
	// its apiVersion key.
	APIVersion = "kubernix.dev/v1alpha1"
	// Kind is the value of the config file's kind key.
	Kind = "Cluster"
	// APIVersionKey and KindKey are the toml keys of the version keys.
	APIVersionKey = "apiVersion"
	KindKey       = "kind"
)

// APIVersions lists every apiVersion kubernix reads, oldest first.
var APIVersions = []string{APIVersion}

// document is a config file: the version keys, then the settings.
type document struct {
	APIVersion string `toml:"apiVersion"`
	Kind       string `toml:"kind"`
	Config
}

// nodesDocument is a config file whose nodes key is a list of tables
// ([[nodes]]), one a node, rather than a count: its NodeSpecs field hides
// Config.Nodes.
type nodesDocument struct {
	APIVersion string `toml:"apiVersion"`
	Kind       string `toml:"kind"`
	Config
	NodeSpecs []NodeSpec `toml:"nodes"`
}

// decodeFile decodes data, the config file path, into cfg strictly. It
// refuses an apiVersion or kind kubernix does not know (an absent one
// reads as the current), and reports every unknown key at once with its
// line and the known key it is nearest to. Errors name path.
func decodeFile(cfg *Config, path string, data []byte) error {
	var head struct {
		APIVersion any `toml:"apiVersion"`
		Kind       any `toml:"kind"`
		Nodes      any `toml:"nodes"`
	}
	if err := toml.Unmarshal(data, &head); err != nil {
		return fileError(path, err)
	}
	var errs []error
	if v, ok := head.APIVersion.(string); head.APIVersion != nil && (!ok || !slices.Contains(APIVersions, v)) {
		errs = append(errs, fmt.Errorf("config file %s: %s %s: unknown version (known: %s)", path, APIVersionKey, toText(head.APIVersion), strings.Join(APIVersions, ", ")))
	}
	if v, ok := head.Kind.(string); head.Kind != nil && (!ok || v != Kind) {
		errs = append(errs, fmt.Errorf("config file %s: %s %s: unknown kind (known: %s)", path, KindKey, toText(head.Kind), Kind))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	decoded := *cfg
	var err error
	if _, list := head.Nodes.([]any); list {
		doc := nodesDocument{Config: decoded}
		err = decodeStrict(data, &doc)
		decoded, decoded.NodeSpecs, decoded.Nodes = doc.Config, doc.NodeSpecs, len(doc.NodeSpecs)
	} else {
		doc := document{Config: decoded}
		err = decodeStrict(data, &doc)
		decoded = doc.Config
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		for _, e := range strict.Errors {
			errs = append(errs, unknownKey(path, e))
		}
		return errors.Join(errs...)
	}
	if err != nil {
		return fileError(path, err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return fileError(path, err)
	}
	relativeTo(dir, &decoded)
	*cfg = decoded
	return nil
}

// relativeTo makes the relative paths cfg was given by a file in dir
// (its audit policy and mounts' host paths) the file's: dir/path.
func relativeTo(dir string, cfg *Config) {
	paths := []*string{&cfg.AuditPolicy}
	for i := range cfg.NodeSpecs {
		for j := range cfg.NodeSpecs[i].Mounts {
			paths = append(paths, &cfg.NodeSpecs[i].Mounts[j].HostPath)
		}
	}
	for _, p := range paths {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// decodeStrict decodes data into doc, refusing unknown keys.
func decodeStrict(data []byte, doc any) error {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(doc)
}

// toText renders a decoded TOML value as it would read in the file.
func toText(v any) string {
	b, err := toml.Marshal(map[string]any{"v": v})
	if err != nil {
		return fmt.Sprint(v)
	}
	_, text, _ := strings.Cut(strings.TrimSpace(string(b)), " = ")
	return text
}

// fileError names path, and the line and column of a syntax or type error.
func fileError(path string, err error) error {
	var decodeErr *toml.DecodeError
	if errors.As(err, &decodeErr) {
		row, col := decodeErr.Position()
		return fmt.Errorf("config file %s:%d:%d: %s", path, row, col, typeErrorText(decodeErr.Error()))
	}
	return fmt.Errorf("config file %s: %w", path, err)
}

// goTypeError matches go-toml's type error, which names a Go struct field
// of this package: "toml: cannot decode TOML string into struct field
// config.document.Nodes of type int".
var goTypeError = regexp.MustCompile(`^toml: cannot decode TOML (\w+) into struct field config\.(\w+)\.(\w+) of type \S+$`)

// fileStructs are the structs a config file decodes into, by Go name.
var fileStructs = map[string]reflect.Type{
	"document": reflect.TypeFor[document](), "nodesDocument": reflect.TypeFor[nodesDocument](),
	"Components": reflect.TypeFor[Components](), "Component": reflect.TypeFor[Component](),
	"ContainerdComponent": reflect.TypeFor[ContainerdComponent](), "NodeSpec": reflect.TypeFor[NodeSpec](),
	"Mount": reflect.TypeFor[Mount](), "PortMapping": reflect.TypeFor[PortMapping](),
}

// typeErrorText says a go-toml type error msg in the file's terms: the
// key and the TOML type it takes ("nodes: a string, where an integer
// belongs"), or returns msg as it is.
func typeErrorText(msg string) string {
	m := goTypeError.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	t, ok := fileStructs[m[2]]
	if !ok {
		return msg
	}
	field, ok := t.FieldByName(m[3])
	if !ok {
		return msg
	}
	want := tomlType(field.Type)
	if tomlKey(field) == "nodes" {
		want = "integer (or [[nodes]] tables)"
	}
	return fmt.Sprintf("%s: a TOML %s, where %s belongs", tomlKey(field), m[1], article(want))
}

// article puts "a" or "an" before a noun phrase, unless it has one.
func article(s string) string {
	switch {
	case strings.HasPrefix(s, "a "):
		return s
	case strings.IndexAny(s[:1], "aeiou") == 0:
		return "an " + s
	}
	return "a " + s
}

// unknownKey describes e, an unknown key (or table) of the file path:
// its line, and the nearest known key when one is near.
func unknownKey(path string, e toml.DecodeError) error {
	row, _ := e.Position()
	key := e.Key()
	msg := fmt.Sprintf("config file %s:%d: unknown key %q", path, row, strings.Join(key, "."))
	if len(key) == 0 {
		return errors.New(msg)
	}
	parent, last := key[:len(key)-1], key[len(key)-1]
	if near := Nearest(last, knownKeys(parent)); near != "" {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(append(slices.Clone(parent), near), "."))
		return errors.New(msg)
	}
	// go-toml names a key of an inline table in an array (mounts =
	// [{...}]) without the array: try the tables one level down.
	for _, table := range knownKeys(parent) {
		sub := append(slices.Clone(parent), table)
		if keys := knownKeys(sub); len(keys) > 0 && len(parent) > 0 {
			if near := Nearest(last, keys); near != "" {
				msg += fmt.Sprintf("; did you mean %s?", strings.Join(append(sub, near), "."))
				break
			}
		}
	}
	return errors.New(msg)
}

// knownKeys lists the keys the file may hold in the table at path (the
// top level when empty): the toml keys of the struct the path leads to,
// through Config, Components and NodeSpec (nodes is [[nodes]] there).
func knownKeys(path []string) []string {
	if len(path) == 0 {
		return append([]string{APIVersionKey, KindKey}, Keys()...)
	}
	t := reflect.TypeFor[Config]()
	for i, name := range path {
		if i == 0 && name == "nodes" {
			t = reflect.TypeFor[NodeSpec]()
			continue
		}
		field, ok := fieldByKey(t, name)
		if !ok {
			return nil
		}
		for t = field.Type; t.Kind() == reflect.Slice; t = t.Elem() {
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
	}
	var keys []string
	for _, field := range reflect.VisibleFields(t) {
		if !field.Anonymous {
			keys = append(keys, tomlKey(field))
		}
	}
	return keys
}

// fieldByKey finds the field of struct t whose toml key is key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for _, field := range reflect.VisibleFields(t) {
		if !field.Anonymous && tomlKey(field) == key {
			return field, true
		}
	}
	return reflect.StructField{}, false
}

// Nearest returns the key of known that key most likely misspells, or ""
// when none is near: one equal to key in lower case with dashes as
// underscores (a flag's spelling, node-cidr for node_cidr), else the
// nearest within an edit distance of 2 (first in known order on a tie),
// else one that key of 4 or more bytes is a prefix of.
func Nearest(key string, known []string) string {
	norm := strings.ReplaceAll(strings.ToLower(key), "-", "_")
	best, bestDist := "", 3
	for _, k := range known {
		lk := strings.ToLower(k)
		if lk == norm {
			return k
		}
		if d := levenshtein.ComputeDistance(norm, lk); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" || len(norm) < 4 {
		return best
	}
	for _, k := range known {
		if strings.HasPrefix(strings.ToLower(k), norm) {
			return k
		}
	}
	return ""
}
