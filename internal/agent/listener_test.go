package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// pki is a throw-away CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files into dir.
type pki struct {
	pool       *x509.CertPool
	client     tls.Certificate
	stranger   tls.Certificate // signed by another CA
	serverCert string
	serverKey  string
	caFile     string
}

func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	ca, caKey := makeCA(t, "gpunode test CA")
	other, otherKey := makeCA(t, "someone else's CA")
	p := &pki{pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	writePEM := func(name, typ string, der []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	p.caFile = writePEM("ca.crt", "CERTIFICATE", ca.Raw)
	srvDER, srvKey := makeLeaf(t, ca, caKey, "agent", x509.ExtKeyUsageServerAuth)
	p.serverCert = writePEM("server.crt", "CERTIFICATE", srvDER)
	kb, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	p.serverKey = writePEM("server.key", "PRIVATE KEY", kb)
	cliDER, cliKey := makeLeaf(t, ca, caKey, "prometheus", x509.ExtKeyUsageClientAuth)
	p.client = tls.Certificate{Certificate: [][]byte{cliDER}, PrivateKey: cliKey}
	strDER, strKey := makeLeaf(t, other, otherKey, "stranger", x509.ExtKeyUsageClientAuth)
	p.stranger = tls.Certificate{Certificate: [][]byte{strDER}, PrivateKey: strKey}
	return p
}

func makeCA(t *testing.T, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func makeLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, use x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{use},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// serveAgent runs an agent with cfg on a loopback port until the test ends.
func serveAgent(t *testing.T, cfg Config) string {
	t.Helper()
	if cfg.Audit == nil {
		cfg.Audit = fixtureAudit(t, "../../testdata/hosts/dgx-h100")
	}
	a := newAgent(t, cfg)
	a.Cycle(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func fetch(t *testing.T, c *http.Client, url string, auth ...string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestListenerTLSClientCertificate: with a web configuration that requires
// client certificates, a scrape with the CA's client certificate gets the
// metrics; a plain-HTTP request, a TLS one without a certificate and one
// with a certificate of another CA get nothing.
func TestListenerTLSClientCertificate(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	conf := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(conf, []byte("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serveAgent(t, Config{WebConfigFile: conf})
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool, Certificates: certs}}}
	}
	code, body, err := fetch(t, client(p.client), "https://"+addr+"/metrics")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "gpunode_check_status") {
		t.Fatalf("TLS scrape with the client certificate: %d %v\n%.300s", code, err, body)
	}
	if code, body, err := fetch(t, &http.Client{Timeout: 5 * time.Second}, "http://"+addr+"/metrics"); err == nil && (code == http.StatusOK || strings.Contains(body, "gpunode_")) {
		t.Errorf("plain HTTP scrape of a TLS listener: %d\n%.300s", code, body)
	}
	if code, _, err := fetch(t, client(), "https://"+addr+"/metrics"); err == nil {
		t.Errorf("TLS without a client certificate: %d, want the handshake refused", code)
	}
	if code, _, err := fetch(t, client(p.stranger), "https://"+addr+"/report"); err == nil {
		t.Errorf("TLS with another CA's client certificate: %d, want the handshake refused", code)
	}
}

// TestListenerBasicAuth: basic_auth_users (bcrypt hashes, as
// exporter-toolkit wants them) guard every endpoint.
func TestListenerBasicAuth(t *testing.T) {
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(conf, []byte("basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serveAgent(t, Config{WebConfigFile: conf})
	c := &http.Client{Timeout: 5 * time.Second}
	if code, body, err := fetch(t, c, "http://"+addr+"/metrics", "prometheus", "s3cret"); err != nil || code != http.StatusOK || !strings.Contains(body, "gpunode_") {
		t.Fatalf("right password: %d %v", code, err)
	}
	for _, path := range []string{"/metrics", "/report", "/topo", "/report.html"} {
		if code, body, err := fetch(t, c, "http://"+addr+path); err != nil || code != http.StatusUnauthorized || strings.Contains(body, "gpunode_") || strings.Contains(body, "hostname") {
			t.Errorf("%s without a password: %d %v", path, code, err)
		}
		if code, _, err := fetch(t, c, "http://"+addr+path, "prometheus", "wrong"); err != nil || code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong password: %d %v", path, code, err)
		}
	}
}

// TestListenerBadWebConfig: a configuration that cannot be used stops the
// agent before it listens (a plain password, a missing certificate, bad
// YAML), naming the file.
func TestListenerBadWebConfig(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"plain.yml":   "basic_auth_users:\n  prometheus: s3cret\n",
		"nocert.yml":  "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n",
		"badyaml.yml": "tls_server_config: [\n",
		"unknown.yml": "tls_server_confg: {}\n",
	} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := New(Config{Audit: func(context.Context) (Result, error) { return Result{}, nil }, WebConfigFile: f})
		if !errors.Is(err, ErrWebConfig) || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: %v, want ErrWebConfig naming the file", name, err)
		}
	}
	if _, err := New(Config{Audit: func(context.Context) (Result, error) { return Result{}, nil }, WebConfigFile: filepath.Join(dir, "absent.yml")}); !errors.Is(err, ErrWebConfig) {
		t.Errorf("absent file: %v", err)
	}
}

// TestNoReportEndpoints: --no-report-endpoints leaves /metrics and the
// probes, and nothing that names the host or its audit.
func TestNoReportEndpoints(t *testing.T) {
	a := newAgent(t, Config{Audit: fixtureAudit(t, "../../testdata/hosts/dgx-h100"), NoReportEndpoints: true,
		HTML: func(*Snapshot) ([]byte, error) { return []byte("<html>"), nil }})
	a.Cycle(context.Background())
	for _, path := range []string{"/report", "/topo", "/report.html"} {
		if code, body := get(t, a.Handler(), http.MethodGet, path); code != http.StatusNotFound {
			t.Errorf("%s: %d %.100s, want 404", path, code, body)
		}
	}
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _ := get(t, a.Handler(), http.MethodGet, path); code != http.StatusOK {
			t.Errorf("%s: %d, want 200", path, code)
		}
	}
	if _, body := get(t, a.Handler(), http.MethodGet, "/"); strings.Contains(string(body), "/report") {
		t.Errorf("index still lists the report endpoints: %s", body)
	}
	// And by default they are there.
	b := newAgent(t, Config{Audit: fixtureAudit(t, "../../testdata/hosts/dgx-h100")})
	b.Cycle(context.Background())
	if code, _ := get(t, b.Handler(), http.MethodGet, "/report"); code != http.StatusOK {
		t.Errorf("/report by default: %d", code)
	}
}
