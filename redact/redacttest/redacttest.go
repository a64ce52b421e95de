// Package redacttest generates fake secrets of every kind package redact knows, planted in
// the text a real secret arrives in (an env line, a command, a header, a config file), for
// tests anywhere in sessionmem: the redactor's own, the memory gate's, and end-to-end tests
// that plant them in every field through MCP, import and compaction.
//
// Secrets are random per seed and assembled at run time, so no file of the repository holds
// a secret-shaped literal that a secret scanner would flag.
//
// Imports: the standard library only.
package redacttest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Character sets of generated secrets.
const (
	Alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	UpperD  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0234567"
	URLSafe = Alnum + "_-"
	B64     = Alnum + "+/"
	Hex     = "0123456789abcdef"
)

// Rand returns n random characters of set, with a letter first and a digit second (when set
// has both) so that shape checks (letters and digits) always pass.
func Rand(rng *rand.Rand, set string, n int) string {
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
	if n >= 2 && len(letters) > 0 && len(digits) > 0 {
		b[0], b[1] = letters[rng.IntN(len(letters))], digits[rng.IntN(len(digits))]
	}
	return string(b)
}

// Kind is one kind of secret and the forms it is written in.
type Kind struct {
	// Name describes the kind (for test names and messages).
	Name string
	// Plant returns a text holding a fresh secret of this kind, and the secret itself: the
	// part that must never survive redaction. The text is one line unless the form needs
	// more (PEM blocks, netrc, <private> spans).
	Plant func(rng *rand.Rand) (text, secret string)
}

func pick(rng *rand.Rand, xs ...string) string { return xs[rng.IntN(len(xs))] }

// Kinds lists every kind, with the forms each is planted in chosen at random per call.
var Kinds = []Kind{
	{"openai-project-key", func(rng *rand.Rand) (string, string) {
		s := "sk-proj-" + Rand(rng, URLSafe, 40+rng.IntN(120))
		return s, s
	}},
	{"openai-key-env", func(rng *rand.Rand) (string, string) {
		s := "sk-" + Rand(rng, Alnum, 48)
		return "OPENAI_API_KEY=" + s, s
	}},
	{"anthropic-key", func(rng *rand.Rand) (string, string) {
		s := "sk-ant-api03-" + Rand(rng, URLSafe, 93)
		return s, s
	}},
	{"aws-access-key-id", func(rng *rand.Rand) (string, string) {
		s := pick(rng, "AKIA", "ASIA") + Rand(rng, UpperD, 16)
		return s, s
	}},
	{"aws-secret-assignment", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, B64, 40)
		return pick(rng, "aws_secret_access_key = ", "AWS_SECRET_ACCESS_KEY=", `"SecretAccessKey": "`) + s + `"`, s
	}},
	{"aws-cli-configure-set", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, B64, 40)
		return "aws configure set aws_secret_access_key " + s + pick(rng, "", " --profile prod"), s
	}},
	{"github-token", func(rng *rand.Rand) (string, string) {
		s := pick(rng, "ghp_", "gho_", "ghu_", "ghs_", "ghr_") + Rand(rng, Alnum, 36)
		return s, s
	}},
	{"github-pat", func(rng *rand.Rand) (string, string) {
		s := "github_pat_" + Rand(rng, Alnum+"_", 82)
		return s, s
	}},
	{"gh-auth-with-token", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 40)
		return pick(rng, "echo "+s+" | gh auth login --with-token", "gh auth login --with-token <<< '"+s+"'"), s
	}},
	{"gitlab-token", func(rng *rand.Rand) (string, string) {
		s := "glpat-" + Rand(rng, URLSafe, 20)
		return s, s
	}},
	{"slack-token", func(rng *rand.Rand) (string, string) {
		s := "xoxb-" + Rand(rng, Alnum+"-", 50)
		return s, s
	}},
	{"stripe-key", func(rng *rand.Rand) (string, string) {
		s := pick(rng, "sk_live_", "rk_live_") + Rand(rng, Alnum, 24+rng.IntN(80))
		return s, s
	}},
	{"google-api-key", func(rng *rand.Rand) (string, string) {
		s := "AIza" + Rand(rng, URLSafe, 35)
		return s, s
	}},
	{"huggingface-token", func(rng *rand.Rand) (string, string) {
		s := "hf_" + Rand(rng, Alnum, 34)
		return s, s
	}},
	{"mem0-key", func(rng *rand.Rand) (string, string) {
		s := "m0-" + Rand(rng, URLSafe, 40)
		return s, s
	}},
	{"npm-token", func(rng *rand.Rand) (string, string) {
		s := "npm_" + Rand(rng, Alnum, 36)
		return s, s
	}},
	{"npm-config-set", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, URLSafe, 36)
		return "npm config set //registry.npmjs.org/:_authToken " + s, s
	}},
	{"jwt", func(rng *rand.Rand) (string, string) {
		s := "eyJ" + Rand(rng, URLSafe, 30) + ".eyJ" + Rand(rng, URLSafe, 60) + "." + Rand(rng, URLSafe, 43)
		return s, s
	}},
	{"authorization-header", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum+"._-", 32)
		return pick(rng, "Authorization: Bearer ", "authorization: basic ", "Bearer ") + s, s
	}},
	{"pem-private-key", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, B64, 64) + "\n" + Rand(rng, B64, 64)
		return "-----BEGIN EC PRIVATE KEY-----\n" + s + "\n-----END EC PRIVATE KEY-----", s
	}},
	{"password-assignment", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum+"!#%^*", 12+rng.IntN(20))
		return pick(rng, "DB_PASSWORD=", "password: ", `"password": "`, "export API_TOKEN=", "client_secret=", `passwd='`) + s + `'`, s
	}},
	{"url-credentials", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 16)
		return "postgres://admin:" + s + "@db.internal:5432/app", s
	}},
	{"private-span", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 20)
		return "<private>my key is " + s + "\nand more</private>", s
	}},
	{"password-flag", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 20)
		return "mysql --password " + s + " -h db", s
	}},
	{"docker-login", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 8+rng.IntN(16))
		return pick(rng, "docker login -u deploy -p "+s+" registry.example.com", "docker login --password="+s+" ghcr.io",
			"echo "+s+" | docker login -u me --password-stdin"), s
	}},
	{"curl-user", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 8+rng.IntN(16))
		return pick(rng, "curl -u admin:"+s+" https://api.example.com/v1", "curl -s --user 'ci:"+s+"' https://x.example.com"), s
	}},
	{"query-string-key", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, URLSafe, 32)
		return pick(rng, "https://api.example.com/v2/data?api_key=", "https://maps.example.com/embed?q=x&key=",
			"https://svc.example.com/cb?code=1&token=", "https://b.s3.amazonaws.com/o?X-Amz-Signature=") + s + "&x=1", s
	}},
	{"env-file-line", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 32)
		return pick(rng, "APP_KEY=base64:", "SECRET_KEY_BASE=", "export DB_PASS=", "JWT_SIGNING_KEY=") + s, s
	}},
	{"netrc", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 8+rng.IntN(24))
		return pick(rng, "machine api.example.com login me@example.com password "+s,
			"machine git.example.com\n  login bot\n  password "+s+"\n"), s
	}},
	{"heroku-auth-token", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Hex, 8) + "-" + Rand(rng, Hex, 4) + "-" + Rand(rng, Hex, 4) + "-" + Rand(rng, Hex, 4) + "-" + Rand(rng, Hex, 12)
		return "$ heroku auth:token\n" + s + "\n", s
	}},
	{"json-api-key-escaped", func(rng *rand.Rand) (string, string) {
		s := Rand(rng, Alnum, 30)
		return `{\"api_key\":\"` + s + `\"}`, s
	}},
}

// Secret is one planted secret: the kind, the text carrying it and the secret.
type Secret struct {
	Kind, Text, Secret string
}

// Plant returns one secret of every kind, generated from seed.
func Plant(seed uint64) []Secret {
	out := make([]Secret, len(Kinds))
	for i, k := range Kinds {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		text, secret := k.Plant(rng)
		out[i] = Secret{Kind: k.Name, Text: text, Secret: secret}
	}
	return out
}

// Leaks returns a description of every planted secret found in b ("" for none).
func Leaks(b []byte, secrets []Secret) string {
	var out []string
	s := string(b)
	for _, x := range secrets {
		if strings.Contains(s, x.Secret) {
			out = append(out, fmt.Sprintf("%s (%.12s…)", x.Kind, x.Secret))
		}
	}
	return strings.Join(out, ", ")
}
