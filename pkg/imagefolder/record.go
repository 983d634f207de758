package imagefolder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/config"
)

// recordVersion is the format version of the record file.
const recordVersion = 1

// Record is what the folder imported, per file and node. It is saved as
// JSON in the state dir (Options.RecordFile) after every change, so an
// unchanged file is not imported again after a restart.
type Record struct {
	// Version is the format version, 1.
	Version int `json:"version"`
	// Files maps a file's name in the folder to its imports.
	Files map[string]*FileRecord `json:"files"`
}

// FileRecord is what one file provided to each node.
type FileRecord struct {
	// Nodes maps a node name to the import of this file there.
	Nodes map[string]*NodeImport `json:"nodes"`
}

// NodeImport is the last import of a file into one node.
type NodeImport struct {
	// State is the version of the file imported: its size and mtime.
	FileState
	// Images are the images the file provided, sorted by Ref.
	Images []Image `json:"images"`
	// Imports counts the imports of this file into the node, over all its
	// versions (a changed file is imported again).
	Imports int `json:"imports"`
	// At is when the last import finished.
	At time.Time `json:"at"`
}

// Image is an image a file provided.
type Image struct {
	// Ref is the image's normalized reference, e.g. "example.com/app:v1".
	Ref string `json:"ref"`
	// Digest is the digest of its manifest or index, "sha256:…".
	Digest string `json:"digest"`
}

func newRecord() *Record { return &Record{Version: recordVersion, Files: map[string]*FileRecord{}} }

// get returns the import of file into node, or nil.
func (r *Record) get(file, node string) *NodeImport {
	if fr := r.Files[file]; fr != nil {
		return fr.Nodes[node]
	}
	return nil
}

// upToDate reports whether node has the version st of file.
func (r *Record) upToDate(file, node string, st FileState) bool {
	ni := r.get(file, node)
	return ni != nil && ni.FileState.Equal(st)
}

// set records that node imported version st of file, providing imgs, at
// time at, and returns the import.
func (r *Record) set(file, node string, st FileState, imgs []Image, at time.Time) *NodeImport {
	fr := r.Files[file]
	if fr == nil {
		fr = &FileRecord{Nodes: map[string]*NodeImport{}}
		r.Files[file] = fr
	}
	prev := fr.Nodes[node]
	ni := &NodeImport{FileState: st, Images: imgs, Imports: 1, At: at}
	if prev != nil {
		ni.Imports = prev.Imports + 1
	}
	fr.Nodes[node] = ni
	return ni
}

// invalidate marks the import of file into node out of date, so that it
// is imported again, keeping its count.
func (r *Record) invalidate(file, node string) {
	if ni := r.get(file, node); ni != nil {
		ni.FileState = FileState{}
	}
}

// forget drops the import of file into node, and the file once no node
// has it.
func (r *Record) forget(file, node string) {
	fr := r.Files[file]
	if fr == nil {
		return
	}
	delete(fr.Nodes, node)
	if len(fr.Nodes) == 0 {
		delete(r.Files, file)
	}
}

// providers lists the files other than except whose import into node
// provided ref, sorted.
func (r *Record) providers(node, ref, except string) []string {
	var out []string
	for _, file := range slices.Sorted(maps.Keys(r.Files)) {
		if file == except {
			continue
		}
		if ni := r.get(file, node); ni != nil && slices.ContainsFunc(ni.Images, func(i Image) bool { return i.Ref == ref }) {
			out = append(out, file)
		}
	}
	return out
}

// filesOf lists the files recorded for node, sorted.
func (r *Record) filesOf(node string) []string {
	var out []string
	for _, file := range slices.Sorted(maps.Keys(r.Files)) {
		if r.get(file, node) != nil {
			out = append(out, file)
		}
	}
	return out
}

// clone returns a deep copy of r.
func (r *Record) clone() *Record {
	out := newRecord()
	for file, fr := range r.Files {
		c := &FileRecord{Nodes: map[string]*NodeImport{}}
		for node, ni := range fr.Nodes {
			n := *ni
			n.Images = slices.Clone(ni.Images)
			c.Nodes[node] = &n
		}
		out.Files[file] = c
	}
	return out
}

// LoadRecord reads the record at path. A missing file is an empty record.
// A file that cannot be parsed is an error wrapping ErrCorruptRecord;
// other errors are the file system's.
func LoadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newRecord(), nil
	}
	if err != nil {
		return nil, err
	}
	r := newRecord()
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrCorruptRecord, path, err)
	}
	if r.Version != recordVersion {
		return nil, fmt.Errorf("%w %s: format version %d, want %d", ErrCorruptRecord, path, r.Version, recordVersion)
	}
	if r.Files == nil {
		r.Files = map[string]*FileRecord{}
	}
	for file, fr := range r.Files {
		if fr == nil || len(fr.Nodes) == 0 {
			delete(r.Files, file)
			continue
		}
		for node, ni := range fr.Nodes {
			if ni == nil {
				delete(fr.Nodes, node)
			}
		}
	}
	return r, nil
}

// ErrCorruptRecord is returned by LoadRecord for a record it cannot read:
// not JSON, or another format version.
var ErrCorruptRecord = errors.New("unreadable images record")

// save writes r to path atomically (atomicfile), its owner's alone as
// every record in a state dir (config.StateFileMode).
func (r *Record) save(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), config.StateDirMode); err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), config.StateFileMode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
