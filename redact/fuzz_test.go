package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upperD  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0234567"
	urlSafe = alnum + "_-"
	b64     = alnum + "+/"
)

// randFrom returns n random characters of set, with a letter first and a digit second so that
// shape checks (letters and digits) always pass.
func randFrom(rng *rand.Rand, set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[rng.IntN(len(set))]
	}
	var letters, digits []byte
	for i := 0; i < len(set); i++ {
		switch c := set[i]; {
		case '0' <= c && c <= '9':
			digits = append(digits, c)
		case 'a' <= c|0x20 && c|0x20 <= 'z':
			letters = append(letters, c)
		}
	}
	if n >= 2 {
		b[0], b[1] = letters[rng.IntN(len(letters))], digits[rng.IntN(len(digits))]
	}
	return string(b)
}

// plant returns a text holding a freshly generated secret of one kind, and the secret itself
// (the part that must never survive redaction).
func plant(rng *rand.Rand, kind int) (text, secret string) {
	switch kind % 22 {
	case 0:
		s := "sk-proj-" + randFrom(rng, urlSafe, 40+rng.IntN(120))
		return s, s
	case 1:
		s := "sk-" + randFrom(rng, alnum, 48)
		return "OPENAI_API_KEY=" + s, s
	case 2:
		s := "sk-ant-api03-" + randFrom(rng, urlSafe, 93)
		return s, s
	case 3:
		s := []string{"AKIA", "ASIA"}[rng.IntN(2)] + randFrom(rng, upperD, 16)
		return s, s
	case 4:
		s := randFrom(rng, b64, 40)
		return []string{"aws_secret_access_key = ", "AWS_SECRET_ACCESS_KEY=", `"SecretAccessKey": "`}[rng.IntN(3)] + s + `"`, s
	case 5:
		s := []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}[rng.IntN(5)] + randFrom(rng, alnum, 36)
		return s, s
	case 6:
		s := "github_pat_" + randFrom(rng, alnum+"_", 82)
		return s, s
	case 7:
		s := "glpat-" + randFrom(rng, urlSafe, 20)
		return s, s
	case 8:
		s := "xoxb-" + randFrom(rng, alnum+"-", 50)
		return s, s
	case 9:
		s := []string{"sk_live_", "rk_live_"}[rng.IntN(2)] + randFrom(rng, alnum, 24+rng.IntN(80))
		return s, s
	case 10:
		s := "AIza" + randFrom(rng, urlSafe, 35)
		return s, s
	case 11:
		s := "hf_" + randFrom(rng, alnum, 34)
		return s, s
	case 12:
		s := "m0-" + randFrom(rng, urlSafe, 40)
		return s, s
	case 13:
		s := "npm_" + randFrom(rng, alnum, 36)
		return s, s
	case 14:
		s := "eyJ" + randFrom(rng, urlSafe, 30) + ".eyJ" + randFrom(rng, urlSafe, 60) + "." + randFrom(rng, urlSafe, 43)
		return s, s
	case 15:
		s := randFrom(rng, alnum+"._-", 32)
		return []string{"Authorization: Bearer ", "authorization: basic ", "Bearer "}[rng.IntN(3)] + s, s
	case 16:
		s := randFrom(rng, b64, 64) + "\n" + randFrom(rng, b64, 64)
		return "-----BEGIN EC PRIVATE KEY-----\n" + s + "\n-----END EC PRIVATE KEY-----", s
	case 17:
		s := randFrom(rng, alnum+"!#%^*", 12+rng.IntN(20))
		return []string{"DB_PASSWORD=", "password: ", `"password": "`, "export API_TOKEN=", "client_secret=", `passwd='`}[rng.IntN(6)] + s + `'`, s
	case 18:
		s := randFrom(rng, alnum, 16)
		return "postgres://admin:" + s + "@db.internal:5432/app", s
	case 19:
		s := randFrom(rng, alnum, 20)
		return "<private>my key is " + s + "\nand more</private>", s
	case 20:
		s := randFrom(rng, alnum, 20)
		return "mysql --password " + s + " -h db", s
	default:
		s := randFrom(rng, alnum, 30)
		return `{\"api_key\":\"` + s + `\"}`, s
	}
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
	for kind := range 22 {
		for i := range 50 {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(kind)))
			text, secret := plant(rng, kind)
			sur := surround[i%len(surround)]
			in := sur[0] + " " + text + "\n" + sur[1]
			out := r.String(in)
			if strings.Contains(out, secret) {
				t.Fatalf("kind %d: secret survived:\n in: %q\nout: %q", kind, in, out)
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
