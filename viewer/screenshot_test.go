package viewer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestScreenshots writes the screenshots docs/ shows, from the test fixture, when
// SESSIONMEM_SCREENSHOTS names a directory:
//
//	SESSIONMEM_SCREENSHOTS=$PWD/docs go test ./viewer -run TestScreenshots
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("SESSIONMEM_SCREENSHOTS")
	if dir == "" {
		t.Skip("SESSIONMEM_SCREENSHOTS is not set")
	}
	svc := newService(t, t.TempDir())
	f := buildFixture(t, svc)
	if _, err := svc.Delete(t.Context(), f.evil); err != nil { // the corpus is no sight for the docs
		t.Fatal(err)
	}
	srv, _ := serve(t, svc, Options{})
	shot := func(p *tab, name string) {
		t.Helper()
		buf, err := chromedp.Run(p.b.Ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The session at its compaction, with a tool call and its result open.
	session := func(p *tab) {
		p.open("/s/" + f.main)
		p.wait(`document.querySelector(".timeline .compaction")`)
		p.run(`const c = document.querySelector(".timeline .compaction");
			let e = c; for (let i = 0; i < 4; i++) e = e.previousElementSibling || e;
			for (const d of [...e.querySelectorAll("details"), ...e.nextElementSibling.querySelectorAll("details")]) d.open = true;
			c.querySelector(".facts").open = true;
			c.querySelector(".files-box").open = true;
			e.scrollIntoView({ block: "start" }); document.querySelector(".main-pane").scrollTop += 120;
			document.querySelector(".srow[data-id='` + f.main + `']").classList.add("current");`)
	}
	p := newTab(t, srv.URL, 1280, 800)
	p.do(chromedp.EmulateViewport(1280, 800))
	session(p)
	shot(p, "viewer-session.png")
	p.open("/search?query=exponential+backoff&working_dir=/home/dev/upload")
	p.wait(`document.querySelectorAll(".hits .hit").length > 3`)
	shot(p, "viewer-search.png")

	d := newTab(t, srv.URL, 1280, 800)
	d.do(chromedp.EmulateViewport(1280, 800))
	if _, err := chromedp.Call(d.b.Ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	session(d)
	shot(d, "viewer-dark.png")

	m := newTab(t, srv.URL, 1280, 800)
	m.do(chromedp.EmulateViewport(390, 760, chromedp.EmulateMobile))
	m.open("/s/" + f.main)
	m.wait(`document.querySelector(".timeline .entry")`)
	m.run(`document.querySelector(".main-pane").scrollTop = document.querySelector(".main-pane").scrollHeight - 1900`)
	shot(m, "viewer-phone.png")
}
