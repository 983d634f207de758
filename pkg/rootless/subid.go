package rootless

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
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
// matched by name or by numeric ID, as newuidmap does. A missing file has
// no ranges and is not an error.
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

func parseSubIDs(r io.Reader, user string, id int) ([]SubIDRange, error) {
	var out []SubIDRange
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 3 || (f[0] != user && f[0] != strconv.Itoa(id)) {
			continue
		}
		start, err1 := strconv.Atoi(f[1])
		count, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || count <= 0 {
			continue
		}
		out = append(out, SubIDRange{Start: start, Count: count})
	}
	return out, sc.Err()
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
