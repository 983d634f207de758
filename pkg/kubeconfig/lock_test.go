package kubeconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/process"
)

func TestStaleLock(t *testing.T) {
	here := LockRecord{Owner: "kubernix", PID: 100, StartTime: 5000, PIDNamespace: "pid:[1]", BootID: "boot-a", Host: "h"}
	// The holder in the record runs as pid 42, started at tick 777.
	alive := func(pid int, start uint64) bool { return pid == 42 && start == 777 }
	holder := func(change func(*LockRecord)) []byte {
		r := LockRecord{Owner: "kubernix", PID: 42, StartTime: 777, PIDNamespace: "pid:[1]", BootID: "boot-a", Host: "h"}
		if change != nil {
			change(&r)
		}
		b, _ := json.Marshal(r)
		return append(b, '\n')
	}
	tests := []struct {
		name      string
		content   []byte
		here      LockRecord
		wantStale bool
		wantWhy   string
	}{
		{"live holder", holder(nil), here, false, "pid 42, which is running"},
		{"holder gone", holder(func(r *LockRecord) { r.PID = 43 }), here, true, "pid 43, which is no longer running"},
		{"PID reused by a later process", holder(func(r *LockRecord) { r.StartTime = 700 }), here, true, "no longer running"},
		{"taken before a reboot", holder(func(r *LockRecord) { r.BootID = "boot-old" }), here, true, "before this host last booted"},
		{"another PID namespace", holder(func(r *LockRecord) { r.PID, r.PIDNamespace = 43, "pid:[2]" }), here, false, "another PID namespace"},
		{"another host", holder(func(r *LockRecord) { r.PID, r.Host, r.BootID = 43, "other", "boot-b" }), here, false, "on host other"},
		{"kubectl's empty lock", nil, here, false, "not taken by kubernix"},
		{"an older kubernix's bare pid", []byte("43\n"), here, false, "not taken by kubernix"},
		{"a record being written", holder(nil)[:20], here, false, "not taken by kubernix"},
		{"someone else's JSON", []byte(`{"owner":"other","pid":43}`), here, false, "not taken by kubernix"},
		{"incomplete record", holder(func(r *LockRecord) { r.PID, r.StartTime = 43, 0 }), here, false, "incomplete"},
		{"this process's view incomplete", holder(func(r *LockRecord) { r.PID = 43 }), LockRecord{Owner: "kubernix", PID: 100}, false, "incomplete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stale, why := staleLock(tt.content, tt.here, alive)
			if stale != tt.wantStale || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("staleLock = %v, %q; want %v, %q", stale, why, tt.wantStale, tt.wantWhy)
			}
		})
	}
}

// deadRecord is the lock record of a process that ran and exited, as a
// kubernix killed mid-merge leaves it.
func deadRecord(t *testing.T) LockRecord {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	rec := ownLockRecord()
	rec.PID = cmd.Process.Pid
	start, err := process.StartTime(rec.PID)
	if err != nil {
		t.Fatal(err)
	}
	rec.StartTime = start
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return rec
}

func writeLock(t *testing.T, dst string, content []byte) {
	t.Helper()
	if err := os.WriteFile(dst+".lock", content, 0o600); err != nil {
		t.Fatal(err)
	}
}

func marshalRecord(t *testing.T, rec LockRecord) []byte {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestMergeBreaksStaleLock: a lock kubernix took whose process is gone
// (killed, or its PID reused by another process) is removed by Merge,
// which says so on its log and merges; the lock file of Merge itself is
// removed afterwards.
func TestMergeBreaksStaleLock(t *testing.T) {
	b := newPKI(t)
	reused := ownLockRecord() // this process's PID, another start time
	reused.StartTime--
	tests := []struct {
		name string
		rec  func(t *testing.T) LockRecord
	}{
		{"holder killed", deadRecord},
		{"PID reused", func(*testing.T) LockRecord { return reused }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "config")
			rec := tt.rec(t)
			writeLock(t, dst, marshalRecord(t, rec))
			var logBuf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logBuf, nil))
			if err := merge(Target{Path: dst}, writeSrc(t, b, testContext, testServer), testContext, time.Second, log); err != nil {
				t.Fatalf("Merge with a stale lock: %v", err)
			}
			checkContext(t, dst, testContext, testServer, b)
			checkNoLock(t, dst)
			for _, want := range []string{"removed a stale lock", dst + ".lock", "pid " + strconv.Itoa(rec.PID), "no longer running"} {
				if !strings.Contains(logBuf.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, logBuf.String())
				}
			}
		})
	}
}

// TestMergeKeepsLock: a lock whose holder may still run, or that is not
// kubernix's, is never removed: Merge (and Remove) wait for it, then fail
// with ErrLocked naming the file and its holder, and the lock file and
// kubeconfig stay as they were.
func TestMergeKeepsLock(t *testing.T) {
	b := newPKI(t)
	sleeper := exec.Command("sleep", "1000")
	if err := sleeper.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	live := ownLockRecord()
	live.PID = sleeper.Process.Pid
	var err error
	if live.StartTime, err = process.StartTime(live.PID); err != nil {
		t.Fatal(err)
	}
	otherNS := deadRecord(t)
	otherNS.PIDNamespace = "pid:[1]"
	otherHost := deadRecord(t)
	otherHost.Host += "-other"
	tests := []struct {
		name    string
		content func(t *testing.T) []byte
		wantWhy string
	}{
		{"a live kubernix's", func(t *testing.T) []byte { return marshalRecord(t, live) }, "which is running"},
		{"this process's", func(t *testing.T) []byte { return marshalRecord(t, ownLockRecord()) }, "which is running"},
		{"kubectl's, empty", func(*testing.T) []byte { return nil }, "not taken by kubernix"},
		{"an older kubernix's of a dead pid", func(t *testing.T) []byte { return []byte(strconv.Itoa(deadRecord(t).PID) + "\n") }, "not taken by kubernix"},
		{"of another PID namespace", func(t *testing.T) []byte { return marshalRecord(t, otherNS) }, "another PID namespace"},
		{"of another host", func(t *testing.T) []byte { return marshalRecord(t, otherHost) }, "on host"},
	}
	ops := []struct {
		name string
		run  func(dst string) error
	}{
		{"Merge", func(dst string) error {
			return merge(Target{Path: dst}, writeSrc(t, b, testContext, testServer), testContext, 200*time.Millisecond, nil)
		}},
		{"Remove", func(dst string) error { return remove(dst, testContext, 200*time.Millisecond, nil) }},
	}
	for _, tt := range tests {
		for _, op := range ops {
			t.Run(tt.name+"/"+op.name, func(t *testing.T) {
				dst := filepath.Join(t.TempDir(), "config")
				writeOther(t, dst, "other")
				before, _ := os.ReadFile(dst)
				content := tt.content(t)
				writeLock(t, dst, content)
				err := op.run(dst)
				if !errors.Is(err, ErrLocked) {
					t.Fatalf("error %v, want ErrLocked", err)
				}
				for _, want := range []string{dst + ".lock", tt.wantWhy} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				if got, err := os.ReadFile(dst + ".lock"); err != nil || !bytes.Equal(got, content) {
					t.Errorf("lock file now %q (%v), want %q kept", got, err, content)
				}
				if after, _ := os.ReadFile(dst); !bytes.Equal(after, before) {
					t.Error("the kubeconfig changed")
				}
			})
		}
	}
}

// TestMergeConcurrentStaleLock: several kubernix finding the same stale
// lock at once let one writer in at a time: every merge lands, none is
// lost to a writer that removed another's fresh lock.
func TestMergeConcurrentStaleLock(t *testing.T) {
	b := newPKI(t)
	for round := range 5 {
		dst := filepath.Join(t.TempDir(), "config")
		writeLock(t, dst, marshalRecord(t, deadRecord(t)))
		const n = 8
		if err := mergeConcurrently(t, b, dst, n); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		cfg, err := clientcmd.LoadFromFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Contexts) != n {
			t.Errorf("round %d: %d contexts, want %d (lost updates)", round, len(cfg.Contexts), n)
		}
		checkNoLock(t, dst)
	}
}
