package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browser finds a Chromium or Chrome binary, "" when there is none.
func browser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestReportInBrowser loads the HTML report (a failing case, error cases,
// the precision table) from file:// in headless Chromium and checks what a
// reader sees: no console errors or exceptions, every plot drawn with a
// non-zero size, every case listed, every internal link resolving, and a
// link into a collapsed case opening it. It saves a screenshot of the
// first screen as out/report-first-screen.png (repository root, gitignored).
func TestReportInBrowser(t *testing.T) {
	bin := browser()
	if bin == "" {
		t.Skip("no Chromium or Chrome on PATH (Debian: apt-get install chromium); the HTML report is not browser-tested here")
	}
	dir := t.TempDir()
	cs := htmlCases(t)
	paths, err := htmlReport(t, cs).WriteFiles(dir, []string{"html"})
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// A guard against a hang, not a speed check: warm, the test takes 2 s,
	// but inside a cold `make test` on a 2-core machine Chromium's first
	// start took 14–31 s, and a guard of 30 s failed the run.
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	var (
		mu          sync.Mutex
		consoleErrs []string
	)
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if t := string(e.Type); t == "error" || t == "assert" {
				consoleErrs = append(consoleErrs, t)
			}
		case *runtime.EventExceptionThrown:
			consoleErrs = append(consoleErrs, e.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatalf("chromium (%s): %v", bin, err)
	}
	url := "file://" + filepath.ToSlash(paths[0])
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("chromium (%s) on %s: %v", bin, url, err)
	}
	screenshot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	eval := func(dst any, js string) {
		t.Helper()
		var err error
		switch d := dst.(type) {
		case *[]map[string]float64:
			*d, err = chromedp.Run(ctx, chromedp.Evaluate[[]map[string]float64](js))
		case *[]string:
			*d, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
		case *int:
			*d, err = chromedp.Run(ctx, chromedp.Evaluate[int](js))
		case *bool:
			*d, err = chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		}
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
	}
	var (
		plots           []map[string]float64
		caseIDs, broken []string
		figures         []string
		nLinks          int
		opened, escaped bool
	)
	eval(&plots, `[...document.querySelectorAll("figure svg")].map(s => { const r = s.getBoundingClientRect(); return {w: r.width, h: r.height}; })`)
	eval(&figures, `[...document.querySelectorAll("figure[id]")].filter(f => { const r = f.querySelector("svg").getBoundingClientRect(); return r.width > 0 && r.height > 0; }).map(f => f.id)`)
	eval(&caseIDs, `[...document.querySelectorAll("details.case > summary > b")].map(b => b.textContent)`)
	eval(&broken, `[...document.querySelectorAll("a[href^='#']")].map(a => a.getAttribute("href").slice(1)).filter(id => !document.getElementById(decodeURIComponent(id)))`)
	eval(&nLinks, `document.querySelectorAll("a[href^='#']").length`)
	eval(&escaped, `document.querySelectorAll("script").length === 1`)
	eval(&opened, `(() => { const a = document.querySelector("table.matrix a"); a.click(); const d = document.getElementById(a.getAttribute("href").slice(1)); return d.tagName === "DETAILS" && d.open; })()`)
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrs) > 0 {
		t.Errorf("console errors: %v", consoleErrs)
	}
	if len(plots) < 3+len(modelPlots) {
		t.Errorf("%d plots drawn, want ≥ %d (precision RMSE, ulps, cycles, attention quality, decoding)", len(plots), 3+len(modelPlots))
	}
	for _, id := range modelPlots {
		if !slices.Contains(figures, id) {
			t.Errorf("figure %q is missing or drawn with zero size (drawn: %q)", id, figures)
		}
	}
	for i, p := range plots {
		if p["w"] <= 0 || p["h"] <= 0 {
			t.Errorf("plot %d has size %v×%v", i, p["w"], p["h"])
		}
	}
	listed := strings.Join(caseIDs, "\n") + "\n"
	for _, c := range cs {
		if !strings.Contains(listed, c.ID+"\n") {
			t.Errorf("case %q is not listed", c.ID)
		}
	}
	if nLinks < len(cs) || len(broken) > 0 {
		t.Errorf("%d internal links, broken: %q", nLinks, broken)
	}
	if !opened {
		t.Error("following a matrix link does not open the collapsed case")
	}
	if !escaped {
		t.Error("markup in a case ID or error reached the page as markup")
	}
	out := filepath.Join("..", "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "report-first-screen.png"), screenshot, 0o644); err != nil {
		t.Fatal(err)
	}
}
