package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certificates is a throw-away certificate authority and a server
// certificate it signed for 127.0.0.1 and localhost. It is written once per
// Server and reused by Restart.
type certificates struct {
	caFile     string // PEM certificate of the authority
	certFile   string // PEM server certificate
	keyFile    string // PEM (PKCS #8) server private key
	roots      *x509.CertPool
	serverCert tls.Certificate
}

// certificateLifetime is how long the generated certificates stay valid.
const certificateLifetime = 24 * time.Hour

// newCertificates generates the authority and the server certificate and
// writes them into dir.
func newCertificates(dir string) (*certificates, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("redistest: generate CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lockmux redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certificateLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("redistest: create CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("redistest: parse CA certificate: %w", err)
	}

	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("redistest: generate server key: %w", err)
	}
	serverTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: loopbackHost},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certificateLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP(loopbackHost)},
		DNSNames:     []string{"localhost"},
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, serverTemplate, caCert, &serverKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("redistest: create server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(serverKey)
	if err != nil {
		return nil, fmt.Errorf("redistest: encode server key: %w", err)
	}

	c := &certificates{
		caFile:   filepath.Join(dir, "ca.crt"),
		certFile: filepath.Join(dir, "server.crt"),
		keyFile:  filepath.Join(dir, "server.key"),
		roots:    x509.NewCertPool(),
	}
	c.roots.AddCert(caCert)
	files := []struct {
		path  string
		block *pem.Block
		mode  os.FileMode
	}{
		{c.caFile, &pem.Block{Type: "CERTIFICATE", Bytes: caDER}, 0o644},
		{c.certFile, &pem.Block{Type: "CERTIFICATE", Bytes: serverDER}, 0o644},
		{c.keyFile, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}, 0o600},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(f.block), f.mode); err != nil {
			return nil, fmt.Errorf("redistest: write %s: %w", f.path, err)
		}
	}
	c.serverCert, err = tls.X509KeyPair(pem.EncodeToMemory(files[1].block), pem.EncodeToMemory(files[2].block))
	if err != nil {
		return nil, fmt.Errorf("redistest: load server key pair: %w", err)
	}
	return c, nil
}

// clientConfig returns a fresh client configuration that trusts only the
// generated authority and verifies the server as 127.0.0.1.
func (c *certificates) clientConfig() *tls.Config {
	return &tls.Config{
		RootCAs:    c.roots,
		ServerName: loopbackHost,
		MinVersion: tls.VersionTLS12,
	}
}

// serverConfig returns the configuration an in-process server listens with.
func (c *certificates) serverConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{c.serverCert},
		MinVersion:   tls.VersionTLS12,
	}
}
