package clouddns

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// ServiceAccountKey is a validated service-account JSON key. Its String
// method shows the account and the key's ID, never the private key.
type ServiceAccountKey struct {
	// ClientEmail is the service account ("dns@project.iam.gserviceaccount.com").
	ClientEmail string
	// PrivateKeyID is the key's ID.
	PrivateKeyID string
	// json is the key rebuilt from the validated fields only, with
	// token_uri set to the allowed token endpoint.
	json []byte
}

// String describes k without its private key.
func (k *ServiceAccountKey) String() string {
	return fmt.Sprintf("service account %s (key %s)", k.ClientEmail, k.PrivateKeyID)
}

// GoString is String, so that %#v cannot print the key either.
func (k *ServiceAccountKey) GoString() string { return k.String() }

// keyFile is the part of a Google JSON key file certfn reads.
type keyFile struct {
	Type           string `json:"type"`
	ProjectID      string `json:"project_id"`
	PrivateKeyID   string `json:"private_key_id"`
	PrivateKey     string `json:"private_key"`
	ClientEmail    string `json:"client_email"`
	ClientID       string `json:"client_id"`
	TokenURI       string `json:"token_uri"`
	UniverseDomain string `json:"universe_domain"`
}

// parseKey validates a service-account JSON key: type service_account, a
// client_email, an RSA private_key in PEM, token_uri empty or tokenURL,
// universe_domain empty or googleapis.com. Other credential types
// (external_account, impersonated_service_account, authorized_user) are
// refused: they make the client call URLs or run programs the key names,
// and a key comes from a tenant's secret. Errors never contain the key.
func parseKey(raw []byte, tokenURL string) (*ServiceAccountKey, error) {
	var f keyFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, errors.New("not a service account key: not a JSON object")
	}
	switch {
	case f.Type != "service_account":
		t := f.Type
		if len(t) > 40 {
			t = t[:40] + "..."
		}
		return nil, fmt.Errorf("credentials of type %q: only service account keys (type service_account) are accepted", t)
	case f.ClientEmail == "" || !strings.Contains(f.ClientEmail, "@"):
		return nil, errors.New("not a service account key: client_email is missing")
	case f.PrivateKey == "":
		return nil, errors.New("not a service account key: private_key is missing")
	case f.TokenURI != "" && f.TokenURI != tokenURL:
		return nil, fmt.Errorf("token_uri %q is not %s, the only token endpoint this deployment sends service account assertions to", f.TokenURI, tokenURL)
	case f.UniverseDomain != "" && f.UniverseDomain != "googleapis.com":
		return nil, fmt.Errorf("universe_domain %q: only googleapis.com is supported", f.UniverseDomain)
	}
	block, _ := pem.Decode([]byte(f.PrivateKey))
	if block == nil {
		return nil, errors.New("private_key is not PEM")
	}
	var key any
	var err error
	if key, err = x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	}
	if _, rsaKey := key.(*rsa.PrivateKey); err != nil || !rsaKey {
		return nil, errors.New("private_key is not an RSA private key")
	}
	clean := keyFile{
		Type: "service_account", ProjectID: f.ProjectID, PrivateKeyID: f.PrivateKeyID, PrivateKey: f.PrivateKey,
		ClientEmail: f.ClientEmail, ClientID: f.ClientID, TokenURI: tokenURL, UniverseDomain: "googleapis.com",
	}
	js, err := json.Marshal(clean)
	if err != nil {
		return nil, errors.New("cannot encode the key")
	}
	return &ServiceAccountKey{ClientEmail: f.ClientEmail, PrivateKeyID: f.PrivateKeyID, json: js}, nil
}
