package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/pki"
)

func newInspect(t *target, std streams) *cobra.Command {
	var ns, caFile string
	var verify bool
	c := &cobra.Command{
		Use:   "inspect secret NAME [--verify]",
		Short: "Show what a stored secret holds: subject, SANs, issuer, validity, key, fingerprints, chain",
		Long: `Show what a stored secret holds: subject, SANs, issuer, validity, key, fingerprints, chain.
Local only: it reads the --data directory's secret store. With --server it is
refused: the HTTP API never reads secrets; on a cloud deployment the workloads
read their key pairs from the cloud secret store (e.g. Secrets Manager) directly.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "secret" && args[0] != "secrets" {
				return fmt.Errorf("inspect supports only: secret")
			}
			if err := t.remote.localOnly("inspect secret", "secrets are read from the cloud secret store by the workloads, not through the API"); err != nil {
				return err
			}
			lc, err := t.localClient(readsData)
			if err != nil {
				return err
			}
			sec, err := lc.Secret(cmd.Context(), ns, args[1])
			if err != nil {
				return fmt.Errorf("secret %s/%s: %w", ns, args[1], err)
			}
			w := std.out
			fmt.Fprintf(w, "Secret: %s/%s\n", ns, args[1])
			keys := make([]string, 0, len(sec.Data))
			for k := range sec.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			fmt.Fprintf(w, "Keys: %s\n", strings.Join(keys, ", "))
			if len(sec.Annotations) > 0 {
				an := make([]string, 0, len(sec.Annotations))
				for k, v := range sec.Annotations {
					an = append(an, k+"="+v)
				}
				sort.Strings(an)
				fmt.Fprintf(w, "Annotations:\n  %s\n", strings.Join(an, "\n  "))
			}
			if k, err := pki.DecodePrivateKeyPEM(sec.Data["tls.key"]); err == nil {
				fmt.Fprintf(w, "Private key: %s (tls.key, never printed)\n", keyDesc(k.Public()))
			}
			if len(sec.Data["tls.crt"]) > 0 {
				printCertDetails(w, sec.Data["tls.crt"])
			}
			if ca := sec.Data["ca.crt"]; len(ca) > 0 {
				if chain, err := pki.ParseChainPEM(ca); err == nil {
					fmt.Fprintf(w, "CA (ca.crt): %s, not after %s\n", chain[0].Subject, chain[0].NotAfter.UTC().Format(time.RFC3339))
				}
			}
			if verify {
				roots, against, err := verifyRoots(sec.Data["ca.crt"], caFile)
				if err != nil {
					return fmt.Errorf("verify %s/%s: %w", ns, args[1], err)
				}
				if err := verifyChain(sec.Data["tls.crt"], sec.Data["tls.key"], roots); err != nil {
					return fmt.Errorf("verify %s/%s against %s: %w", ns, args[1], against, err)
				}
				fmt.Fprintf(w, "Verified: tls.crt chains to %s (Go x509 verifier), private key matches\n", against)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace")
	c.Flags().BoolVar(&verify, "verify", false, "verify tls.crt with Go's x509 verifier against ca.crt, or, when the secret has none (ACME certificates), the system's trusted roots (exit 1 if it fails)")
	c.Flags().StringVar(&caFile, "ca-file", "", "with --verify: PEM roots to verify against instead of ca.crt or the system roots (e.g. a private ACME CA's root)")
	return c
}

// verifyRoots returns the roots --verify checks against and how to name
// them: --ca-file when given, else the secret's ca.crt, else (ACME
// certificates carry no ca.crt, as cert-manager's) the system's roots.
func verifyRoots(caPEM []byte, caFile string) (*x509.CertPool, string, error) {
	switch {
	case caFile != "":
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, "", fmt.Errorf("--ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, "", fmt.Errorf("--ca-file %s: no PEM certificate in it", caFile)
		}
		return pool, caFile, nil
	case len(caPEM) > 0:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, "", fmt.Errorf("ca.crt holds no CA certificate")
		}
		return pool, "ca.crt", nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		return nil, "", fmt.Errorf("the secret has no ca.crt and the system roots cannot be read (give --ca-file): %w", err)
	}
	return pool, "the system's trusted roots (no ca.crt in the secret)", nil
}

// verifyChain checks that tls.key matches the leaf and that the leaf chains to a root in roots (intermediates
// from the rest of tls.crt) for any usage, at the current time.
func verifyChain(crtPEM, keyPEM []byte, roots *x509.CertPool) error {
	chain, err := pki.ParseChainPEM(crtPEM)
	if err != nil {
		return fmt.Errorf("tls.crt: %w", err)
	}
	key, err := pki.DecodePrivateKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("tls.key: %w", err)
	}
	if !pki.PublicKeysEqual(key.Public(), chain[0].PublicKey) {
		return fmt.Errorf("tls.key does not match the certificate in tls.crt")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err = chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}

func keyDesc(pub any) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d", k.N.BitLen())
	case *ecdsa.PublicKey:
		return fmt.Sprintf("ECDSA %s", k.Curve.Params().Name)
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return fmt.Sprintf("%T", pub)
}

func fingerprint(b []byte, sha string) string {
	var sum []byte
	if sha == "sha1" {
		s := sha1.Sum(b)
		sum = s[:]
	} else {
		s := sha256.Sum256(b)
		sum = s[:]
	}
	parts := make([]string, len(sum))
	for i, c := range sum {
		parts[i] = fmt.Sprintf("%02X", c)
	}
	return strings.Join(parts, ":")
}

func sans(c *x509.Certificate) []string {
	return app.SANs(c.DNSNames, c.IPAddresses, c.URIs, c.EmailAddresses)
}

func printCertDetails(w io.Writer, pemBytes []byte) {
	chain, err := pki.ParseChainPEM(pemBytes)
	if err != nil {
		fmt.Fprintf(w, "tls.crt: invalid: %v\n", err)
		return
	}
	for i, c := range chain {
		label := "Certificate (tls.crt, leaf)"
		if i > 0 {
			label = fmt.Sprintf("Chain certificate %d", i)
		}
		fmt.Fprintf(w, "%s:\n", label)
		fmt.Fprintf(w, "  Subject:      %s\n", c.Subject)
		if s := sans(c); len(s) > 0 {
			fmt.Fprintf(w, "  SANs:         %s\n", strings.Join(s, ", "))
		}
		fmt.Fprintf(w, "  Issuer:       %s\n", c.Issuer)
		fmt.Fprintf(w, "  Serial:       %s\n", c.SerialNumber.Text(16))
		fmt.Fprintf(w, "  Not before:   %s\n", c.NotBefore.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "  Not after:    %s\n", c.NotAfter.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "  Public key:   %s\n", keyDesc(c.PublicKey))
		fmt.Fprintf(w, "  Signature:    %s\n", c.SignatureAlgorithm)
		fmt.Fprintf(w, "  CA:           %v\n", c.IsCA)
		fmt.Fprintf(w, "  SHA-256:      %s\n", fingerprint(c.Raw, "sha256"))
		fmt.Fprintf(w, "  SHA-1:        %s\n", fingerprint(c.Raw, "sha1"))
	}
}
