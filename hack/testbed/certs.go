package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// credentials are what up generates for one testbed: a CA, the API server's serving
// certificate, the service-account signing key and an admin bearer token.
type credentials struct {
	caPEM []byte
	token string
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

// generateCredentials writes ca.crt, apiserver.crt/key, sa.key/pub and tokens.csv
// into dir.
func generateCredentials(dir string) (credentials, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return credentials{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "holdfast-testbed-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return credentials{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return credentials{}, err
	}
	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return credentials{}, err
	}
	serverTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, serverTmpl, ca, &serverKey.PublicKey, caKey)
	if err != nil {
		return credentials{}, err
	}
	serverKeyDER, err := x509.MarshalECPrivateKey(serverKey)
	if err != nil {
		return credentials{}, err
	}
	// Service-account tokens are signed with RSA, which every client verifies.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return credentials{}, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return credentials{}, err
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return credentials{}, err
	}
	token := hex.EncodeToString(secret)
	files := []struct {
		name, kind string
		der        []byte
	}{
		{"ca.crt", "CERTIFICATE", caDER},
		{"apiserver.crt", "CERTIFICATE", serverDER},
		{"apiserver.key", "EC PRIVATE KEY", serverKeyDER},
		{"sa.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)},
		{"sa.pub", "PUBLIC KEY", saPub},
	}
	for _, f := range files {
		if err := writePEM(filepath.Join(dir, f.name), f.kind, f.der); err != nil {
			return credentials{}, fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return credentials{}, err
	}
	return credentials{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), token: token}, nil
}
