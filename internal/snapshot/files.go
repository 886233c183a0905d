package snapshot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// listFiles expands a path into the files to parse.
func listFiles(path string, opts ManifestOptions) []fileJob {
	if path == StdinPath {
		if opts.Stdin == nil {
			return []fileJob{{name: path, err: errors.New("no standard input to read")}}
		}
		return []fileJob{{name: path, read: func() ([]byte, error) { return readLimited(opts.Stdin, opts.MaxFileSize, 0) }}}
	}
	switch {
	case opts.Kustomize != nil:
		return []fileJob{{name: path, read: func() ([]byte, error) { return opts.Kustomize(path) }}}
	case isURL(path):
		return []fileJob{{name: path, read: func() ([]byte, error) { return fetch(path, opts.MaxFileSize) }}}
	}
	info, err := os.Stat(path)
	if err != nil {
		return []fileJob{{name: path, err: err}}
	}
	if !info.IsDir() {
		return []fileJob{fileAt(path, opts)}
	}
	var jobs []fileJob
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			jobs = append(jobs, fileJob{name: p, err: err})
			return nil
		}
		// Hidden folders hold VCS data and editor state, never manifests.
		if d.IsDir() && p != path && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && isManifestFile(p) {
			jobs = append(jobs, fileAt(p, opts))
		}
		return nil
	})
	if err != nil {
		jobs = append(jobs, fileJob{name: path, err: err})
	}
	return jobs
}

func isManifestFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func fileAt(path string, opts ManifestOptions) fileJob {
	return fileJob{name: path, read: func() ([]byte, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		var size int64
		if info, err := f.Stat(); err == nil {
			size = info.Size()
		}
		return readLimited(f, opts.MaxFileSize, size)
	}}
}

// readLimited reads r whole, refusing more than limit bytes. size, when known (else 0),
// sizes the buffer at once: grown as it filled, it was copied over and over, and a
// large file took about twice its size while it was read.
func readLimited(r io.Reader, limit, size int64) ([]byte, error) {
	// Read one byte past the limit to tell "exactly at the limit" from "over it".
	r = io.LimitReader(r, limit+1)
	data := make([]byte, 0, max(min(size, limit)+1, 512))
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading: %w", err)
		}
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than the %d-byte limit for one manifest file", limit)
	}
	return data, nil
}

func (j fileJob) data() ([]byte, error) {
	if j.err != nil {
		return nil, j.err
	}
	return j.read()
}
