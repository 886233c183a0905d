package snapshot

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Input that is not a file on disk: a URL, as kubectl apply -f reads one. A
// kustomization, as kubectl apply -k builds one, is built by ManifestOptions.Kustomize.

// fetchTimeout bounds the download of one manifest.
const fetchTimeout = 30 * time.Second

// isURL reports whether a path is a URL to download, as kubectl's -f takes.
func isURL(path string) bool {
	return strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://")
}

// fetch downloads a manifest, within the size limit of one file.
func fetch(url string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading: %s", resp.Status)
	}
	return readLimited(resp.Body, limit, 0)
}
