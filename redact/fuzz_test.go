package redact

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/redact/redacttest"
)

// plant returns a text holding a freshly generated secret of one kind, and the secret itself
// (the part that must never survive redaction).
func plant(rng *rand.Rand, kind int) (text, secret string) {
	return redacttest.Kinds[kind%len(redacttest.Kinds)].Plant(rng)
}

var separators = []string{" ", "\n", "\t", ", ", " (", "\n\n"}

// FuzzString plants a generated secret of every kind inside arbitrary text and checks that it
// never survives, that redaction is idempotent, and that the text around it is kept.
func FuzzString(f *testing.F) {
	f.Add("", "", uint64(1), uint8(0))
	f.Add("some code: x := 1", "tail text", uint64(7), uint8(3))
	f.Add("password", "=", uint64(9), uint8(17))
	f.Add("<private>", "</private>", uint64(2), uint8(19))
	f.Add("Authorization: Bearer", "sk-", uint64(5), uint8(15))
	r := mustNew(f)
	f.Fuzz(func(t *testing.T, before, after string, seed uint64, kind uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(kind)))
		text, secret := plant(rng, int(kind))
		if strings.Contains(before, secret) || strings.Contains(after, secret) {
			t.Skip("fuzzer reproduced the secret")
		}
		in := before + separators[rng.IntN(len(separators))] + text + separators[rng.IntN(len(separators))] + after
		out := r.String(in)
		if strings.Contains(out, secret) {
			t.Fatalf("secret survived:\n in: %q\nout: %q", in, out)
		}
		if again := r.String(out); again != out {
			t.Fatalf("not idempotent:\nonce:  %q\ntwice: %q", out, again)
		}
	})
}

// TestPlantedSecrets runs every generated kind many times in fixed surroundings (the fuzz
// target's body, deterministic, part of the normal test run).
func TestPlantedSecrets(t *testing.T) {
	r := mustNew(t)
	surround := [][2]string{
		{"", ""},
		{"Here is the config:", "Let me know."},
		{`{"role":"user","content":"`, `"}`},
		{"func f() {\n\tx := 1", "}\n"},
	}
	for kind := range len(redacttest.Kinds) {
		for i := range 50 {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(kind)))
			text, secret := plant(rng, kind)
			sur := surround[i%len(surround)]
			in := sur[0] + " " + text + "\n" + sur[1]
			out := r.String(in)
			if strings.Contains(out, secret) {
				t.Fatalf("kind %d (%s): secret survived:\n in: %q\nout: %q", kind, redacttest.Kinds[kind].Name, in, out)
			}
			if !strings.Contains(out, Marker) {
				t.Fatalf("kind %d: no marker in %q", kind, out)
			}
			if again := r.String(out); again != out {
				t.Fatalf("kind %d: not idempotent: %q then %q", kind, out, again)
			}
		}
	}
}
