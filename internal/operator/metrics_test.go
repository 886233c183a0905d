package operator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// writeCert writes a new self-signed certificate for host into dir as a
// kubernetes.io/tls Secret mounts it, and returns it.
func writeCert(t *testing.T, dir, host string) *x509.Certificate {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As the kubelet updates a mounted Secret: the new files replace the old at once.
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		tmp := filepath.Join(dir, "."+name)
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// servedCert returns the certificate the server at addr presents, verified against ca.
func servedCert(addr string, ca *x509.Certificate) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The metrics endpoint serves the certificate of MetricsCertDir, verifiable by a
// Prometheus that trusts its CA, and the renewed one once the files change, without a
// restart.
func TestMetricsCertificate(t *testing.T) {
	dir := t.TempDir()
	first := writeCert(t, dir, "holdfast-operator-metrics")
	addr := freeAddr(t)
	opts, certs, err := metricsOptions(Options{MetricsAddr: addr, MetricsSecure: true, MetricsCertDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// The authorisation filter asks an API server; here the TLS is under test.
	opts.FilterProvider = nil
	srv, err := metricsserver.NewServer(opts, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- srv.Start(ctx) }()
	go func() { errs <- certs.Start(ctx) }()

	wantServed := func(want *x509.Certificate, what string) {
		t.Helper()
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			select {
			case err := <-errs:
				return false, err
			default:
			}
			got, err := servedCert(addr, want)
			if err != nil {
				last = err
				return false, nil
			}
			return got.Equal(want), nil
		}); err != nil {
			t.Fatalf("%s not served: %v (last: %v)", what, err, last)
		}
	}
	wantServed(first, "the certificate of the directory")
	renewed := writeCert(t, dir, "holdfast-operator-metrics")
	wantServed(renewed, "the renewed certificate")
	if _, err := servedCert(addr, first); err == nil {
		t.Error("the old certificate still verifies what is served")
	}
}

// A certificate asked for and missing stops the operator, naming the file, rather than
// leaving it to serve a self-signed one that a verifying Prometheus refuses.
func TestMetricsCertificateMissing(t *testing.T) {
	dir := t.TempDir()
	_, _, err := metricsOptions(Options{MetricsAddr: ":0", MetricsSecure: true, MetricsCertDir: dir})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "tls.crt")) {
		t.Errorf("got %v, want an error naming %s", err, filepath.Join(dir, "tls.crt"))
	}
	_, _, err = metricsOptions(Options{MetricsAddr: ":0", MetricsCertDir: dir})
	if err == nil || !strings.Contains(err.Error(), "needs secure metrics") {
		t.Errorf("a certificate without secure metrics: got %v", err)
	}
	if _, certs, err := metricsOptions(Options{MetricsAddr: ":0", MetricsSecure: true}); err != nil || certs != nil {
		t.Errorf("no certificate directory: watcher %v, error %v", certs, err)
	}
}
