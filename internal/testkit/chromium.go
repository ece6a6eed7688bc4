package testkit

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ChromiumTimeout bounds one run of the browser.
const ChromiumTimeout = 90 * time.Second

const chromiumHint = "install Debian's chromium (apt-get install chromium; .ci/system-packages does)"

// Chromium is a headless Chromium (Debian's chromium package) that loads
// local pages: the browser test of the drill's HTML report.
type Chromium struct {
	bin string
	dir string // the test's temporary directory: one profile per run
}

// NewChromium finds Chromium: $KDR_CHROMIUM, else chromium on $PATH. A
// missing Chromium skips the test, or fails it if KDR_REQUIRE_TOOLS=1.
func NewChromium(t testing.TB) *Chromium {
	t.Helper()
	return &Chromium{bin: requireTool(t, "chromium", "KDR_CHROMIUM", "", chromiumHint), dir: t.TempDir()}
}

// consoleLine is how Chromium's --enable-logging=stderr writes a message of
// a page's console (console.log, an uncaught error, a Content-Security-Policy
// violation): "[pid:tid:time:INFO:CONSOLE:12] "message", source: URL (12)".
var consoleLine = regexp.MustCompile(`:CONSOLE[:(]`)

// Page is what Chromium made of a page once loaded.
type Page struct {
	// DOM is the document after load (--dump-dom), serialised as HTML.
	DOM string
	// Console are the lines of its console, one per message: an uncaught
	// script error, a resource the page's policy refused, console.log.
	Console []string
}

// Load loads the local file in headless Chromium and returns its DOM after
// load and its console messages. It fails the test when Chromium fails or
// outlasts ChromiumTimeout.
func (c *Chromium) Load(t testing.TB, file string) Page {
	t.Helper()
	stdout, stderr := c.run(t, "--dump-dom", fileURL(t, file))
	p := Page{DOM: stdout}
	for l := range strings.Lines(stderr) {
		if consoleLine.MatchString(l) {
			p.Console = append(p.Console, strings.TrimSpace(l))
		}
	}
	return p
}

// Screenshot loads the local file in a window of width x height CSS pixels
// and writes what it shows to png.
func (c *Chromium) Screenshot(t testing.TB, file, png string, width, height int) {
	t.Helper()
	c.run(t, "--hide-scrollbars", fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+png, fileURL(t, file))
}

func (c *Chromium) run(t testing.TB, args ...string) (stdout, stderr string) {
	t.Helper()
	profile, err := os.MkdirTemp(c.dir, "profile-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ChromiumTimeout)
	defer cancel()
	// --no-sandbox: CI runs as root, where Chromium's sandbox refuses to
	// start. The pages are the tests' own local files.
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-sync", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, c.bin, append(base, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("still running after %v", ChromiumTimeout)
		}
		t.Fatalf("%s %s: %v\nstderr:\n%s", c.bin, strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String()
}

func fileURL(t testing.TB, file string) string {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.ToSlash(abs)
}

// Colours decodes the PNG file and returns how many distinct colours it
// has, counting to at most 64: 1 is a blank page.
func Colours(t testing.TB, file string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", file, err)
	}
	seen := map[color.RGBA64]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y && len(seen) < 64; y++ {
		for x := b.Min.X; x < b.Max.X && len(seen) < 64; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[color.RGBA64{uint16(r), uint16(g), uint16(bl), uint16(a)}] = true
		}
	}
	return len(seen)
}
