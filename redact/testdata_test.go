package redact

import (
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/redact/redacttest"
)

// The corpus of both sides lives in the repository's top-level testdata/redact, shared with
// other packages' tests.
const corpusFiles = "../testdata/redact/"

// TestLookalikes: git SHAs, UUIDs, lock-file and go.sum checksums, npm integrity strings,
// docker digests, base64 images, paths, and command lines that name a secret without holding
// one all come back byte for byte.
func TestLookalikes(t *testing.T) {
	b, err := os.ReadFile(corpusFiles + "lookalikes.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := mustNew(t)
	in := string(b)
	if out := r.String(in); out != in {
		inL, outL := strings.Split(in, "\n"), strings.Split(out, "\n")
		for i := range min(len(inL), len(outL)) {
			if inL[i] != outL[i] {
				t.Fatalf("false positive at lookalikes.txt:%d\n in: %.300q\nout: %.300q", i+1, inL[i], outL[i])
			}
		}
		t.Fatal("lookalikes.txt changed")
	}
	// Line by line too: a line's context differs from the whole file's.
	for i, l := range strings.Split(in, "\n") {
		if out := r.String(l); out != l {
			t.Errorf("false positive at lookalikes.txt:%d\n in: %.300q\nout: %.300q", i+1, l, out)
		}
	}
}

var placeholderRE = regexp.MustCompile(`\{\{(alnum|b64|hex|urlsafe):(\d+)\}\}`)

// TestSecretForms: every secret in testdata/redact/secrets.txt is removed, alone and with
// the whole file around it, and redaction is idempotent.
func TestSecretForms(t *testing.T) {
	b, err := os.ReadFile(corpusFiles + "secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]string{"alnum": redacttest.Alnum, "b64": redacttest.B64, "hex": redacttest.Hex, "urlsafe": redacttest.URLSafe}
	r := mustNew(t)
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 12))
		var secrets []string
		text := placeholderRE.ReplaceAllStringFunc(string(b), func(m string) string {
			p := placeholderRE.FindStringSubmatch(m)
			n, _ := strconv.Atoi(p[2])
			v := redacttest.Rand(rng, sets[p[1]], n)
			secrets = append(secrets, v)
			return v
		})
		whole := r.String(text)
		if again := r.String(whole); again != whole {
			t.Fatalf("seed %d: not idempotent", seed)
		}
		for _, block := range strings.Split(text, "\n\n") {
			out := r.String(block)
			for _, sec := range secrets {
				if !strings.Contains(block, sec) {
					continue
				}
				if strings.Contains(out, sec) {
					t.Errorf("seed %d: secret %q survived in block\n%s\n--- out:\n%s", seed, sec, block, out)
				}
				if strings.Contains(whole, sec) {
					t.Errorf("seed %d: secret %q survived in the whole file, block\n%s", seed, sec, block)
				}
			}
		}
	}
}
