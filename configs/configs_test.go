package configs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kafkastreams-dr/kafkastreams-dr/internal/config"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/testkit"
	"github.com/kafkastreams-dr/kafkastreams-dr/internal/ui/metrics"
)

// root is the repository's root, seen from this package's directory.
const root = ".."

// stampedVersion is the version the test stamps into the binary through
// the Dockerfile's -ldflags.
const stampedVersion = "v0.0.0-configs-test"

// bin is the kafkastreams-dr binary TestMain builds with the Dockerfile's
// own go build command line; binErr says why it could not.
var (
	bin    string
	binErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kdr-configs-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, binErr = buildFromDockerfile(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needBin returns the binary or fails the test with the build's error.
func needBin(t *testing.T) string {
	t.Helper()
	if binErr != nil {
		t.Fatalf("build kafkastreams-dr with the Dockerfile's command: %v", binErr)
	}
	return bin
}

// ---------------------------------------------------------------------
// Dockerfile

// instruction is one Dockerfile instruction, continuations joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
	line int
}

func readDockerfile(t testing.TB) []instruction {
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		if t != nil {
			t.Fatal(err)
		}
		return nil
	}
	return parseDockerfile(string(data))
}

func parseDockerfile(s string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start})
		cur.Reset()
	}
	return out
}

// shellWords splits a shell command line into words: whitespace
// separates, single and double quotes group (no expansion is done).
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// dockerBuildCommand returns the env assignments and the go command's
// arguments of the Dockerfile's RUN ... go build, with --mount options
// dropped.
func dockerBuildCommand(ins []instruction) (env []string, args []string, err error) {
	for _, in := range ins {
		if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
			continue
		}
		words, err := shellWords(in.args)
		if err != nil {
			return nil, nil, fmt.Errorf("Dockerfile line %d: %w", in.line, err)
		}
		for len(words) > 0 && strings.HasPrefix(words[0], "--mount=") {
			words = words[1:]
		}
		for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
			env = append(env, words[0])
			words = words[1:]
		}
		if len(words) < 2 || words[0] != "go" || words[1] != "build" {
			return nil, nil, fmt.Errorf("Dockerfile line %d: want [ENV=... ] go build ..., got %q", in.line, in.args)
		}
		return env, words[1:], nil
	}
	return nil, nil, errors.New("the Dockerfile has no RUN ... go build")
}

// buildFromDockerfile builds the binary into dir with the Dockerfile's go
// build command: its environment assignments and flags, ${VERSION} set to
// stampedVersion and ${TARGETOS}/${TARGETARCH} to this machine's, -o
// pointing into dir.
func buildFromDockerfile(dir string) (string, error) {
	env, args, err := dockerBuildCommand(readDockerfile(nil))
	if err != nil {
		return "", err
	}
	vars := map[string]string{"VERSION": stampedVersion, "TARGETOS": runtime.GOOS, "TARGETARCH": runtime.GOARCH}
	var bad []string
	expand := func(s string) string {
		return os.Expand(s, func(k string) string {
			v, ok := vars[k]
			if !ok {
				bad = append(bad, k)
			}
			return v
		})
	}
	out := filepath.Join(dir, "kafkastreams-dr")
	for i := range args {
		args[i] = expand(args[i])
		if args[i] == "-o" && i+1 < len(args) {
			args[i+1] = out
		}
	}
	for i := range env {
		env[i] = expand(env[i])
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("the Dockerfile's go build uses variables the test does not know: %v", bad)
	}
	if !slices.Contains(args, out) {
		return "", fmt.Errorf("the Dockerfile's go build has no -o: %v", args)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, b)
	}
	return out, nil
}

// goVersion is the go directive of go.mod.
func goVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

func TestDockerfile(t *testing.T) {
	ins := readDockerfile(t)
	var froms []instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("%d FROM lines, want a multi-stage build (a builder and a runtime image)", len(froms))
	}
	fromImage := func(in instruction) (image, stage string) {
		words, _ := shellWords(in.args)
		for len(words) > 0 && strings.HasPrefix(words[0], "--") {
			words = words[1:]
		}
		if len(words) == 3 && strings.EqualFold(words[1], "AS") {
			return words[0], words[2]
		}
		return words[0], ""
	}
	builder, stage := fromImage(froms[0])
	if want := "golang:" + goVersion(t); builder != want || stage == "" {
		t.Errorf("Dockerfile line %d: builder FROM %s AS %q, want %s AS <stage> (go.mod's Go version)", froms[0].line, builder, stage, want)
	}
	final, _ := fromImage(froms[len(froms)-1])
	if !(strings.HasPrefix(final, "gcr.io/distroless/static") && strings.HasSuffix(final, ":nonroot")) && final != "scratch" {
		t.Errorf("runtime image %s, want gcr.io/distroless/static*:nonroot or scratch", final)
	}
	// The runtime stage: USER, COPY --from=<builder>, ENTRYPOINT.
	var runtimeStage []instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			runtimeStage = nil
		}
		runtimeStage = append(runtimeStage, in)
	}
	var user, entrypoint, copied string
	for _, in := range runtimeStage {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			var ep []string
			if err := json.Unmarshal([]byte(in.args), &ep); err != nil || len(ep) != 1 {
				t.Errorf("Dockerfile line %d: ENTRYPOINT %s, want the exec form with the binary alone", in.line, in.args)
			} else {
				entrypoint = ep[0]
			}
		case "COPY":
			words, _ := shellWords(in.args)
			if slices.Contains(words, "--from="+stage) {
				copied = words[len(words)-1]
			}
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid != "65532" {
		t.Errorf("runtime USER %q, want the numeric non-root 65532 (distroless nonroot; the manifests' runAsUser)", user)
	}
	if entrypoint == "" || entrypoint != copied {
		t.Errorf("ENTRYPOINT %q, want the binary copied from the builder (%q)", entrypoint, copied)
	}

	env, args, err := dockerBuildCommand(ins)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("go build environment %v: want CGO_ENABLED=0 (a static binary)", env)
	}
	if !slices.Contains(args, "-trimpath") {
		t.Errorf("go build %v: want -trimpath", args)
	}
	i := slices.Index(args, "-ldflags")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("go build %v: no -ldflags", args)
	}
	ld, _ := shellWords(args[i+1])
	for _, want := range [][]string{{"-s"}, {"-w"}, {"-X", "main.version=${VERSION}"}} {
		found := false
		for j := range ld {
			if j+len(want) <= len(ld) && slices.Equal(ld[j:j+len(want)], want) {
				found = true
			}
		}
		if !found {
			t.Errorf("-ldflags %q: missing %q", args[i+1], strings.Join(want, " "))
		}
	}
	hasVersionArg := false
	for _, in := range ins {
		if in.cmd == "ARG" && strings.HasPrefix(in.args, "VERSION") {
			hasVersionArg = true
		}
	}
	if !hasVersionArg {
		t.Errorf("no ARG VERSION: docker build --build-arg VERSION=... would not reach the ldflags")
	}

	// The binary built with exactly that command line.
	b := needBin(t)
	out, err := exec.Command(b, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("version: %v\n%s", err, out)
	}
	if want := "kafkastreams-dr " + stampedVersion + " ("; !strings.HasPrefix(string(out), want) {
		t.Errorf("version printed %q, want it to start with %q (-X main.version from the Dockerfile's ldflags)", out, want)
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("the binary has an ELF interpreter: it is dynamically linked, not static")
			}
		}
		if f.Section(".symtab") != nil {
			t.Errorf("the binary has a symbol table: -ldflags -s did not apply")
		}
	}
}

// TestDockerignore checks that the build context keeps what go build
// needs: go.mod, go.sum and every package the binary is built from.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.Trim(l, "/"))
		}
	}
	ignored := func(rel string) string {
		parts := strings.Split(rel, "/")
		for _, p := range patterns {
			for i := range parts {
				if ok, _ := path.Match(p, strings.Join(parts[:i+1], "/")); ok {
					return p
				}
			}
		}
		return ""
	}
	if ignored(".git") == "" {
		t.Errorf(".dockerignore does not exclude .git")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", filepath.Join(root, "cmd", "kafkastreams-dr")).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	need := []string{"go.mod", "go.sum"}
	for _, d := range strings.Fields(string(out)) {
		if rel, err := filepath.Rel(abs, d); err == nil && !strings.HasPrefix(rel, "..") {
			need = append(need, filepath.ToSlash(rel))
		}
	}
	for _, n := range need {
		if p := ignored(n); p != "" {
			t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, n)
		}
	}
}

// ---------------------------------------------------------------------
// The CLI's flag parser

var flagInHelp = func(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s+(-[a-zA-Z], )?` + regexp.QuoteMeta(name) + `[\s=,]`)
}

// checkCommandLine checks that the CLI's parser accepts args (a command
// line without the binary's name): the command path, then flags. It runs
// args with --help appended (cobra parses every flag, then prints the help
// instead of running), and checks each flag name against the command's
// --help.
func checkCommandLine(t *testing.T, where string, args []string) {
	t.Helper()
	b := needBin(t)
	var path []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		path = append(path, a)
	}
	if len(path) == 0 {
		t.Errorf("%s: %q names no command", where, args)
		return
	}
	out, err := exec.Command(b, append(slices.Clone(args), "--help")...).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("unknown flag")) || bytes.Contains(out, []byte("unknown shorthand")) || bytes.HasPrefix(out, []byte("Error")) {
		t.Errorf("%s: kafkastreams-dr %s: the flag parser refused it (%v):\n%s", where, strings.Join(args, " "), err, out)
		return
	}
	help, err := exec.Command(b, append(slices.Clone(path), "--help")...).CombinedOutput()
	if err != nil {
		t.Errorf("%s: kafkastreams-dr %s --help: %v", where, strings.Join(path, " "), err)
		return
	}
	if !bytes.Contains(help, []byte("kafkastreams-dr "+strings.Join(path, " "))) {
		t.Errorf("%s: %q is not a command of kafkastreams-dr:\n%s", where, strings.Join(path, " "), help)
	}
	for _, a := range args[len(path):] {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		if !flagInHelp(name).Match(help) {
			t.Errorf("%s: flag %s is not in kafkastreams-dr %s --help", where, name, strings.Join(path, " "))
		}
	}
}

// ---------------------------------------------------------------------
// Example configs

// testPEM returns a self-signed CA certificate and its key, PEM-encoded.
func testPEM(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kdr test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// configFile is a file a config names, by kind.
type configFile struct {
	key, path, kind string // kind: ca, cert, key, password
}

// configFiles returns the files cfg names (TLS CA, client certificate and
// key, SASL password file) of the source and of the target.
func configFiles(cfg *config.Config) []configFile {
	var out []configFile
	add := func(key string, c config.Cluster) {
		t, s := c.Security.TLS, c.Security.SASL
		for _, f := range []configFile{{key + ".security.tls.ca_file", t.CAFile, "ca"}, {key + ".security.tls.cert_file", t.CertFile, "cert"},
			{key + ".security.tls.key_file", t.KeyFile, "key"}, {key + ".security.sasl.password_file", s.PasswordFile, "password"}} {
			if f.path != "" {
				out = append(out, f)
			}
		}
	}
	add("source", cfg.Source)
	if cfg.Target != nil {
		add("target", *cfg.Target)
	}
	return out
}

// localFiles writes a stand-in for each file path, of the right kind, and
// returns the config text with the paths replaced by the stand-ins.
func localFiles(t *testing.T, text string, files []configFile) string {
	t.Helper()
	cert, key := testPEM(t)
	content := map[string][]byte{"ca": cert, "cert": cert, "key": key, "password": []byte("test-password\n")}
	dir := t.TempDir()
	done := map[string]bool{}
	for i, f := range files {
		if done[f.path] {
			continue
		}
		done[f.path] = true
		local := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(f.path)))
		if err := os.WriteFile(local, content[f.kind], 0o600); err != nil {
			t.Fatal(err)
		}
		text = strings.ReplaceAll(text, f.path, local)
	}
	return text
}

// validate runs `kafkastreams-dr config validate -c file` with exactly the
// environment env (plus PATH and HOME) and returns the exit status, stdout
// and stderr.
func validate(t *testing.T, file string, env map[string]string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(needBin(t), "config", "validate", "-c", file)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// parseWithEnv parses a config with every ${VAR} it uses set to a
// placeholder, as config.Load would (files are not read).
func parseWithEnv(t *testing.T, text []byte, name string) (*config.Config, map[string]string) {
	t.Helper()
	env := map[string]string{}
	for _, m := range envRef.FindAllSubmatch(text, -1) {
		env[string(m[1])] = "test-secret"
		t.Setenv(string(m[1]), "test-secret")
	}
	cfg, err := config.Parse(text, name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cfg, env
}

// TestExampleConfigs runs `config validate` on every configs/*.yaml with
// the environment variables it names set. A file it names that exists
// only in the container (the CA bundle mounted from a Secret) must be the
// only problem on this machine; with a stand-in in its place the file must
// validate, without warnings.
func TestExampleConfigs(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example configs in configs/ (%v)", err)
	}
	var filesystem, irsa, pathStyle, scramTLS bool
	for _, f := range files {
		t.Run(strings.TrimSuffix(f, ".yaml"), func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg, env := parseWithEnv(t, text, f)
			st := cfg.Storage
			filesystem = filesystem || st.Backend == config.BackendFilesystem
			irsa = irsa || (st.Backend == config.BackendS3 && st.Endpoint == "" && !strings.Contains(string(text), "AWS_ACCESS_KEY_ID:"))
			pathStyle = pathStyle || (st.Backend == config.BackendS3 && st.Endpoint != "" && st.PathStyle)
			sec := cfg.Source.Security
			scramTLS = scramTLS || (strings.HasPrefix(sec.SASL.Mechanism, "SCRAM-") && sec.TLS.Enabled && sec.SASL.Password != "" && len(env) > 0)

			var missing []configFile
			for _, cf := range configFiles(cfg) {
				if _, err := os.Stat(cf.path); err != nil {
					missing = append(missing, cf)
				}
			}
			code, stdout, stderr := validate(t, f, env)
			if len(missing) == 0 {
				if code != 0 || !strings.Contains(stdout, "config OK") {
					t.Fatalf("config validate -c %s: exit %d\n%s%s", f, code, stdout, stderr)
				}
			} else {
				// Only the container's files are missing here, each named once.
				var problems []string
				for _, l := range strings.Split(stderr, "\n") {
					if strings.HasPrefix(l, "  ") {
						problems = append(problems, strings.TrimSpace(l))
					}
				}
				if code != 2 || len(problems) != len(missing) {
					t.Fatalf("config validate -c %s without %v: exit %d, %d problems, want exit 2 and one problem per missing file:\n%s", f, missing, code, len(problems), stderr)
				}
				for i, cf := range missing {
					if !strings.HasPrefix(problems[i], cf.key+": cannot read "+cf.path) {
						t.Errorf("problem %q, want %s: cannot read %s", problems[i], cf.key, cf.path)
					}
				}
				local := filepath.Join(t.TempDir(), f)
				if err := os.WriteFile(local, []byte(localFiles(t, string(text), missing)), 0o644); err != nil {
					t.Fatal(err)
				}
				code, stdout, stderr = validate(t, local, env)
				if code != 0 || !strings.Contains(stdout, "config OK") {
					t.Fatalf("config validate -c %s (its files stood in for): exit %d\n%s%s", f, code, stdout, stderr)
				}
			}
			if strings.Contains(stderr, "warning:") {
				t.Errorf("config validate -c %s warns; an example should not:\n%s", f, stderr)
			}
		})
	}
	for what, ok := range map[string]bool{"a local directory": filesystem, "AWS S3 with IRSA": irsa,
		"an S3-compatible store with path-style addressing": pathStyle, "SASL/SCRAM and TLS with the password from ${ENV}": scramTLS} {
		if !ok {
			t.Errorf("no example config for %s", what)
		}
	}
}

// ---------------------------------------------------------------------
// Kubernetes manifests

// kustomization is the part of kustomize's Kustomization the manifests
// use; unknown fields fail the strict decode.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
	} `json:"labels"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
		Digest  string `json:"digest"`
	} `json:"images"`
}

// manifests are the decoded objects of configs/kubernetes, by file.
type manifests struct {
	kustomization   kustomization
	files           map[string][]string // file -> kinds
	namespaces      []corev1.Namespace
	serviceAccounts []corev1.ServiceAccount
	configMaps      []corev1.ConfigMap
	secrets         map[string]corev1.Secret // by name
	cronJobs        []batchv1.CronJob
	jobs            []batchv1.Job
	objectMeta      map[string]string // "file kind name" -> namespace
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// loadManifests decodes every document of every YAML file under
// configs/kubernetes strictly into its Kubernetes API type (or the
// Kustomization struct above): an unknown or misspelt field fails.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests in configs/kubernetes (%v)", err)
	}
	m := &manifests{files: map[string][]string{}, secrets: map[string]corev1.Secret{}, objectMeta: map[string]string{}}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Base(p)
		for i, doc := range docSeparator.Split(string(data), -1) {
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := sigsyaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s document %d: %v", file, i+1, err)
			}
			if head.Kind == "" {
				if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) != "" {
					t.Fatalf("%s document %d has no kind", file, i+1)
				}
				continue
			}
			strict := func(v any) {
				t.Helper()
				if err := sigsyaml.UnmarshalStrict([]byte(doc), v); err != nil {
					t.Fatalf("%s document %d (%s): strict decode into the Kubernetes API type: %v", file, i+1, head.Kind, err)
				}
			}
			want := map[string]string{"Kustomization": "kustomize.config.k8s.io/v1beta1", "Namespace": "v1", "ServiceAccount": "v1",
				"ConfigMap": "v1", "Secret": "v1", "CronJob": "batch/v1", "Job": "batch/v1"}[head.Kind]
			if want == "" {
				t.Fatalf("%s document %d: kind %s: the test does not know it; decode it strictly here", file, i+1, head.Kind)
			}
			if head.APIVersion != want {
				t.Errorf("%s document %d: %s apiVersion %q, want %q", file, i+1, head.Kind, head.APIVersion, want)
			}
			m.files[file] = append(m.files[file], head.Kind)
			switch head.Kind {
			case "Kustomization":
				strict(&m.kustomization)
			case "Namespace":
				var o corev1.Namespace
				strict(&o)
				m.namespaces = append(m.namespaces, o)
			case "ServiceAccount":
				var o corev1.ServiceAccount
				strict(&o)
				m.serviceAccounts = append(m.serviceAccounts, o)
				m.objectMeta[file+" "+head.Kind+" "+o.Name] = o.Namespace
			case "ConfigMap":
				var o corev1.ConfigMap
				strict(&o)
				m.configMaps = append(m.configMaps, o)
				m.objectMeta[file+" "+head.Kind+" "+o.Name] = o.Namespace
			case "Secret":
				var o corev1.Secret
				strict(&o)
				m.secrets[o.Name] = o
				m.objectMeta[file+" "+head.Kind+" "+o.Name] = o.Namespace
			case "CronJob":
				var o batchv1.CronJob
				strict(&o)
				m.cronJobs = append(m.cronJobs, o)
				m.objectMeta[file+" "+head.Kind+" "+o.Name] = o.Namespace
			case "Job":
				var o batchv1.Job
				strict(&o)
				m.jobs = append(m.jobs, o)
				m.objectMeta[file+" "+head.Kind+" "+o.Name] = o.Namespace
			}
		}
	}
	return m
}

// TestKustomization checks that kustomization.yaml lists exactly the
// files of the standing resources (never a Job or a Secret: applying it
// must not start a restore or overwrite a real secret) and that every
// object lives in its namespace.
func TestKustomization(t *testing.T) {
	m := loadManifests(t)
	k := m.kustomization
	if k.Kind != "Kustomization" || k.Namespace == "" {
		t.Fatalf("kubernetes/kustomization.yaml: kind %q namespace %q, want a Kustomization with a namespace", k.Kind, k.Namespace)
	}
	var want []string
	for file, kinds := range m.files {
		standing := true
		for _, kind := range kinds {
			if kind == "Job" || kind == "Secret" || kind == "Kustomization" {
				standing = false
			}
		}
		if standing {
			want = append(want, file)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, want %v (every manifest but the Jobs, the example Secrets and itself)", got, want)
	}
	for key, ns := range m.objectMeta {
		if ns != k.Namespace {
			t.Errorf("%s: namespace %q, want the kustomization's %q (the Jobs are applied without kustomize)", key, ns, k.Namespace)
		}
	}
	if len(m.namespaces) != 1 || m.namespaces[0].Name != k.Namespace {
		t.Errorf("want one Namespace, %s", k.Namespace)
	}
	// The image is not published: images: must rewrite the name every
	// workload uses (the Jobs, created without kustomize, use the same).
	images := map[string]bool{}
	for _, im := range k.Images {
		if im.Name == "" || im.NewName == "" || (im.NewTag == "" && im.Digest == "") {
			t.Errorf("kustomization images entry %+v: want name, newName and newTag or digest", im)
		}
		images[im.Name] = true
	}
	for _, w := range m.workloads() {
		for _, c := range w.job.Template.Spec.Containers {
			name, _, _ := strings.Cut(c.Image, "@")
			if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
				name = name[:i]
			}
			if !images[name] {
				t.Errorf("%s container %s: image %s is not rewritten by the kustomization's images: %v", w.name, c.Name, c.Image, slices.Sorted(mapsKeys(images)))
			}
		}
	}
}

// workload is one pod template to check.
type workload struct {
	name string
	job  batchv1.JobSpec
}

func (m *manifests) workloads() []workload {
	var out []workload
	for _, c := range m.cronJobs {
		out = append(out, workload{"CronJob " + c.Name, c.Spec.JobTemplate.Spec})
	}
	for _, j := range m.jobs {
		out = append(out, workload{"Job " + j.Name, j.Spec})
	}
	return out
}

// TestBackupCronJob checks the scheduling settings the issue asks for.
func TestBackupCronJob(t *testing.T) {
	m := loadManifests(t)
	if len(m.cronJobs) != 1 {
		t.Fatalf("%d CronJobs, want the backup's", len(m.cronJobs))
	}
	c := m.cronJobs[0]
	s := c.Spec
	if s.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q, want Forbid", s.ConcurrencyPolicy)
	}
	if s.StartingDeadlineSeconds == nil || *s.StartingDeadlineSeconds <= 0 {
		t.Errorf("startingDeadlineSeconds not set")
	}
	if s.SuccessfulJobsHistoryLimit == nil || s.FailedJobsHistoryLimit == nil {
		t.Errorf("history limits not set")
	}
	j := s.JobTemplate.Spec
	if j.BackoffLimit == nil {
		t.Errorf("backoffLimit not set")
	}
	if j.ActiveDeadlineSeconds == nil {
		t.Fatalf("activeDeadlineSeconds not set")
	}
	// A run must end before the next slot, or Forbid skips that one.
	if regexp.MustCompile(`^\d+ \* \* \* \*$`).MatchString(s.Schedule) && *j.ActiveDeadlineSeconds >= 3600 {
		t.Errorf("hourly schedule %q with activeDeadlineSeconds %d: a stuck run would make Forbid skip the next", s.Schedule, *j.ActiveDeadlineSeconds)
	}
	args := j.Template.Spec.Containers[0].Args
	if len(args) == 0 || args[0] != "backup" {
		t.Errorf("the CronJob runs %v, want backup", args)
	}
	// Exit 2 (refused, invalid config) and 3 (partial: records deleted
	// before a backup read them) cannot be helped by a retry.
	failJob := map[int32]bool{}
	if j.PodFailurePolicy != nil {
		for _, r := range j.PodFailurePolicy.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil && r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
				for _, v := range r.OnExitCodes.Values {
					failJob[v] = true
				}
			}
		}
	}
	if !failJob[2] || !failJob[3] {
		t.Errorf("podFailurePolicy fails the Job on exit codes %v, want 2 and 3 (a retry cannot help)", slices.Sorted(mapsKeys32(failJob)))
	}
	// Exit 11 (another run holds the repository lock) is transient: the
	// retry waits for the lock again.
	if failJob[11] {
		t.Errorf("podFailurePolicy fails the Job on exit 11 (lock held): a retry can help")
	}
	// A lock left by a killed run resolves by waiting: --lock-wait, and
	// the deadline leaves room for it.
	if i := slices.Index(args, "--lock-wait"); i < 0 || i+1 >= len(args) {
		t.Errorf("the CronJob runs %v, want an explicit --lock-wait (a killed run's lock goes stale after 2 minutes)", args)
	} else if d, err := time.ParseDuration(args[i+1]); err != nil || d < 2*time.Minute || float64(*j.ActiveDeadlineSeconds) < d.Seconds()+1800 {
		t.Errorf("--lock-wait %s with activeDeadlineSeconds %d: want a wait of at least the lock's 2-minute staleness (%v) and 30 minutes of run after it", args[i+1], *j.ActiveDeadlineSeconds, err)
	}
	// Measured: 328 MiB peak with 3 partitions and 64 MiB segments, 217
	// MiB with GOMEMLIMIT=200MiB: a limit above the measured peak and a
	// GOMEMLIMIT under the limit.
	checkMemory(t, j.Template.Spec.Containers[0], resource.MustParse("400Mi"))
}

// TestShardedBackupJob checks job-backup-sharded.yaml: an Indexed Job
// whose pods run `backup` as shard JOB_COMPLETION_INDEX of
// KAFKASTREAMS_DR_SHARDS = completions = parallelism, sharing the Job's
// controller uid as the run (KAFKASTREAMS_DR_SHARD_RUN, downward API), and
// failing the Job on exit 2 and 3; and that the binary takes that
// environment as the shard (the command line with the pod's env, index 2).
func TestShardedBackupJob(t *testing.T) {
	checkShardedJob(t, "kafkastreams-dr-backup-sharded", "backup", []int32{2, 3})
}

// TestShardedRestoreJob checks job-restore-sharded.yaml as
// TestShardedBackupJob the backup's: pods running `restore` as shard
// JOB_COMPLETION_INDEX of KAFKASTREAMS_DR_SHARDS = completions =
// parallelism, the Job's uid as the run, a --backup-id (never latest), the
// Job failed on exit 2 (refused), not on 11 (the lock: retried).
func TestShardedRestoreJob(t *testing.T) {
	j := checkShardedJob(t, "kafkastreams-dr-restore-sharded", "restore", []int32{2})
	args := j.Spec.Template.Spec.Containers[0].Args
	if i := slices.Index(args, "--backup-id"); i < 0 || i+1 >= len(args) || args[i+1] == "latest" {
		t.Errorf("args %v, want --backup-id with the verified id (not latest)", args)
	}
	if !slices.Contains(args, "--yes") || slices.Contains(args, "--push-gateway") {
		t.Errorf("args %v, want --yes (no terminal) and no --push-gateway (the shards would push over each other)", args)
	}
}

// checkShardedJob checks the Indexed Job name running command as shards
// (see TestShardedBackupJob), the Job failed on exactly failOn of 2, 3
// and 11, and returns it.
func checkShardedJob(t *testing.T, name, command string, failOn []int32) *batchv1.Job {
	t.Helper()
	m := loadManifests(t)
	var j *batchv1.Job
	for i := range m.jobs {
		if m.jobs[i].Name == name {
			j = &m.jobs[i]
		}
	}
	if j == nil {
		t.Fatalf("no Job %s", name)
	}
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("completionMode %v, want Indexed (JOB_COMPLETION_INDEX is the shard)", s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != 3 || *s.Parallelism != *s.Completions {
		t.Fatalf("completions %v parallelism %v, want 3 and 3 (every shard at once)", s.Completions, s.Parallelism)
	}
	c := s.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != command || slices.Contains(c.Args, "--shard") {
		t.Fatalf("args %v, want %s with the shard from the environment", c.Args, command)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["KAFKASTREAMS_DR_SHARDS"]; e.Value != strconv.Itoa(int(*s.Completions)) {
		t.Errorf("KAFKASTREAMS_DR_SHARDS %q, want completions, %d", e.Value, *s.Completions)
	}
	if e := env["KAFKASTREAMS_DR_SHARD_RUN"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/controller-uid']" {
		t.Errorf("KAFKASTREAMS_DR_SHARD_RUN %+v, want the pod label batch.kubernetes.io/controller-uid (downward API)", e.ValueFrom)
	}
	failJob := map[int32]bool{}
	if s.PodFailurePolicy != nil {
		for _, r := range s.PodFailurePolicy.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil {
				for _, v := range r.OnExitCodes.Values {
					failJob[v] = true
				}
			}
		}
	}
	for _, code := range []int32{2, 3, 11} {
		if failJob[code] != slices.Contains(failOn, code) {
			t.Errorf("podFailurePolicy fails the Job on %v, want %v of 2, 3 and 11", slices.Sorted(mapsKeys32(failJob)), failOn)
			break
		}
	}
	// The binary reads that environment as shard 3 of 3: a bad index is
	// refused naming it (exit 2), so the variables are the ones it reads.
	cmd := exec.Command(needBin(t), command, "-c", "/nonexistent.yaml")
	cmd.Env = append(os.Environ(), "KAFKASTREAMS_DR_SHARDS="+env["KAFKASTREAMS_DR_SHARDS"].Value, "JOB_COMPLETION_INDEX=3", "KAFKASTREAMS_DR_SHARD_RUN=uid")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !bytes.Contains(out, []byte(`$JOB_COMPLETION_INDEX/$KAFKASTREAMS_DR_SHARDS "3/3"`)) {
		t.Errorf("%s with JOB_COMPLETION_INDEX=3 and the Job's KAFKASTREAMS_DR_SHARDS: exit %d, want 2 naming them:\n%s", command, cmd.ProcessState.ExitCode(), out)
	}
	return j
}

func mapsKeys32(m map[int32]bool) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkMemory checks a container's memory: a limit of at least minLimit,
// and GOMEMLIMIT set below the limit (the Go GC's soft limit keeps the heap
// inside it) with some room left for memory outside the heap.
func checkMemory(t *testing.T, c corev1.Container, minLimit resource.Quantity) {
	t.Helper()
	lim := c.Resources.Limits[corev1.ResourceMemory]
	if lim.Cmp(minLimit) < 0 {
		t.Errorf("container %s: memory limit %s, want at least %s (measured peaks: docs/OPERATIONS.md, \"Size\")", c.Name, lim.String(), minLimit.String())
	}
	var gml string
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			gml = e.Value
		}
	}
	if gml == "" {
		t.Errorf("container %s: no GOMEMLIMIT: without it the Go GC lets the heap grow to twice the live heap, past the memory limit", c.Name)
		return
	}
	n, ok := strings.CutSuffix(gml, "MiB")
	mib, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		t.Errorf("container %s: GOMEMLIMIT %q, want NMiB", c.Name, gml)
		return
	}
	if bytes := mib << 20; bytes >= lim.Value() || bytes > lim.Value()*9/10 || bytes < lim.Value()/2 {
		t.Errorf("container %s: GOMEMLIMIT %s with memory limit %s: want 50-90%% of the limit", c.Name, gml, lim.String())
	}
}

// TestWorkloads checks every pod template of the CronJob and the Jobs:
// hardening, resources, service account, Secret references, that the
// container's command line is one the CLI's flag parser accepts, and that
// the config it names (from the ConfigMap, with the container's
// environment and mounted files) passes `config validate`.
func TestWorkloads(t *testing.T) {
	m := loadManifests(t)
	ws := m.workloads()
	if len(ws) != 5 {
		t.Fatalf("%d workloads, want the backup CronJob and the sharded backup, restore, sharded restore and drill Jobs", len(ws))
	}
	var components []string
	for _, w := range ws {
		t.Run(strings.ReplaceAll(w.name, " ", "_"), func(t *testing.T) {
			checkWorkload(t, m, w)
			if len(w.job.Template.Spec.Containers) > 0 && len(w.job.Template.Spec.Containers[0].Args) > 0 {
				components = append(components, w.job.Template.Spec.Containers[0].Args[0])
			}
		})
	}
	slices.Sort(components)
	if want := []string{"backup", "backup", "drill", "restore", "restore"}; !slices.Equal(components, want) {
		t.Errorf("the workloads run %v, want %v", components, want)
	}
}

func checkWorkload(t *testing.T, m *manifests, w workload) {
	j := w.job
	if j.ActiveDeadlineSeconds == nil || j.BackoffLimit == nil {
		t.Errorf("activeDeadlineSeconds and backoffLimit must be set")
	}
	pod := j.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never (the Job retries in a new pod; podFailurePolicy needs it)", pod.RestartPolicy)
	}
	// The service account: the one with the IRSA annotation.
	var sa *corev1.ServiceAccount
	for i := range m.serviceAccounts {
		if m.serviceAccounts[i].Name == pod.ServiceAccountName {
			sa = &m.serviceAccounts[i]
		}
	}
	if sa == nil {
		t.Errorf("serviceAccountName %q is not a ServiceAccount of the manifests", pod.ServiceAccountName)
	} else if !strings.HasPrefix(sa.Annotations["eks.amazonaws.com/role-arn"], "arn:aws:iam::") {
		t.Errorf("ServiceAccount %s has no eks.amazonaws.com/role-arn annotation (IRSA)", sa.Name)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot, runAsUser 65532 (the image's USER), seccompProfile RuntimeDefault", psc)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Command) != 0 {
		t.Errorf("command %v: leave it to the image's ENTRYPOINT, the binary", c.Command)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v: want readOnlyRootFilesystem, allowPrivilegeEscalation false, capabilities drop [ALL]", sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
	}
	if req, lim := c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceMemory]; lim.IsZero() || lim.Cmp(req) < 0 {
		t.Errorf("memory limit %s, want one at or above the request %s", lim.String(), req.String())
	}
	checkMemory(t, c, resource.MustParse("400Mi"))
	if p := j.PodFailurePolicy; p != nil {
		for _, r := range p.Rules {
			if r.OnExitCodes != nil && r.OnExitCodes.ContainerName != nil && *r.OnExitCodes.ContainerName != c.Name {
				t.Errorf("podFailurePolicy names container %q, not %q", *r.OnExitCodes.ContainerName, c.Name)
			}
		}
	}
	mounts := map[string]corev1.Volume{} // mount path -> volume
	for _, vm := range c.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			t.Errorf("volumeMount %s: no such volume", vm.Name)
			continue
		}
		mounts[vm.MountPath] = v
	}
	if v, ok := mounts["/tmp"]; !ok || v.EmptyDir == nil {
		t.Errorf("no emptyDir at /tmp (the root filesystem is read-only)")
	}
	// Secret references: each names a Secret and key of secrets.example.yaml.
	hasKey := func(name, key string) bool {
		s, ok := m.secrets[name]
		if !ok {
			return false
		}
		_, a := s.StringData[key]
		_, b := s.Data[key]
		return a || b
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = "test-secret" // from a Secret
		if e.ValueFrom == nil {
			env[e.Name] = e.Value // a literal (GOMEMLIMIT): the binary reads it as is
		}
		if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && !hasKey(r.SecretKeyRef.Name, r.SecretKeyRef.Key) {
			t.Errorf("env %s: Secret %s key %s is not in secrets.example.yaml", e.Name, r.SecretKeyRef.Name, r.SecretKeyRef.Key)
		}
	}
	for _, v := range volumes {
		if v.Secret == nil {
			continue
		}
		for _, it := range v.Secret.Items {
			if !hasKey(v.Secret.SecretName, it.Key) {
				t.Errorf("volume %s: Secret %s key %s is not in secrets.example.yaml", v.Name, v.Secret.SecretName, it.Key)
			}
		}
	}

	checkCommandLine(t, w.name, c.Args)

	// The config: -c names a file of a mounted ConfigMap.
	var cfgPath string
	for i, a := range c.Args {
		if (a == "-c" || a == "--config") && i+1 < len(c.Args) {
			cfgPath = c.Args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--config="); ok {
			cfgPath = v
		}
	}
	if cfgPath == "" {
		t.Fatalf("args %v name no config (-c FILE)", c.Args)
	}
	v, ok := mounts[path.Dir(cfgPath)]
	if !ok || v.ConfigMap == nil {
		t.Fatalf("config %s is not in a mounted ConfigMap volume", cfgPath)
	}
	key := path.Base(cfgPath)
	for _, it := range v.ConfigMap.Items {
		if it.Path == key {
			key = it.Key
		}
	}
	var text string
	for _, cm := range m.configMaps {
		if cm.Name == v.ConfigMap.Name {
			text = cm.Data[key]
		}
	}
	if text == "" {
		t.Fatalf("config %s: ConfigMap %s has no key %s", cfgPath, v.ConfigMap.Name, key)
	}
	for _, ref := range envRef.FindAllStringSubmatch(text, -1) {
		if _, ok := env[ref[1]]; !ok {
			t.Errorf("config %s uses ${%s}, which the container's env does not set", cfgPath, ref[1])
		}
	}
	cfg, _ := parseWithEnv(t, []byte(text), cfgPath)
	// Each file the config names is mounted from a Secret.
	files := configFiles(cfg)
	for _, f := range files {
		v, ok := mounts[path.Dir(f.path)]
		if !ok || v.Secret == nil {
			t.Errorf("config %s: %s %s is not in a mounted Secret volume", cfgPath, f.key, f.path)
			continue
		}
		found := len(v.Secret.Items) == 0 && hasKey(v.Secret.SecretName, path.Base(f.path))
		for _, it := range v.Secret.Items {
			found = found || it.Path == path.Base(f.path)
		}
		if !found {
			t.Errorf("config %s: %s %s: the Secret volume %s does not project %s", cfgPath, f.key, f.path, v.Name, path.Base(f.path))
		}
	}
	// And the config validates with the container's environment and
	// stand-ins for the mounted files.
	local := filepath.Join(t.TempDir(), path.Base(cfgPath))
	if err := os.WriteFile(local, []byte(localFiles(t, text, files)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := validate(t, local, env)
	if code != 0 || strings.Contains(stderr, "warning:") {
		t.Errorf("config validate of ConfigMap %s key %s with the container's env: exit %d\n%s%s", v.ConfigMap.Name, key, code, stdout, stderr)
	}
}

// ---------------------------------------------------------------------
// CI drill: the workflow and make drill

type workflow struct {
	Name        string            `yaml:"name"`
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Concurrency map[string]any    `yaml:"concurrency"`
	Jobs        map[string]struct {
		RunsOn         string `yaml:"runs-on"`
		TimeoutMinutes int    `yaml:"timeout-minutes"`
		Services       map[string]struct {
			Image string            `yaml:"image"`
			Ports []string          `yaml:"ports"`
			Env   map[string]string `yaml:"env"`
		} `yaml:"services"`
		Steps []struct {
			Name            string         `yaml:"name"`
			Uses            string         `yaml:"uses"`
			Run             string         `yaml:"run"`
			If              string         `yaml:"if"`
			With            map[string]any `yaml:"with"`
			ContinueOnError bool           `yaml:"continue-on-error"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestDrillWorkflow checks .github/workflows/drill.yml: it parses, runs
// the drill against the scratch cluster it starts, uploads the JUnit report
// whatever the outcome, fails on a failed drill, and runs the same command
// as `make drill`.
func TestDrillWorkflow(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "drill.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var wf workflow
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("drill.yml: %v", err)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("drill.yml: %d jobs, want 1", len(wf.Jobs))
	}
	var drill []string
	var junitUpload string
	for name, job := range wf.Jobs {
		kafka, ok := job.Services["kafka"]
		if want := "apache/kafka:" + testkit.KafkaVersion; !ok || kafka.Image != want {
			t.Errorf("job %s: the scratch cluster's image %q, want %s (the Kafka the tests run)", name, kafka.Image, want)
		}
		if !slices.Contains(kafka.Ports, "9092:9092") {
			t.Errorf("job %s: the scratch cluster does not publish 9092 (configs/drill.yaml's target)", name)
		}
		for _, s := range job.Steps {
			if strings.Contains(s.Run, "kafkastreams-dr drill") {
				if drill != nil {
					t.Errorf("more than one drill step")
				}
				if drill, err = shellWords(s.Run); err != nil {
					t.Fatal(err)
				}
				if s.ContinueOnError {
					t.Errorf("the drill step has continue-on-error: a failed drill would not fail the job")
				}
			}
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
				junitUpload, _ = s.With["path"].(string)
				if !strings.Contains(s.If, "always()") && !strings.Contains(s.If, "!cancelled()") && !strings.Contains(s.If, "failure()") {
					t.Errorf("the upload step runs only when the drill passed (if: %q): the report of a failed drill matters most", s.If)
				}
			}
		}
	}
	if drill == nil {
		t.Fatal("drill.yml runs no kafkastreams-dr drill")
	}
	if drill[0] != "kafkastreams-dr" {
		t.Fatalf("drill step %q: want one kafkastreams-dr command", drill)
	}
	checkCommandLine(t, "drill.yml", drill[1:])
	flag := func(args []string, name string) string {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	if junit := flag(drill, "--junit"); junit == "" || junit != junitUpload {
		t.Errorf("the drill writes --junit %q, the workflow uploads %q", junit, junitUpload)
	}

	// make drill: the same command, the binary being the only difference.
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", "-s", "-n", "-C", root, "drill", "KDR=kafkastreams-dr").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n drill: %v\n%s", err, out)
	}
	mk, err := shellWords(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mk, drill) {
		t.Errorf("make drill runs\n  %s\nthe workflow runs\n  %s", strings.Join(mk, " "), strings.Join(drill, " "))
	}
	out, err = exec.Command("make", "-s", "-n", "-C", root, "drill", "KDR=kafkastreams-dr", "DRILL_CONFIG=other.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-c other.yaml") {
		t.Errorf("make drill DRILL_CONFIG=other.yaml runs %q (%v), want -c other.yaml", out, err)
	}
	// The config the drill names targets the workflow's scratch cluster.
	text, err := os.ReadFile(filepath.Join(root, flag(drill, "-c")))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := parseWithEnv(t, text, flag(drill, "-c"))
	if cfg.Target == nil || !slices.Equal(cfg.Target.BootstrapServers, []string{"localhost:9092"}) {
		t.Errorf("%s: the drill target is not the workflow's scratch cluster localhost:9092", flag(drill, "-c"))
	}
}

// ---------------------------------------------------------------------
// docs/OPERATIONS.md

const operationsDoc = "../docs/OPERATIONS.md"

// fencedBlock is one fenced code block of a Markdown document, with the
// HTML comment tag just before it (<!-- policy:s3 --> -> "policy:s3").
type fencedBlock struct {
	lang, tag, text string
	line            int
}

func fencedBlocks(t *testing.T, file string) []fencedBlock {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tagRE := regexp.MustCompile(`^<!--\s*([a-z0-9:-]+)\s*-->\s*$`)
	var out []fencedBlock
	var cur *fencedBlock
	tag, indent := "", ""
	for i, l := range strings.Split(string(data), "\n") {
		// A block in a list item is indented: its fence sets the
		// indentation its lines lose.
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case cur == nil && tagRE.MatchString(trimmed):
			tag = tagRE.FindStringSubmatch(trimmed)[1]
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &fencedBlock{lang: strings.TrimPrefix(trimmed, "```"), tag: tag, line: i + 1}
			tag, indent = "", l[:len(l)-len(trimmed)]
		case cur != nil && strings.HasPrefix(trimmed, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(l, indent) + "\n"
		case strings.TrimSpace(l) != "":
			tag = ""
		}
	}
	return out
}

// exportedMetrics returns every metric family name a backup run and a
// restore run of package metrics export, with their label names, fed
// through the observers so that every vector has a child.
func exportedMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	names := map[string]map[string]bool{}
	for _, command := range []string{"backup", "restore", "drill"} {
		r := metrics.New(command)
		b := r.BackupObserver()
		b.Planned("orders", 0, 0, 10)
		b.Copied("orders", 0, 5, 500, 5)
		b.SegmentStored("orders", 0, 100, 500)
		b.Retried("fetch")
		b.PhaseDone("cut", time.Millisecond)
		ro := r.RestoreObserver()
		ro.RestoreStart("orders", 0, 10)
		ro.Restored("orders", 0, 5)
		ro.RestoreEnd("orders", 0, 10)
		ro.PhaseDone("records", time.Millisecond)
		r.SetBackupCut(time.Now())
		r.Finish(nil)
		mfs, err := r.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if names[mf.GetName()] == nil {
				names[mf.GetName()] = map[string]bool{}
			}
			for _, mm := range mf.GetMetric() {
				for _, lp := range mm.GetLabel() {
					names[mf.GetName()][lp.GetName()] = true
				}
			}
		}
	}
	return names
}

// pushLabels are the labels a Prometheus server or a Pushgateway adds to
// every pushed series (its grouping key: job, command, application_id).
var pushLabels = map[string]bool{"job": true, "instance": true, "application_id": true, "command": true}

// TestAlertRules parses the example Prometheus alerting rules of
// OPERATIONS.md and checks that every kafkastreams_dr_* metric their
// expressions use is one package metrics exports, with the labels they
// select on.
func TestAlertRules(t *testing.T) {
	exported := exportedMetrics(t)
	var rules int
	for _, b := range fencedBlocks(t, operationsDoc) {
		if b.lang != "yaml" || !strings.HasPrefix(b.text, "groups:") {
			continue
		}
		var doc struct {
			Groups []struct {
				Name  string `yaml:"name"`
				Rules []struct {
					Alert       string            `yaml:"alert"`
					Expr        string            `yaml:"expr"`
					For         string            `yaml:"for"`
					Labels      map[string]string `yaml:"labels"`
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		dec := yaml.NewDecoder(strings.NewReader(b.text))
		dec.KnownFields(true)
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s:%d: the alerting rules do not parse: %v", operationsDoc, b.line, err)
		}
		for _, g := range doc.Groups {
			for _, r := range g.Rules {
				rules++
				if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
					t.Errorf("rule %q: want alert, expr, a severity label and a summary", r.Alert)
				}
				if r.For != "" {
					if _, err := time.ParseDuration(r.For); err != nil {
						t.Errorf("rule %s: for %q: %v", r.Alert, r.For, err)
					}
				}
				used := regexp.MustCompile(`\bkafkastreams_dr_[a-z0-9_]+`).FindAllString(r.Expr, -1)
				if len(used) == 0 {
					t.Errorf("rule %s uses no kafkastreams_dr_ metric: %s", r.Alert, r.Expr)
				}
				for _, name := range used {
					if exported[name] == nil {
						t.Errorf("rule %s uses %s, which package metrics does not export (it exports %v)", r.Alert, name, slices.Sorted(mapsKeys(exported)))
					}
				}
				for _, sel := range regexp.MustCompile(`\b(kafkastreams_dr_[a-z0-9_]+)\{([^}]*)\}`).FindAllStringSubmatch(r.Expr, -1) {
					for _, l := range regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)`).FindAllStringSubmatch(sel[2], -1) {
						if !exported[sel[1]][l[1]] && !pushLabels[l[1]] {
							t.Errorf("rule %s selects %s on label %s, which that metric does not have", r.Alert, sel[1], l[1])
						}
					}
				}
			}
		}
	}
	if rules == 0 {
		t.Fatalf("%s has no ```yaml block of Prometheus alerting rules (groups:)", operationsDoc)
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// iamPolicy is an IAM policy document; unknown fields fail the decode.
type iamPolicy struct {
	Version   string `json:"Version"`
	Statement []struct {
		Sid       string          `json:"Sid"`
		Effect    string          `json:"Effect"`
		Action    json.RawMessage `json:"Action"`
		Resource  json.RawMessage `json:"Resource"`
		Condition json.RawMessage `json:"Condition"`
	} `json:"Statement"`
}

// policyActions returns the actions of the ```json block tagged tag.
func policyActions(t *testing.T, tag string) []string {
	t.Helper()
	var actions []string
	for _, g := range policyGrants(t, tag) {
		if !slices.Contains(actions, g.action) {
			actions = append(actions, g.action)
		}
	}
	slices.Sort(actions)
	return actions
}

// grant is one action allowed on one resource by a policy.
type grant struct{ action, resource string }

// jsonStrings decodes a JSON string or list of strings.
func jsonStrings(t *testing.T, what string, raw json.RawMessage) []string {
	t.Helper()
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			t.Fatalf("%s: %s is neither a string nor a list of strings", what, raw)
		}
		list = []string{one}
	}
	return list
}

// policyGrants returns every (action, resource) pair the ```json block
// tagged tag allows.
func policyGrants(t *testing.T, tag string) []grant {
	t.Helper()
	var out []grant
	for _, s := range policyDoc(t, tag).Statement {
		for _, a := range jsonStrings(t, "statement "+s.Sid+" Action", s.Action) {
			for _, r := range jsonStrings(t, "statement "+s.Sid+" Resource", s.Resource) {
				out = append(out, grant{a, r})
			}
		}
	}
	return out
}

// policyDoc decodes and checks the ```json block tagged tag.
func policyDoc(t *testing.T, tag string) iamPolicy {
	t.Helper()
	for _, b := range fencedBlocks(t, operationsDoc) {
		if b.tag != tag {
			continue
		}
		if b.lang != "json" {
			t.Fatalf("%s:%d: the block tagged %s is not ```json", operationsDoc, b.line, tag)
		}
		dec := json.NewDecoder(strings.NewReader(b.text))
		dec.DisallowUnknownFields()
		var p iamPolicy
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("%s:%d: the %s policy does not parse: %v", operationsDoc, b.line, tag, err)
		}
		if p.Version != "2012-10-17" || len(p.Statement) == 0 {
			t.Fatalf("%s:%d: policy Version %q with %d statements", operationsDoc, b.line, p.Version, len(p.Statement))
		}
		for _, s := range p.Statement {
			if s.Effect != "Allow" {
				t.Errorf("statement %s: Effect %q", s.Sid, s.Effect)
			}
			for _, a := range jsonStrings(t, "statement "+s.Sid+" Action", s.Action) {
				if strings.Contains(a, "*") {
					t.Errorf("statement %s: wildcard action %s", s.Sid, a)
				}
			}
			if strings.Contains(string(s.Resource), `"*"`) {
				t.Errorf("statement %s: Resource * (name the bucket or the key)", s.Sid)
			}
		}
		return p
	}
	t.Fatalf("%s has no ```json block tagged <!-- %s -->", operationsDoc, tag)
	return iamPolicy{}
}

// s3Actions maps each S3 API call of storage/s3.go to the IAM action it
// needs (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html).
var s3Actions = map[string][]string{
	"HeadBucket":           {"s3:ListBucket"},
	"ListObjectsV2":        {"s3:ListBucket"},
	"GetObject":            {"s3:GetObject"},
	"HeadObject":           {"s3:GetObject"},
	"PutObject":            {"s3:PutObject"}, // also with If-None-Match
	"DeleteObject":         {"s3:DeleteObject"},
	"AbortMultipartUpload": {"s3:AbortMultipartUpload"},
	"ListMultipartUploads": {"s3:ListBucketMultipartUploads"},
	// The transfer manager: PutObject, or CreateMultipartUpload, UploadPart
	// and CompleteMultipartUpload (all s3:PutObject), aborting on failure.
	"UploadObject":            {"s3:PutObject", "s3:AbortMultipartUpload"},
	"CreateMultipartUpload":   {"s3:PutObject"},
	"UploadPart":              {"s3:PutObject"},
	"CompleteMultipartUpload": {"s3:PutObject"},
	// Object Lock (storage/s3lock.go; policy:s3-object-lock).
	"GetObjectLockConfiguration": {"s3:GetBucketObjectLockConfiguration"},
	"GetObjectRetention":         {"s3:GetObjectRetention"},
}

// objectLockActions are what storage.object_lock adds to the policies
// (policy:s3-object-lock): the preflight, prune's look at a manifest's
// retention, and PutObject and CreateMultipartUpload with
// x-amz-object-lock-* headers, which need s3:PutObjectRetention too.
var objectLockActions = []string{"s3:GetBucketObjectLockConfiguration", "s3:GetObjectRetention", "s3:PutObjectRetention"}

// TestIAMPolicy checks that the least-privilege policy of OPERATIONS.md
// lists exactly the S3 actions the S3 backend's calls need (read from
// storage/s3.go, so a new call fails this test until the policy and this
// map say what it needs), and the SSE-KMS policy the two KMS actions.
func TestIAMPolicy(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "storage", "s3*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var src []byte
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	calls := map[string]bool{}
	for _, re := range []string{`\bclient\.([A-Z]\w+)\(`, `\bs3\.New([A-Z]\w+)Paginator\(`, `\buploader\.([A-Z]\w+)\(`} {
		for _, m := range regexp.MustCompile(re).FindAllSubmatch(src, -1) {
			calls[string(m[1])] = true
		}
	}
	if len(calls) == 0 {
		t.Fatal("found no S3 calls in storage/s3.go")
	}
	need, needLock := map[string]bool{}, map[string]bool{"s3:PutObjectRetention": true}
	for c := range calls {
		as, ok := s3Actions[c]
		if !ok {
			t.Errorf("storage/s3*.go calls %s: add the IAM action it needs to s3Actions and to the policy in OPERATIONS.md", c)
		}
		for _, a := range as {
			if slices.Contains(objectLockActions, a) {
				needLock[a] = true
			} else {
				need[a] = true
			}
		}
	}
	if got, want := policyActions(t, "policy:s3-object-lock"), slices.Sorted(mapsKeys(needLock)); !slices.Equal(got, want) || !slices.Equal(want, objectLockActions) {
		t.Errorf("the Object Lock policy allows %v; storage.object_lock needs exactly %v (documented: %v)", got, want, objectLockActions)
	}
	want := slices.Sorted(mapsKeys(need))
	if got := policyActions(t, "policy:s3"); !slices.Equal(got, want) {
		t.Errorf("the S3 policy allows %v; the S3 backend's calls (%v) need exactly %v", got, slices.Sorted(mapsKeys(calls)), want)
	}
	listed := []string{"s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:ListBucket", "s3:ListBucketMultipartUploads", "s3:PutObject"}
	if !slices.Equal(want, listed) {
		t.Errorf("the S3 backend needs %v, the documented six are %v: update OPERATIONS.md's prose", want, listed)
	}
	if got, want := policyActions(t, "policy:kms"), []string{"kms:Decrypt", "kms:GenerateDataKey"}; !slices.Equal(got, want) {
		t.Errorf("the SSE-KMS policy allows %v, want %v", got, want)
	}

	// The optional role separation: each role a subset of the single
	// role's grants, together all of its actions; the backup role deletes
	// only the objects it rewrites, the restore role writes only restores/.
	single := map[grant]bool{}
	for _, g := range policyGrants(t, "policy:s3") {
		single[g] = true
	}
	// covered reports whether the single role allows action on resource
	// (its object statement names prefix/*).
	covered := func(g grant) bool {
		for sg := range single {
			if sg.action != g.action {
				continue
			}
			if p, ok := strings.CutSuffix(sg.resource, "*"); sg.resource == g.resource || (ok && strings.HasPrefix(g.resource, p)) {
				return true
			}
		}
		return false
	}
	union := map[string]bool{}
	for _, tag := range []string{"policy:s3-backup", "policy:s3-prune", "policy:s3-restore"} {
		for _, g := range policyGrants(t, tag) {
			union[g.action] = true
			if !covered(g) {
				t.Errorf("%s allows %s on %s, which the single role's policy does not", tag, g.action, g.resource)
			}
			switch {
			case tag == "policy:s3-backup" && g.action == "s3:DeleteObject":
				if !strings.HasSuffix(g.resource, "/lock") && !strings.HasSuffix(g.resource, "/backups/*/progress.json") {
					t.Errorf("the backup role deletes %s: want only the lock and backups/*/progress.json", g.resource)
				}
			case tag == "policy:s3-restore" && (g.action == "s3:DeleteObject" || g.action == "s3:PutObject"):
				if !strings.Contains(g.resource, "/restores/") {
					t.Errorf("the restore role may %s on %s: want only restores/", g.action, g.resource)
				}
			}
		}
	}
	if got := slices.Sorted(mapsKeys(union)); !slices.Equal(got, want) {
		t.Errorf("the three separate roles allow %v together, the single role %v", got, want)
	}
}

// TestOperationsPods decodes every ```yaml Pod example of OPERATIONS.md
// (the state wipe helper) strictly into the Kubernetes type and runs its
// command line through the CLI's parser.
func TestOperationsPods(t *testing.T) {
	n := 0
	for _, b := range fencedBlocks(t, operationsDoc) {
		if b.lang != "yaml" || !strings.Contains(b.text, "kind: Pod\n") {
			continue
		}
		var pod corev1.Pod
		if err := sigsyaml.UnmarshalStrict([]byte(b.text), &pod); err != nil {
			t.Fatalf("%s:%d: strict decode into a Pod: %v", operationsDoc, b.line, err)
		}
		n++
		for _, c := range pod.Spec.Containers {
			checkCommandLine(t, fmt.Sprintf("%s:%d", operationsDoc, b.line), c.Args)
		}
		psc := pod.Spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("%s:%d: the Pod does not run as non-root", operationsDoc, b.line)
		}
	}
	if n == 0 {
		t.Errorf("%s has no Pod example (the state wipe helper)", operationsDoc)
	}
}

// TestOperationsCommands checks that every kafkastreams-dr command line
// in OPERATIONS.md's sh blocks is accepted by the CLI's flag parser
// (placeholders like "$CONFIG" stand for one word). e2e's TestRunbook runs
// the runbook's commands for real.
func TestOperationsCommands(t *testing.T) {
	n := 0
	for _, b := range fencedBlocks(t, operationsDoc) {
		if b.lang != "sh" {
			continue
		}
		for i, l := range strings.Split(strings.ReplaceAll(b.text, "\\\n", " "), "\n") {
			code, _, _ := strings.Cut(l, "#")
			if !strings.HasPrefix(strings.TrimSpace(code), "kafkastreams-dr ") {
				continue
			}
			words, err := shellWords(code)
			if err != nil {
				t.Fatalf("%s:%d: %v", operationsDoc, b.line+1+i, err)
			}
			n++
			checkCommandLine(t, fmt.Sprintf("%s:%d", operationsDoc, b.line+1+i), words[1:])
		}
	}
	if n == 0 {
		t.Fatal("no kafkastreams-dr commands in OPERATIONS.md")
	}
}

// TestOperationsStorageExamples parses each ```yaml example of
// OPERATIONS.md that starts with "storage:" (the server-side encryption
// and Object Lock settings) as the storage of a minimal config, so that a
// key or value the docs show is one config.Parse accepts.
func TestOperationsStorageExamples(t *testing.T) {
	n := 0
	for _, b := range fencedBlocks(t, operationsDoc) {
		if b.lang != "yaml" || !strings.HasPrefix(b.text, "storage:\n") {
			continue
		}
		n++
		text := "application_id: order-processor\nsource:\n  bootstrap_servers: [kafka:9092]\n  topics:\n    include: [orders]\n" + b.text
		if _, err := config.Parse([]byte(text), fmt.Sprintf("%s:%d", operationsDoc, b.line)); err != nil {
			t.Errorf("%s:%d: %v", operationsDoc, b.line, err)
		}
	}
	if n < 2 {
		t.Fatalf("found %d storage examples in OPERATIONS.md, want the encryption and the Object Lock ones", n)
	}
}
