// Package preflight turns a config and the host's view of it (root,
// rootless on either side of rootlesskit, dry run) into a plan that passed
// every check `up` makes (Prepare): the ports chosen, the config validated
// again after one moved, the doctor's checks, the host's listeners,
// ranges and names, what the config changes since the last run, the
// components' own checks of their settings. It reads the host and changes
// nothing on it; pkg/cluster starts what it passed.
package preflight
