package config

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/kubernix/kubernix/pkg/addons"
)

// referenceIntro opens Reference's document.
const referenceIntro = `# kubernix configuration file reference

<!-- Generated from pkg/config (the Config struct's tags) by
     go test ./pkg/config -run TestReference -update; do not edit. -->

kubernix reads a TOML file of settings with ` + "`--config FILE`" + ` (or
` + "`$KUBERNIX_CONFIG`" + `). Precedence, lowest first: defaults, the file, the
` + "`KUBERNIX_*`" + ` environment variables, the command-line flags.
` + "`kubernix config view`" + ` prints the effective settings in this format, and
` + "`kubernix config validate FILE`" + ` checks a file without changing anything.
An annotated example is examples/cluster.toml.

The file is read strictly: a key not listed here is an error naming its line
and the key it is near (a flag's spelling, ` + "`node-cidr`" + `, suggests the key
` + "`node_cidr`" + `). Every problem of a file is reported at once; kubernix exits 2.

## Version

| Key | Value | |
|---|---|---|
| ` + "`apiVersion`" + ` | %s | the format of the file; one of %s. Another value is refused. |
| ` + "`kind`" + ` | ` + "`%s`" + ` | what the file describes. Another value is refused. |

Both may be omitted: a file without them (as written before the format was
versioned, or a cluster's recorded ` + "`kubernix.toml`" + `) is read as the current
version. ` + "`config view`" + ` and the recorded ` + "`<state dir>/kubernix.toml`" + ` write both.

## Settings

Each key is also read from the environment variable ` + "`KUBERNIX_<KEY>`" + ` (the key in
upper case; an array as comma-separated values) and set by the flag shown.
A default of "—" means unset: the description says what kubernix uses then.

| Key | Type | Default | Flag | Environment | Description |
|---|---|---|---|---|---|
`

// Reference returns the Markdown reference of the config file: its
// version keys, then a table row per setting, in field order, with its
// toml key, TOML type, default (Default()), flag, environment variable
// and usage text, all read from the Config struct and its tags.
func Reference() []byte {
	var out bytes.Buffer
	fmt.Fprintf(&out, referenceIntro, "`"+APIVersion+"`", "`"+strings.Join(APIVersions, "`, `")+"`", Kind)
	defaults := reflect.ValueOf(Default())
	for _, field := range settings() {
		key := tomlKey(field)
		flag, env := "—", "—"
		if name := field.Tag.Get("flag"); name != "" {
			flag = "`--" + name + "`"
			env = "`" + EnvPrefix + strings.ToUpper(key) + "`"
		}
		if alias := field.Tag.Get("alias"); alias != "" {
			flag += ", `--" + alias + "`"
		}
		usage := strings.ReplaceAll(field.Tag.Get("usage"), "{addons}", addons.Help())
		fmt.Fprintf(&out, "| `%s` | %s | %s | %s | %s | %s |\n", key, tomlType(field.Type), defaultText(defaults.FieldByIndex(field.Index)),
			flag, env, markdownEscaper.Replace(usage))
	}
	out.WriteString(referenceTables)
	for _, table := range []struct {
		heading string
		t       reflect.Type
	}{
		{"`[components.<name>]`: one of " + componentNames(), reflect.TypeFor[Component]()},
		{"`[components.containerd]`, also", reflect.TypeFor[ContainerdComponent]()},
		{"`[[nodes]]`: one table a node, in order (node 0 first)", reflect.TypeFor[NodeSpec]()},
		{"`nodes[].mounts`: an array of inline tables", reflect.TypeFor[Mount]()},
		{"`nodes[].ports`: an array of inline tables", reflect.TypeFor[PortMapping]()},
	} {
		fmt.Fprintf(&out, "\n### %s\n\n| Key | Type | Description |\n|---|---|---|\n", table.heading)
		for _, field := range reflect.VisibleFields(table.t) {
			if field.Anonymous || (table.t == reflect.TypeFor[ContainerdComponent]() && field.Index[0] == 0) {
				continue
			}
			fmt.Fprintf(&out, "| `%s` | %s | %s |\n", tomlKey(field), tomlType(field.Type), markdownEscaper.Replace(field.Tag.Get("usage")))
		}
	}
	return out.Bytes()
}

// referenceTables introduces the reference's sections of the file's tables.
const referenceTables = `
## Tables

These are set in the file only. A component's ` + "`args`" + ` come after kubernix's
own flags, and a flag kubernix sets too takes the given value instead:
` + "`kubernix up --dry-run`" + ` prints each command line as it will run. The
` + "`nodes`" + ` key is either the number of nodes or a list of ` + "`[[nodes]]`" + ` tables,
one a node; ` + "`--nodes`" + ` may add nodes after those the list describes, or leave its last ones out.
`

// componentNames lists the tables of Components, for the reference.
func componentNames() string {
	var names []string
	for _, field := range reflect.VisibleFields(reflect.TypeFor[Components]()) {
		names = append(names, "`"+tomlKey(field)+"`")
	}
	return strings.Join(names, ", ")
}

// markdownEscaper keeps a usage text literal in a Markdown table cell:
// "<name>" is not an HTML tag, "|" does not end the cell.
var markdownEscaper = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")

// tomlType names the TOML type a field of type t is written as.
func tomlType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int:
		return "integer"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice:
		return "array of " + tomlType(t.Elem()) + "s"
	case reflect.Map:
		return "table of " + tomlType(t.Elem()) + "s"
	case reflect.Struct:
		return "table"
	}
	return "string"
}

// defaultText renders a default as it reads in the file, "—" when unset.
func defaultText(v reflect.Value) string {
	if v.IsZero() && v.Kind() != reflect.Bool && v.Kind() != reflect.Int {
		return "—"
	}
	return "`" + toText(v.Interface()) + "`"
}
