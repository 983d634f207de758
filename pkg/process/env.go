package process

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// passedEnv are the variables of the supervisor's environment a
// component's process gets (Environ). Everything else stays behind: a
// variable of the caller's shell such as ETCD_NAME, REGISTRY_HTTP_ADDR or
// CONTAINERD_ADDRESS would reconfigure the component (etcd and the
// registry read their settings from such variables), and GODEBUG or
// GOMAXPROCS would change its Go runtime. LANG and LC_* stay behind too:
// the components are Go programs that ignore the locale, and the C tools
// they run (iptables, ip, mount) print what they parse in the C locale.
func passedEnv() []string {
	return []string{
		"PATH", // the components run system tools (iptables, ip) and find shims by name
		"HOME", // a component's per-user files, e.g. the kubelet's ~/.docker/config.json
		"TZ",   // log timestamps in the time zone the caller sees
		// Pulls and webhooks through the caller's proxy, as net/http reads them.
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	}
}

// Environ is the defined environment of a component's process: the
// entries of supervisor (KEY=VALUE strings, as from os.Environ) whose key
// is PATH, HOME, TZ or a proxy variable (HTTP_PROXY, HTTPS_PROXY,
// NO_PROXY, upper or lower case), then set, whose entries replace passed
// ones of the same key. The result is sorted by key; a key set twice keeps
// its last value, and an entry without "=" is dropped.
func Environ(supervisor []string, set ...string) []string {
	pass := passedEnv()
	byKey := map[string]string{}
	for _, kv := range supervisor {
		if k, _, ok := strings.Cut(kv, "="); ok && slices.Contains(pass, k) {
			byKey[k] = kv
		}
	}
	for _, kv := range set {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			byKey[k] = kv
		}
	}
	out := make([]string, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, byKey[k])
	}
	return out
}

// RedactEnv returns env (KEY=VALUE strings) with the password of each
// value that is a URL with one (a proxy's, say) replaced by "xxxxx", as
// url.URL.Redacted does: what run.json and `up --dry-run` show. The result
// is a new slice.
func RedactEnv(env []string) []string {
	out := slices.Clone(env)
	for i, kv := range out {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				out[i] = k + "=" + u.Redacted()
			}
		}
	}
	return out
}
