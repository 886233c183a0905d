//go:build scale

package scale

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
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
	// evictions are those the API server accepted.
	requests, evictions int
}

// counts are the requests a command sent.
type counts struct {
	requests, evictions int
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
	c := &counter{Kubeconfig: filepath.Join(dir, "counted.kubeconfig")}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ModifyResponse: func(resp *http.Response) error {
			eviction := resp.Request.Method == http.MethodPost && strings.HasSuffix(resp.Request.URL.Path, "/eviction") && resp.StatusCode == http.StatusCreated
			c.mu.Lock()
			c.requests++
			if eviction {
				c.evictions++
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
	return counts{requests: c.requests, evictions: c.evictions}
}

// since is what was counted after before.
func (c *counter) since(before counts) counts {
	now := c.read()
	return counts{requests: now.requests - before.requests, evictions: now.evictions - before.evictions}
}
