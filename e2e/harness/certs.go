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

// pki holds the files the API server is started with and what clients need to
// trust it: a throwaway CA, a serving certificate for 127.0.0.1/localhost
// signed by it (a separate leaf, not the CA itself: rustls, used by kube-rs,
// rejects a CA certificate presented as a server certificate), a service
// account signing key and a random admin bearer token.
type pki struct {
	caPEM        []byte
	servingCert  string
	servingKey   string
	saPublicKey  string
	saPrivateKey string
	tokenFile    string
	adminToken   string
	caFile       string
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
}

// newPKI writes all credentials into dir.
func newPKI(dir string) (*pki, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caSerial, err := serial()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: "kinformer-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour * 365),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvSerial, err := serial()
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: srvSerial,
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour * 365),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	srvKeyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}

	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}

	p := &pki{
		caPEM:        pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		servingCert:  filepath.Join(dir, "serving.crt"),
		servingKey:   filepath.Join(dir, "serving.key"),
		saPublicKey:  filepath.Join(dir, "sa.pub"),
		saPrivateKey: filepath.Join(dir, "sa.key"),
		tokenFile:    filepath.Join(dir, "tokens.csv"),
		adminToken:   hex.EncodeToString(tok),
		caFile:       filepath.Join(dir, "ca.crt"),
	}
	if err := writePEM(p.servingCert, "CERTIFICATE", srvDER); err != nil {
		return nil, err
	}
	if err := writePEM(p.servingKey, "PRIVATE KEY", srvKeyDER); err != nil {
		return nil, err
	}
	if err := writePEM(p.saPublicKey, "PUBLIC KEY", saPubDER); err != nil {
		return nil, err
	}
	if err := writePEM(p.saPrivateKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.caFile, p.caPEM, 0o644); err != nil {
		return nil, err
	}
	// Static token file: token,user,uid,"group". system:masters bypasses RBAC.
	line := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n", p.adminToken)
	if err := os.WriteFile(p.tokenFile, []byte(line), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}
