package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// kubeconfig is the subset of a kubeconfig file the runner understands:
// server URL, CA (data or file, or insecure-skip-tls-verify), and a bearer
// token, basic auth or a client certificate (data or file). No exec plugins:
// both servers under test are local.
type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Token                 string `json:"token"`
			TokenFile             string `json:"tokenFile"`
			Username              string `json:"username"`
			Password              string `json:"password"`
			ClientCertificate     string `json:"client-certificate"`
			ClientCertificateData string `json:"client-certificate-data"`
			ClientKey             string `json:"client-key"`
			ClientKeyData         string `json:"client-key-data"`
		} `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
}

// target is one server under test: where it is and how to authenticate.
type target struct {
	server string
	http   *http.Client
	auth   func(*http.Request)
	// lacking: controllers ("garbage-collector", "namespace") a poll of an
	// earlier scenario waited for in vain; later scenarios' polls for them
	// wait at most giveUpBound (see pollUntil).
	lacking map[string]bool
}

func readMaybe(data, file, base string) ([]byte, error) {
	if data != "" {
		return base64.StdEncoding.DecodeString(data)
	}
	if file != "" {
		if !filepath.IsAbs(file) {
			file = filepath.Join(base, file)
		}
		return os.ReadFile(file)
	}
	return nil, nil
}

func loadTarget(path string) (*target, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	base := filepath.Dir(path)
	clusterName, userName := "", ""
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext || (kc.CurrentContext == "" && len(kc.Contexts) == 1) {
			clusterName, userName = c.Context.Cluster, c.Context.User
		}
	}
	if clusterName == "" && len(kc.Clusters) == 1 {
		clusterName = kc.Clusters[0].Name
	}
	if userName == "" && len(kc.Users) == 1 {
		userName = kc.Users[0].Name
	}
	t := &target{auth: func(*http.Request) {}, lacking: map[string]bool{}}
	tlsCfg := &tls.Config{}
	found := false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		t.server = c.Cluster.Server
		ca, err := readMaybe(c.Cluster.CertificateAuthorityData, c.Cluster.CertificateAuthority, base)
		if err != nil {
			return nil, fmt.Errorf("%s: CA: %w", path, err)
		}
		if len(ca) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, fmt.Errorf("%s: CA does not parse", path)
			}
			tlsCfg.RootCAs = pool
		}
		tlsCfg.InsecureSkipVerify = c.Cluster.InsecureSkipTLSVerify
	}
	if !found {
		return nil, fmt.Errorf("%s: no cluster for the current context", path)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		tok := u.User.Token
		if tok == "" && u.User.TokenFile != "" {
			b, err := readMaybe("", u.User.TokenFile, base)
			if err != nil {
				return nil, err
			}
			tok = string(b)
		}
		switch {
		case tok != "":
			t.auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
		case u.User.Username != "":
			user, pass := u.User.Username, u.User.Password
			t.auth = func(r *http.Request) { r.SetBasicAuth(user, pass) }
		}
		cert, err := readMaybe(u.User.ClientCertificateData, u.User.ClientCertificate, base)
		if err != nil {
			return nil, err
		}
		key, err := readMaybe(u.User.ClientKeyData, u.User.ClientKey, base)
		if err != nil {
			return nil, err
		}
		if len(cert) > 0 && len(key) > 0 {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				return nil, fmt.Errorf("%s: client certificate: %w", path, err)
			}
			tlsCfg.Certificates = []tls.Certificate{pair}
		}
	}
	t.http = &http.Client{
		Transport: &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 4},
		// Watches are bounded by the runner's own deadlines, not by this.
		Timeout: 0,
	}
	return t, nil
}
