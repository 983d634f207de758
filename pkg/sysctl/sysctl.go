// Package sysctl reads and writes kernel parameters under /proc/sys by
// their dotted names, e.g. "net.ipv4.ip_forward".
package sysctl

import (
	"fmt"
	"os"
	"strings"
)

// Get reads a sysctl by its dotted name, e.g. "net.ipv4.ip_forward".
func Get(name string) (string, error) {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Set writes a sysctl by its dotted name.
func Set(name, value string) error {
	err := os.WriteFile("/proc/sys/"+strings.ReplaceAll(name, ".", "/"), []byte(value), 0o644)
	if err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", name, value, err)
	}
	return nil
}

// HasIPv6 reports whether the kernel runs with IPv6: /proc/sys/net/ipv6
// exists (it does not when the kernel was built without IPv6 or booted
// with ipv6.disable=1).
func HasIPv6() bool {
	_, err := os.Stat("/proc/sys/net/ipv6")
	return err == nil
}
