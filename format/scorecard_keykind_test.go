package format

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
)

// TestKeysOfAnotherAlgorithmAreNamedInTheFieldsTerms is a new user's
// finding (issue 15): an RSA key given as the signing or public key was
// refused as "a *rsa.PrivateKey key", a Go type name. The error names the
// algorithm.
func TestKeysOfAnotherAlgorithmAreNamedInTheFieldsTerms(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemOf := func(typ string) func(der []byte, err error) []byte {
		return func(der []byte, err error) []byte {
			if err != nil {
				t.Fatal(err)
			}
			return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
		}
	}
	priv, pub := pemOf("PRIVATE KEY"), pemOf("PUBLIC KEY")
	for _, tc := range []struct {
		name  string
		parse func() error
		want  string
	}{
		{"an RSA private key", func() error {
			_, err := ParseSigningKey(priv(x509.MarshalPKCS8PrivateKey(rk)))
			return err
		}, "an RSA key: want Ed25519"},
		{"an ECDSA private key", func() error {
			_, err := ParseSigningKey(priv(x509.MarshalPKCS8PrivateKey(ek)))
			return err
		}, "an ECDSA key: want Ed25519"},
		{"an RSA public key", func() error {
			_, err := ParsePublicKey(pub(x509.MarshalPKIXPublicKey(&rk.PublicKey)))
			return err
		}, "an RSA key: want Ed25519"},
		{"an ECDSA public key", func() error {
			_, err := ParsePublicKey(pub(x509.MarshalPKIXPublicKey(&ek.PublicKey)))
			return err
		}, "an ECDSA key: want Ed25519"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "*") {
				t.Errorf("%v, want %q and no Go type name", err, tc.want)
			}
		})
	}
}
