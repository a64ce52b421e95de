package viewer

import (
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserTheme: the page's colours follow the system's scheme, an MCP host's theme
// (data-theme) overrides it either way, and a host's own colour variables win over both.
func TestBrowserTheme(t *testing.T) {
	svc := newService(t, t.TempDir())
	buildFixture(t, svc)
	srv, _ := serve(t, svc, Options{})
	const light, dark = "rgb(251, 251, 252)", "rgb(21, 23, 26)"
	tests := []struct {
		system, theme, hostBg string
		want                  string
	}{
		{"light", "", "", light},
		{"dark", "", "", dark},
		{"dark", "light", "", light},
		{"light", "dark", "", dark},
		{"dark", "", "#102030", "rgb(16, 32, 48)"},
	}
	p := newTab(t, srv.URL, 1024, 700)
	p.open("/")
	p.wait(`document.querySelectorAll(".srow").length > 0`)
	for _, tt := range tests {
		if _, err := chromedp.Call(p.b.Ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: tt.system}}}); err != nil {
			t.Fatal(err)
		}
		p.run(`const r = document.documentElement;
			if ("` + tt.theme + `") r.dataset.theme = "` + tt.theme + `"; else delete r.dataset.theme;
			if ("` + tt.hostBg + `") r.style.setProperty("--color-background-primary", "` + tt.hostBg + `");
			else r.style.removeProperty("--color-background-primary");`)
		if got := evalIn[string](p, `getComputedStyle(document.body).backgroundColor`); got != tt.want {
			t.Errorf("system %s, theme %q, host background %q: body background %s, want %s", tt.system, tt.theme, tt.hostBg, got, tt.want)
		}
	}
	p.clean()
}
