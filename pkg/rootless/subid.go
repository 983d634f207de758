package rootless

import (
	"fmt"
	"io"
	"os"
	"strconv"

	mobyuser "github.com/moby/sys/user"
)

// MinSubIDs is the fewest subordinate IDs kubernix asks of /etc/subuid and
// /etc/subgid: enough for the IDs 0..65535 containers use.
const MinSubIDs = 65536

// Files holding the subordinate ID ranges newuidmap and newgidmap grant.
const (
	SubUIDFile = "/etc/subuid"
	SubGIDFile = "/etc/subgid"
)

// SubIDRange is one line of /etc/subuid or /etc/subgid.
type SubIDRange struct {
	Start, Count int
}

// SubIDs returns the ranges the file at path grants to the user, who is
// matched by name or by numeric ID, as newuidmap does (lines parsed by
// moby/sys/user). Lines that grant no IDs, or whose start is not a
// positive number, are skipped. A missing file has no ranges and is not an
// error.
func SubIDs(path, user string, id int) ([]SubIDRange, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSubIDs(f, user, id)
}

// parseSubIDs returns the ranges of r, in /etc/subuid's format, that
// SubIDs counts for the user.
func parseSubIDs(r io.Reader, user string, id int) ([]SubIDRange, error) {
	uid := strconv.Itoa(id)
	entries, err := mobyuser.ParseSubIDFilter(r, func(e mobyuser.SubID) bool {
		// moby/sys/user reads a malformed number as 0; a range starting
		// at host ID 0 (root) is no subordinate range either.
		return (e.Name == user || e.Name == uid) && e.SubID > 0 && e.Count > 0
	})
	if err != nil {
		return nil, err
	}
	var out []SubIDRange
	for _, e := range entries {
		out = append(out, SubIDRange{Start: int(e.SubID), Count: int(e.Count)})
	}
	return out, nil
}

// Total is the number of IDs the ranges hold.
func Total(ranges []SubIDRange) int {
	n := 0
	for _, r := range ranges {
		n += r.Count
	}
	return n
}

// CheckSubIDs returns nil when path grants the user at least MinSubIDs
// IDs, else an error naming path and what it holds.
func CheckSubIDs(path, user string, id int) error {
	ranges, err := SubIDs(path, user, id)
	if err != nil {
		return err
	}
	if n := Total(ranges); n < MinSubIDs {
		return fmt.Errorf("%s grants user %s (uid %d) %d subordinate IDs, need at least %d", path, user, id, n, MinSubIDs)
	}
	return nil
}
