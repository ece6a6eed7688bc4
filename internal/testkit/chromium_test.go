package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChromiumSeesConsoleMessagesAndBlankPages: the browser checks of the
// drill's HTML report rely on Load reporting a page's console messages and
// on Colours telling a blank screenshot; both must bite. A page whose
// policy blocks an inline script and an external image has their two
// messages; a blank page's screenshot has one colour.
func TestChromiumSeesConsoleMessagesAndBlankPages(t *testing.T) {
	c := NewChromium(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(bad, []byte(`<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'">`+
		`</head><body><p id="p">text</p><img src="http://127.0.0.1:9/x.png"><script>document.title = "ran"</script></body></html>`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := c.Load(t, bad)
	if len(p.Console) != 2 || !strings.Contains(p.Console[0], "Content Security Policy") || !strings.Contains(p.DOM, `<p id="p">text</p>`) {
		t.Errorf("console %q, want the blocked image and script; DOM:\n%s", p.Console, p.DOM)
	}
	blank := filepath.Join(dir, "blank.html")
	if err := os.WriteFile(blank, []byte(`<!DOCTYPE html><html><body style="background:#fff"></body></html>`), 0o600); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "blank.png")
	c.Screenshot(t, blank, png, 400, 300)
	if n := Colours(t, png); n != 1 {
		t.Errorf("a blank page's screenshot has %d colours, want 1", n)
	}
}
