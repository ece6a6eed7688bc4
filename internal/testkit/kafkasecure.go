package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SCRAMUser is one SASL user of a KafkaSecure broker. Mechanism is PLAIN
// (a user of the PLAIN JAAS config of the SASL_SSL listener), SCRAM-SHA-256
// or SCRAM-SHA-512 (a SCRAM credential written into the metadata log by
// kafka-storage format --add-scram); a user that should authenticate with
// both SCRAM mechanisms is listed twice.
type SCRAMUser struct {
	Mechanism string
	Name      string
	Password  string
}

// KafkaSecurity is what KafkaSecure adds to a broker: three more
// listeners on 127.0.0.1 and the PEM files a client needs. Every file is
// in the broker's temp directory.
type KafkaSecurity struct {
	// MTLS is the address of an SSL listener with ssl.client.auth=required
	// (mutual TLS: a client certificate signed by CAFile's CA is needed).
	MTLS string
	// SASLSSL is the address of a SASL_SSL listener (server
	// authentication only) with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
	// enabled.
	SASLSSL string
	// SCRAM256Only is the address of a SASL_SSL listener with
	// SCRAM-SHA-256 the only mechanism enabled.
	SCRAM256Only string
	// CAFile is the PEM certificate of the CA that signed the broker's and
	// the client's certificates.
	CAFile string
	// OtherCAFile is the PEM certificate of a CA that signed nothing the
	// broker holds: a client trusting only it rejects the broker.
	OtherCAFile string
	// ClientCertFile and ClientKeyFile are a client certificate signed by
	// CAFile's CA and its PKCS#8 key.
	ClientCertFile, ClientKeyFile string
	// Secrets are the private keys' PEM bodies (base64 lines), for a test
	// that checks no output holds one.
	Secrets []string
}

// KafkaSecure starts the broker with TLS and SASL listeners beside its
// PLAINTEXT one (which Bootstrap still returns, for setting up topics):
// see KafkaSecurity. A CA, a broker certificate (for 127.0.0.1 and
// localhost) and a client certificate are generated with crypto/x509 and
// given to the broker as PEM (ssl.keystore.type=PEM,
// ssl.truststore.type=PEM). users are the SASL users. Kafka.Security
// returns the addresses and files.
func KafkaSecure(users ...SCRAMUser) KafkaOpt {
	return func(c *kafkaConfig) { c.secure = append([]SCRAMUser{}, users...) }
}

// Security returns the listeners and files of a broker started with
// KafkaSecure, or nil.
func (k *Kafka) Security() *KafkaSecurity { return k.security }

// pemCert is one generated certificate and key.
type pemCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func (p pemCert) certPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.der}))
}

func (p pemCert) keyPEM() (string, error) {
	der, err := x509.MarshalPKCS8PrivateKey(p.key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

// newCert makes a certificate for cn signed by parent (self-signed when
// parent is nil, as a CA).
func newCert(cn string, parent *pemCert, server bool) (pemCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pemCert{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return pemCert{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"kafkastreams-dr tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	signer, signerKey := tmpl, key
	switch {
	case parent == nil:
		tmpl.IsCA = true
		tmpl.BasicConstraintsValid = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	case server:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
		signer, signerKey = parent.cert, parent.key
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return pemCert{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return pemCert{}, err
	}
	return pemCert{cert: cert, key: key, der: der}, nil
}

// propertyValue escapes a multi-line PEM value for server.properties
// (java.util.Properties reads \n as a newline).
func propertyValue(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", `\n`)
}

// pemBody returns the base64 lines of a PEM block's body: each line of a
// private key is secret, so a test looks for each in every output.
func pemBody(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			lines = append(lines, l)
		}
	}
	return lines
}

// secureSetup generates the certificates into dir and returns the
// broker properties, the listeners to add (name://addr), their protocol
// map entries, and the storage format arguments for the SCRAM users.
func secureSetup(dir string, users []SCRAMUser, ports []int) (sec *KafkaSecurity, props map[string]string, listeners, protocols, formatArgs []string, err error) {
	ca, err := newCert("kdr-test-ca", nil, false)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	other, err := newCert("kdr-test-other-ca", nil, false)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	broker, err := newCert("localhost", &ca, true)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	client, err := newCert("kdr-test-client", &ca, false)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	brokerKey, err := broker.keyPEM()
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	clientKey, err := client.keyPEM()
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	sec = &KafkaSecurity{
		MTLS:           fmt.Sprintf("127.0.0.1:%d", ports[0]),
		SASLSSL:        fmt.Sprintf("127.0.0.1:%d", ports[1]),
		SCRAM256Only:   fmt.Sprintf("127.0.0.1:%d", ports[2]),
		CAFile:         filepath.Join(dir, "ca.pem"),
		OtherCAFile:    filepath.Join(dir, "other-ca.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client-key.pem"),
		Secrets:        append(pemBody(brokerKey), pemBody(clientKey)...),
	}
	for path, content := range map[string]string{
		sec.CAFile:         ca.certPEM(),
		sec.OtherCAFile:    other.certPEM(),
		sec.ClientCertFile: client.certPEM(),
		sec.ClientKeyFile:  clientKey,
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return nil, nil, nil, nil, nil, err
		}
	}

	props = map[string]string{
		"ssl.keystore.type":                                  "PEM",
		"ssl.keystore.certificate.chain":                     propertyValue(broker.certPEM()),
		"ssl.keystore.key":                                   propertyValue(brokerKey),
		"ssl.truststore.type":                                "PEM",
		"ssl.truststore.certificates":                        propertyValue(ca.certPEM()),
		"listener.name.mtls.ssl.client.auth":                 "required",
		"sasl.enabled.mechanisms":                            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.saslssl.sasl.enabled.mechanisms":      "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.scram256only.sasl.enabled.mechanisms": "SCRAM-SHA-256",
	}
	scramLogin := "org.apache.kafka.common.security.scram.ScramLoginModule required;"
	props["listener.name.saslssl.scram-sha-256.sasl.jaas.config"] = scramLogin
	props["listener.name.saslssl.scram-sha-512.sasl.jaas.config"] = scramLogin
	props["listener.name.scram256only.scram-sha-256.sasl.jaas.config"] = scramLogin
	plain := "org.apache.kafka.common.security.plain.PlainLoginModule required"
	for _, u := range users {
		switch u.Mechanism {
		case "PLAIN":
			plain += fmt.Sprintf(" user_%s=%q", u.Name, u.Password)
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
			formatArgs = append(formatArgs, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", u.Mechanism, u.Name, u.Password))
		default:
			return nil, nil, nil, nil, nil, fmt.Errorf("SASL user %s: mechanism %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", u.Name, u.Mechanism)
		}
	}
	props["listener.name.saslssl.plain.sasl.jaas.config"] = plain + ";"
	listeners = []string{"MTLS://" + sec.MTLS, "SASLSSL://" + sec.SASLSSL, "SCRAM256ONLY://" + sec.SCRAM256Only}
	protocols = []string{"MTLS:SSL", "SASLSSL:SASL_SSL", "SCRAM256ONLY:SASL_SSL"}
	return sec, props, listeners, protocols, formatArgs, nil
}
