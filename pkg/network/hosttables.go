package network

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coreos/go-iptables/iptables"
	"sigs.k8s.io/knftables"

	"github.com/kubernix/kubernix/internal/made"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// The host's iptables tables the cluster's chains hook into (see chains)
// are, with the iptables-nft backend, nftables tables of family ip named
// nat and filter, and of family ip6 named filter (ip6tables). iptables
// makes such a table, with the base chain of the hook, when the first
// rule goes into it, and never removes it: a host that had none has empty
// tables after the cluster's rules are gone.
// kubernix removes the ones it made, once empty, as it removes everything
// else it made. Clusters share them, so the record of what kubernix made
// is the host's, not a cluster's: hostTablesFile. (With the legacy
// backend the tables are the kernel's and never nftables ones: nothing
// is recorded.)

// hostTablesFile is the record of the iptables tables kubernix made on
// this host: a JSON array of their keys (tableKey), under the state root of root's
// clusters, the only ones that touch the host's tables. It is "" (no
// record) in a user namespace: a rootless cluster's tables are in
// rootlesskit's network namespace, and go with it.
func hostTablesFile() string {
	if rootless.InUserNamespace() {
		return ""
	}
	return filepath.Join(config.StateRoot(), ".host", "iptables-tables.json")
}

// withHostTables runs f under the host-wide lock of the record file:
// every check of which tables exist, change of the tables' rules and
// update of the record goes under it, so that one cluster's down never
// finds a table empty, and deletes it, while another's up is between
// finding it and adding its rules. A file of "" (rootless: the tables are
// rootlesskit's network namespace's alone) takes no lock.
func withHostTables(file string, f func() error) error {
	if file == "" {
		return f()
	}
	return made.Locked(file, f)
}

// hostTable returns an nftables handle on the table of that key (see
// tableKey).
type hostTable func(key string) (knftables.Interface, error)

// tableKey names the nftables table of chain c in the record file and to
// hostTable: the table's name for family ip ("nat", "filter": records
// written before IPv6 hold these), "ip6 " and the name for family ip6.
func tableKey(c hookedChain) string {
	if c.proto == iptables.ProtocolIPv6 {
		return "ip6 " + c.table
	}
	return c.table
}

// splitTableKey returns the family and the name of the table of key.
func splitTableKey(key string) (knftables.Family, string) {
	if name, ok := strings.CutPrefix(key, "ip6 "); ok {
		return knftables.IPv6Family, name
	}
	return knftables.IPv4Family, key
}

// describeTable names the table of key as nft does, e.g. "ip6 filter".
func describeTable(key string) string {
	family, name := splitTableKey(key)
	return string(family) + " " + name
}

// nftHostTable is hostTable on the host's nftables.
func nftHostTable(key string) (knftables.Interface, error) {
	return knftables.New(splitTableKey(key))
}

// hookTables lists the table keys of the chains.
func hookTables(chains []hookedChain) []string {
	var out []string
	for _, c := range chains {
		if k := tableKey(c); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// missingTables returns the tables of tables that do not exist as
// nftables tables now.
func missingTables(ctx context.Context, open hostTable, tables []string) []string {
	var out []string
	for _, t := range tables {
		if _, exists, err := tableContent(ctx, open, t); err == nil && !exists {
			out = append(out, t)
		}
	}
	return out
}

// recordMadeTables adds to the record file those of missing that exist
// now: kubernix's rules made them. A file of "" records nothing.
func recordMadeTables(ctx context.Context, open hostTable, file string, missing []string) error {
	if file == "" {
		return nil
	}
	var created []string
	for _, t := range missing {
		if _, exists, err := tableContent(ctx, open, t); err == nil && exists {
			created = append(created, t)
		}
	}
	if len(created) == 0 {
		return nil
	}
	recorded, err := made.Read(file)
	if err != nil {
		return err
	}
	for _, t := range created {
		if !slices.Contains(recorded, t) {
			recorded = append(recorded, t)
		}
	}
	return made.Write(file, recorded)
}

// removeMadeTables deletes each table of the record file that is empty
// (chains without rules, nothing else: no cluster's rules are left in
// it, nor anyone else's) and forgets it, as it forgets one that is gone.
// A table in use stays recorded, for the down that empties it. A file of
// "" removes nothing.
func removeMadeTables(ctx context.Context, open hostTable, file string) error {
	if file == "" {
		return nil
	}
	recorded, err := made.Read(file)
	if err != nil || len(recorded) == 0 {
		return err
	}
	var keep []string
	var errs []error
	for _, t := range recorded {
		empty, exists, err := tableContent(ctx, open, t)
		switch {
		case err != nil:
			errs = append(errs, err)
			keep = append(keep, t)
		case !exists:
		case !empty:
			keep = append(keep, t)
		default:
			if err := deleteTable(ctx, open, t); err != nil {
				errs = append(errs, err)
				keep = append(keep, t)
			}
		}
	}
	if err := made.Write(file, keep); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// tableContent reports whether the table of key exists, and if so
// whether it is empty: chains without rules, and no other object (set,
// map, counter, flowtable...). It runs nft twice (each lists the whole
// table), not once per chain and kind of object.
func tableContent(ctx context.Context, open hostTable, key string) (empty, exists bool, err error) {
	nft, err := open(key)
	if err != nil {
		return false, false, fmt.Errorf("nftables table %s: %w", describeTable(key), err)
	}
	objs, err := nft.ListAll(ctx)
	if knftables.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("nftables table %s: %w", describeTable(key), err)
	}
	for kind, names := range objs {
		// nft lists the table itself among its objects (the fake does not).
		if kind != "table" && kind != "chain" && len(names) > 0 {
			return false, true, nil
		}
	}
	rules, err := nft.ListRules(ctx, "") // every chain's
	if knftables.IsNotFound(err) {
		return false, false, nil // deleted meanwhile (by another cluster's down)
	}
	if err != nil {
		return false, true, fmt.Errorf("nftables table %s: %w", describeTable(key), err)
	}
	return len(rules) == 0, true, nil
}

// deleteTable deletes the table of key.
func deleteTable(ctx context.Context, open hostTable, key string) error {
	nft, err := open(key)
	if err != nil {
		return err
	}
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("delete the empty nftables table %s kubernix made: %w", describeTable(key), err)
	}
	return nil
}
