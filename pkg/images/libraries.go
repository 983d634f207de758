package images

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// LibraryDirs are the directories, in order, where SharedLibraries looks
// for a library that an ELF object needs and whose RUNPATH does not hold:
// the multiarch directories of Debian's amd64 dynamic loader, then the
// traditional ones. They are also where the loader of an image looks when
// the image has no /etc/ld.so.cache (glibc's built-in system directories on
// Debian, which include the multiarch triplet).
var LibraryDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// SharedLibraries returns what the dynamically linked ELF executable at
// exe needs to run in an image that holds nothing else of the host: its
// program interpreter (PT_INTERP, e.g. /lib64/ld-linux-x86-64.so.2) and
// the closure of its DT_NEEDED libraries, each found in the object's
// DT_RUNPATH or DT_RPATH ($ORIGIN expanded) or else in LibraryDirs. Each
// path is absolute and is where the file must be in the image (the same
// as on the host); the host file there may be a symlink, which the
// caller follows. Libraries the program opens itself at run time
// (dlopen) are not found. A static executable gives none.
//
// It errors if exe or a library is not a readable ELF object, or if a
// needed library is in none of the directories; the error names the
// library and the object that needs it.
func SharedLibraries(exe string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	interp, err := interpreter(exe)
	if err != nil {
		return nil, err
	}
	if interp != "" {
		out = append(out, interp)
		seen[path.Base(interp)] = true
	}
	queue := []string{exe}
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		needed, dirs, err := dynamic(obj)
		if err != nil {
			return nil, err
		}
		for _, lib := range needed {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			p, err := findLibrary(lib, append(dirs, LibraryDirs...))
			if err != nil {
				return nil, fmt.Errorf("%s (needed by %s): %w", lib, obj, err)
			}
			out = append(out, p)
			queue = append(queue, p)
		}
	}
	return out, nil
}

// interpreter returns exe's PT_INTERP path, or "" for a static executable.
func interpreter(exe string) (string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return "", fmt.Errorf("%s: %w", exe, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("%s: program interpreter: %w", exe, err)
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}

// dynamic returns the DT_NEEDED names of the ELF object at p and the
// directories of its DT_RUNPATH (or DT_RPATH), $ORIGIN expanded.
func dynamic(p string) (needed, dirs []string, err error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	needed, err = f.ImportedLibraries()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: needed libraries: %w", p, err)
	}
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		paths, err := f.DynString(tag)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", p, tag, err)
		}
		for _, list := range paths {
			for _, d := range filepath.SplitList(list) {
				dirs = append(dirs, strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(p)))
			}
		}
		if len(dirs) > 0 {
			break
		}
	}
	return needed, dirs, nil
}

// findLibrary returns the first dirs/lib that exists.
func findLibrary(lib string, dirs []string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, lib)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("not found in %s: %w", strings.Join(dirs, ", "), fs.ErrNotExist)
}
