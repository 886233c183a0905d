//go:build scale

package scale

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// counter is a loopback proxy to the API server that counts the requests of the
// commands pointed at it: the API server counts requests by resource and verb, not by
// client, and the holdfast CLI keeps no request metrics of its own.
type counter struct {
	Kubeconfig string

	mu sync.Mutex
	c  counts
}

// counts are the requests a command sent: in all, by verb and resource, and the
// evictions the API server accepted.
type counts struct {
	requests, evictions int
	by                  map[string]int
}

// top renders the n most frequent kinds of request.
func (c counts) top(n int) string {
	keys := slices.Collect(maps.Keys(c.by))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(c.by[b]-c.by[a], strings.Compare(a, b)) })
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.by[k]))
	}
	return strings.Join(parts, ", ")
}

// kind names a request by its verb and resource: "POST pods/eviction", "WATCH pods".
func kind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/GROUP/VERSION/...
	skip := 2
	if len(parts) > 0 && parts[0] == "apis" {
		skip = 3
	}
	rest := parts[min(skip, len(parts)):]
	if len(rest) > 2 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	resource := strings.Join(rest[:min(1, len(rest))], "")
	if len(rest) == 3 {
		resource += "/" + rest[2]
	}
	verb := r.Method
	switch {
	case r.URL.Query().Get("watch") != "":
		verb = "WATCH"
	case verb == http.MethodGet && len(rest) == 1:
		verb = "LIST"
	}
	return verb + " " + resource
}

func startCounter(cfg *rest.Config, dir string) (*counter, func(), error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, nil, err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	c := &counter{Kubeconfig: filepath.Join(dir, "counted.kubeconfig"), c: counts{by: map[string]int{}}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ModifyResponse: func(resp *http.Response) error {
			eviction := resp.Request.Method == http.MethodPost && strings.HasSuffix(resp.Request.URL.Path, "/eviction") && resp.StatusCode == http.StatusCreated
			k := kind(resp.Request)
			c.mu.Lock()
			c.c.requests++
			c.c.by[k]++
			if eviction {
				c.c.evictions++
			}
			c.mu.Unlock()
			return nil
		},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: proxy}
	go srv.Serve(l)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["counted"] = &clientcmdapi.Cluster{Server: "http://" + l.Addr().String()}
	kc.AuthInfos["counted"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["counted"] = &clientcmdapi.Context{Cluster: "counted", AuthInfo: "counted", Namespace: "default"}
	kc.CurrentContext = "counted"
	if err := clientcmd.WriteToFile(*kc, c.Kubeconfig); err != nil {
		srv.Close()
		return nil, nil, err
	}
	return c, func() { srv.Close() }, nil
}

func (c *counter) read() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return counts{requests: c.c.requests, evictions: c.c.evictions, by: maps.Clone(c.c.by)}
}

// since is what was counted after before.
func (c *counter) since(before counts) counts {
	now := c.read()
	for k, n := range before.by {
		if now.by[k] -= n; now.by[k] == 0 {
			delete(now.by, k)
		}
	}
	return counts{requests: now.requests - before.requests, evictions: now.evictions - before.evictions, by: now.by}
}
