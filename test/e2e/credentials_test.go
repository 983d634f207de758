package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
)

// TestCredentials checks, on the shared cluster, how its
// credentials are split (issue #11, item 3): etcd refuses client
// certificates of the cluster CA and takes the apiserver's; the user's
// context is in the kubernix:cluster-admins group, not system:masters, and
// can still administer the cluster; the apiserver writes an audit log; the
// logs and the images folder are not readable by other users.
func TestCredentials(t *testing.T) {
	e := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	paths := config.Paths{State: e.stateDir}
	pkiDir := paths.PKI()

	t.Run("etcd trusts only the etcd CA", func(t *testing.T) {
		api, err := process.ReadRun(paths.Run(config.ControlPlaneScope, "kube-apiserver"))
		if err != nil {
			t.Fatal(err)
		}
		flag := func(name string) string {
			for _, a := range api.Argv {
				if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
					return v
				}
			}
			t.Fatalf("kube-apiserver has no --%s: %q", name, api.Argv)
			return ""
		}
		url := flag("etcd-servers") + "/health"
		// Whichever CA signed etcd's serving certificate: the question
		// is whom etcd accepts as a client.
		roots := x509.NewCertPool()
		for _, f := range []string{"ca.crt", "etcd-ca.crt", filepath.Base(flag("etcd-cafile"))} {
			if b, err := os.ReadFile(filepath.Join(pkiDir, f)); err == nil {
				roots.AppendCertsFromPEM(b)
			}
		}
		get := func(certFile, keyFile string) (string, error) {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				Proxy:           nil,
				TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
			}}
			defer client.CloseIdleConnections()
			resp, err := client.Get(url)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			return string(b), err
		}

		if body, err := get(flag("etcd-certfile"), flag("etcd-keyfile")); err != nil || !strings.Contains(body, `"health":"true"`) {
			t.Errorf("the apiserver's etcd client certificate: %q, %v; want etcd healthy", body, err)
		}
		node := e.name + "-node-0"
		for _, who := range []string{"admin", "kube-proxy", "kubelet/" + node + "/client"} {
			body, err := get(filepath.Join(pkiDir, who+".crt"), filepath.Join(pkiDir, who+".key"))
			if err == nil {
				t.Errorf("etcd answered a client with the %s certificate of the cluster CA: %q", who, body)
				continue
			}
			// Refused in the TLS handshake, not for another reason.
			if !strings.Contains(err.Error(), "tls: ") {
				t.Errorf("%s: %v, want a TLS refusal", who, err)
			}
		}
	})

	t.Run("admin context is cluster-admins, not system:masters", func(t *testing.T) {
		var review authenticationv1.SelfSubjectReview
		out := e.mustKubectl(ctx, "auth", "whoami", "-o", "json")
		if err := json.Unmarshal([]byte(out), &review); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		u := review.Status.UserInfo
		if !slices.Contains(u.Groups, "kubernix:cluster-admins") || slices.Contains(u.Groups, "system:masters") {
			t.Errorf("user %s in groups %q: want kubernix:cluster-admins and not system:masters", u.Username, u.Groups)
		}
		e.mustKubectl(ctx, "create", "namespace", "creds-check")
		t.Cleanup(func() { e.kubectl(context.Background(), "delete", "namespace", "creds-check", "--wait=false") })
		if got := strings.TrimSpace(e.mustKubectl(ctx, "auth", "can-i", "*", "*", "--all-namespaces")); got != "yes" {
			t.Errorf("can-i * * = %q, want yes", got)
		}
	})

	t.Run("audit log", func(t *testing.T) {
		path := paths.Log(config.ControlPlaneScope, "audit")
		// The apiserver writes the event once the response is sent.
		eventually(t, 30*time.Second, "the namespace's creation in "+path, func() error {
			events, err := readAudit(path)
			if err != nil {
				return err
			}
			for _, ev := range events {
				if ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "namespaces" &&
					ev.ObjectRef.Name == "creds-check" && ev.Stage == auditv1.StageResponseComplete {
					if ev.Level != auditv1.LevelMetadata || ev.RequestObject != nil || ev.ResponseObject != nil {
						t.Errorf("event %+v: want level Metadata, no bodies", ev)
					}
					if !slices.Contains(ev.User.Groups, "kubernix:cluster-admins") {
						t.Errorf("event user %+v, want the admin", ev.User)
					}
					return nil
				}
			}
			return fmt.Errorf("%d events, none of the creation", len(events))
		})
	})

	t.Run("logs and images not readable by others", func(t *testing.T) {
		for _, root := range []string{filepath.Join(e.stateDir, "logs"), paths.Images()} {
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				if perm := fi.Mode().Perm(); perm&0o007 != 0 {
					t.Errorf("%s: mode %v, open to other users", p, perm)
				}
				if p == root && fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s: mode %v, want 0700", p, fi.Mode().Perm())
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}
	})
}

// readAudit parses the audit log at path, one JSON event a line.
func readAudit(path string) ([]auditv1.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w: %s", path, err, sc.Bytes())
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New(path + " has no events")
	}
	return out, nil
}
