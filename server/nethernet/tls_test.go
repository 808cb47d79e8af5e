package nethernet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/endpoint"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key as
// PEM files, and returns their paths and a pool that trusts it.
func writeCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "basalt test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// With a certificate and key, signalling is HTTPS, and a client that
// trusts the certificate reads the status and joins.
func TestTLSSignalling(t *testing.T) {
	defer checkGoroutines(t)()
	certFile, keyFile, pool := writeCert(t)
	l := listenTest(t, Config{TLSCert: certFile, TLSKey: keyFile, AllowAnonymous: true,
		Status: func() Status { return Status{Name: "Basalt"} }})
	if !l.TLS() {
		t.Fatal("TLS() = false")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get("https://" + l.Addr().String() + "/v1/join")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/join over HTTPS: %d", resp.StatusCode)
	}
	// A client joins over HTTPS signalling.
	sig := endpoint.ClientConfig{HTTPClient: c, Logger: quietSlog}.New()
	d := gonn.Dialer{API: loopbackAPI(), Log: quietSlog}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cc, err := d.DialContext(ctx, "https://"+l.Addr().String(), sig)
	if err != nil {
		t.Fatalf("dial over HTTPS: %v", err)
	}
	sc := accept(t, l)
	_ = cc.Close()
	_ = sc.Close()
	// Plain HTTP is not served beside it.
	if resp, err := httpClient().Get("http://" + l.Addr().String() + "/v1/join"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered 200 on the HTTPS port")
		}
	}
	_ = l.Close()
}

func TestTLSConfigErrors(t *testing.T) {
	if _, err := (Config{Addr: "127.0.0.1:0", TLSCert: "x.pem"}).Listen(); err == nil {
		t.Error("a certificate without a key was accepted")
	}
	if _, err := (Config{Addr: "127.0.0.1:0", ICEAddr: "127.0.0.1:0", TLSCert: "missing.pem", TLSKey: "missing.pem"}).Listen(); err == nil {
		t.Error("missing TLS files were accepted")
	}
}
